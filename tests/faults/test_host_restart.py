"""A floor across two hosts (issue #38, items 2, 3 and 6): both hosts' pools behind the shipped nginx
(deploy/nginx/dialerapi.conf with both in its upstreams), 2,000 agent panels spread across them
(then 800, see LEAVING), and one host restarted with SIGTERM (as `systemctl restart` sends it)
while the CRM pushes 500-lead batches, the engine claims and settles and the CRM files callbacks
through nginx.

The promises: no request fails (no 5xx, none unanswered); every panel of the stopped host gets
close 1012 (never 1008, never a dropped connection) and is back on the other host within 10 s of
it, through panel.js's own backoff (the reference panel itself in headless Chromium for a few
agents, tests/faults/floor_hosts.Panels, which reconnects as it does, for the rest); the first
state it gets there is fresh (a change made to its agent during the move is in it); the other
host still refuses past its capacity; /health shows the draining host; and afterwards every pushed
lead is stored once and no lead was on two calls at once.
"""

import threading
import time

import pytest
import requests
import websockets.sync.client

from conftest import mint_token, start_nginx
from floor_hosts import AUTH, Host, Load, Panels, file_missed_activity, floor, late_or_stale, leads_once, moved
from test_panel_browser import activity_rows, attribute

# Serial (setup.cfg `serial`): it holds hosts that restart under a load of its own to zero failed
# requests; beside the other fault tests' load on 2 cores, a host starved of CPU reset a connection
# (a 502 on a claim, 2026-11-27), so it runs alone after the parallel run.
pytestmark = [pytest.mark.faults, pytest.mark.serial]

PANELS = 2000
BROWSER_PANELS = 4  # of PANELS, the agents after the Python client's, as tabs of one Chromium
# Panels whose agents log off before the restart. Here both hosts, nginx, MariaDB, the load, the
# panels' client and Chromium share two cores, and a socket connect costs its host 4 to 10 ms of
# CPU (bench/floor_bench.py measures the rate): a host taking 600 at once took up to 11 s on a
# slow day, too near the promise to test it, so the restart moves the 400 or so of 800.
LEAVING = 1200
STAYING = PANELS - LEAVING
FIRST_AGENT = 20000
BACK_WITHIN_SECONDS = 10
# Each host holds all 2,000 spread over both; after the move the host left is filled to it by
# agents logging back on (RETURNING) and refuses one more.
CAPACITY = 1200
RETURNING = CAPACITY - STAYING


class BrowserPanels:
    """The reference panel (/panel/ through nginx, with each agent's token) in tabs of headless
    Chromium; `watch` records, per tab, when it stopped being open and when it was open again."""

    def __init__(self, browser, base, agent_ids):
        self.browser = browser
        self.tabs = {}
        for n, agent_id in enumerate(agent_ids):
            if n:
                browser.switch_to.new_window("tab")
            browser.get(f"{base}/panel/#token={mint_token(base, agent_id)}")
            self.tabs[browser.current_window_handle] = agent_id
        self.closed, self.back = {}, {}

    def states(self):
        states = {}
        for handle in self.tabs:
            self.browser.switch_to.window(handle)
            states[handle] = attribute(self.browser, "connection", "data-state")
        return states

    def wait_open(self, timeout):
        deadline = time.monotonic() + timeout
        while set(self.states().values()) != {"open"}:
            assert time.monotonic() < deadline, f"the browser panels did not open: {self.states()}"
            time.sleep(0.2)

    def watch(self, seconds):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            for handle, state in self.states().items():
                now = time.monotonic()
                if state != "open" and handle not in self.closed:
                    self.closed[handle] = now
                elif state == "open" and handle in self.closed and handle not in self.back:
                    self.back[handle] = now
            time.sleep(0.5)  # the browser shares the cores with both hosts: a light watch

    def activities(self, handle):
        self.browser.switch_to.window(handle)
        return activity_rows(self.browser)

    def close(self):
        for handle in list(self.tabs)[1:]:
            self.browser.switch_to.window(handle)
            self.browser.close()
        self.browser.switch_to.window(list(self.tabs)[0])
        self.browser.get("about:blank")


@pytest.fixture
def two_hosts(database_url, sql, tmp_path):
    floor(sql, PANELS, FIRST_AGENT)
    t0 = time.monotonic()
    hosts = [Host(name, database_url, tmp_path, t0, WS_MAX_SOCKETS=str(CAPACITY)) for name in ("a", "b")]
    nginx = start_nginx([host.http for host in hosts], tmp_path, sockets=[host.sockets for host in hosts])
    try:
        yield hosts, nginx
    finally:
        nginx.stop()
        for host in hosts:
            host.kill()


def spread_once(sql, hosts, total_is, timeout=15):
    """{host name: open sockets} from the hosts' heartbeats (each host writes one every 5 s), as soon
    as their total satisfies `total_is`, or as they stand after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        spread = {host.name: (host.heartbeat(sql) or {}).get("open_sockets", 0) for host in hosts}
        if total_is(sum(spread.values())) or time.monotonic() > deadline:
            return spread
        time.sleep(0.2)


def attempts_since(panels, since, agent_ids):
    """Each agent's connections since `since`: (seconds from `since` to its start or None for an
    attempt refused before the handshake, seconds to its close, close code, frames), for a failure's
    message."""
    def offset(moment):
        return None if moment is None else round(moment - since, 2)
    return {agent_id: [(offset(r["opened"]), offset(r["closed"]), r["code"], len(r["frames"]))
                       for r in panels.connections[agent_id] if (r["closed"] or since) >= since]
            for agent_id in agent_ids}


def test_a_host_restarted_under_load_fails_no_request_and_every_panel_is_back_within_10_s(
        two_hosts, sql, browser):
    (a, b), nginx = two_hosts
    base = f"http://127.0.0.1:{nginx.port}"
    clients = PANELS - BROWSER_PANELS
    panels = Panels(base.replace("http://", "ws://"), range(FIRST_AGENT, FIRST_AGENT + clients))
    tabs = load = returning = None
    try:
        assert panels.wait_open(clients, 120), f"{panels.open_count()} of {clients} panels opened"
        tabs = BrowserPanels(browser, base, range(FIRST_AGENT + clients, FIRST_AGENT + PANELS))
        tabs.wait_open(20)
        # Item 2: nginx spreads the panels over both hosts.
        spread = spread_once(sql, (a, b), lambda total: total == PANELS)
        assert sum(spread.values()) == PANELS and min(spread.values()) > PANELS // 4, spread
        panels.leave(range(FIRST_AGENT, FIRST_AGENT + LEAVING))
        spread = spread_once(sql, (a, b), lambda total: total == STAYING)
        assert sum(spread.values()) == STAYING, spread
        clients = STAYING - BROWSER_PANELS

        load = Load(base, "RESTART")
        time.sleep(3)  # the load is running when the host stops
        stop_at = time.monotonic()
        stopped = {}
        stopping = threading.Thread(target=lambda: stopped.update(seconds=a.stop()))
        watching = threading.Thread(target=tabs.watch, args=(BACK_WITHIN_SECONDS + 8,))
        stopping.start()
        watching.start()
        # A change to every agent while its panel moves (panels wait at least 1 s to reconnect).
        file_missed_activity(sql, FIRST_AGENT)
        # Item 6: the stopping host says it is draining, in its heartbeat and in /health.
        deadline = time.monotonic() + 5
        while not (a.heartbeat(sql) or {}).get("draining"):
            assert time.monotonic() < deadline, f"host a never said it was draining: {a.heartbeat(sql)}"
            time.sleep(0.05)
        health = requests.get(f"{base}/health", headers=AUTH, timeout=10).json()["metrics"]["agent_sockets"]
        assert [h["draining"] for h in health["hosts"] if h["host"].endswith(f":{a.sockets_port}")] == [True]
        assert [h["draining"] for h in health["hosts"] if h["host"].endswith(f":{b.sockets_port}")] == [False]
        stopping.join(90)
        watching.join(60)
        assert panels.wait_open(clients, 30), f"{panels.open_count()} of {clients} panels back"
        time.sleep(2)
        load.stop()

        failures = load.failures()
        counts = load.counts()
        assert not failures, f"{len(failures)} failed requests: {failures[:10]}; all answers {counts}"
        assert all(set(by_status) <= {"200", "201"} for by_status in counts.values()), counts
        assert counts["push"]["201"] >= 3 and counts["settle"]["200"] >= 10 and counts["callback"]["200"] >= 3

        result = moved(panels, stop_at)
        assert len(result) + len(tabs.closed) == spread["a"], (len(result), len(tabs.closed), spread)
        # The reference panel itself: the tabs that were on host a are back, with the change.
        assert tabs.closed, "no browser panel was on host a"
        for handle, closed in tabs.closed.items():
            assert handle in tabs.back and tabs.back[handle] - closed <= BACK_WITHIN_SECONDS, (tabs.closed, tabs.back)
            assert "MOVED-1" in tabs.activities(handle)
        codes = {r[0] for r in result.values()}
        assert codes == {1012}, codes
        late, stale = late_or_stale(result, BACK_WITHIN_SECONDS)
        assert not late, (f"{len(late)} panels not back within {BACK_WITHIN_SECONDS} s: {list(late.items())[:5]};"
                          f" their attempts since the stop: {attempts_since(panels, stop_at, list(late)[:5])}")
        assert not stale, f"{len(stale)} panels got a state without the change made during the move"
        seconds = sorted(r[1] for r in result.values())
        print(f"\n{len(result)} panels moved: back in p50 {seconds[len(seconds) // 2]:.1f} s,"
              f" max {seconds[-1]:.1f} s; host a stopped in {stopped['seconds']:.1f} s; {counts}")

        leads_once(load, sql, "RESTART")
        # a marked its agents panel-inactive before closing; b marked each active again on arrival.
        assert sql.one("SELECT COUNT(*) AS n FROM sales_agents WHERE panel_active = 1 AND id >= %s",
                       FIRST_AGENT)["n"] == STAYING

        # Every panel is on b now; agents logging back on fill it, and one more is refused at once with 1013.
        returning = Panels(base.replace("http://", "ws://"), range(FIRST_AGENT, FIRST_AGENT + RETURNING))
        assert returning.wait_open(RETURNING, 60), f"{returning.open_count()} of {RETURNING} returning panels opened"
        with pytest.raises(websockets.exceptions.ConnectionClosed) as refused:
            with websockets.sync.client.connect(f"ws://127.0.0.1:{nginx.port}/ws?agentId={FIRST_AGENT + PANELS}",
                                                additional_headers=AUTH, open_timeout=10) as ws:
                assert '"at_capacity"' in ws.recv(timeout=10)
                ws.recv(timeout=10)
        assert refused.value.rcvd.code == 1013
    finally:
        if load is not None:
            load.stop()
        panels.close()
        if returning is not None:
            returning.close()
        if tabs is not None:
            tabs.close()
