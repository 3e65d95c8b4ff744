"""Floor benchmark (issue #27): 1,000 agent sockets open on one host, and what the CRM, the engine
and the health probe see meanwhile.

    make bench            (runs this after bench/service_bench.py and bench/claim_bench.py)

The shipped serving model: the HTTP pool (deploy/gunicorn.conf.py, 2 gthread workers) and the
socket pool (GUNICORN_POOL=sockets, its defaults: 1 gevent worker, WS_MAX_SOCKETS 2000) behind the
shipped nginx site, as a browser reaches them. Two phases, back to back in the same minutes:
with no socket open, then with SOCKETS panels open (python-websockets, one asyncio thread).

- Requests: /healthz, a 1-lead push and a predictive engine claim, each at RATE per second for
  SECONDS (wrk, bench/floor.lua, latency measured in C on the client), all three at once, so the
  floor is busy; p50 and p99 per kind.
- Events (with sockets open only): for EVENTS agents in turn, a progressive claim and
  POST /engine/call-connected through nginx; the latency is from the call-connected answer to that
  agent's `dialer.missed_activities` frame naming the lead, on its own socket.
- Memory: resident memory of the socket pool's workers with none and with SOCKETS open, per 100.
- The per-host figures of the sizing (docs/operations/sizing.md) for 10,000 agents (issue #38), with the sockets open
  and nothing else running for IDLE_SECONDS: the statements the socket host sends the database per
  second (MariaDB's Questions counter; outbox polls and heartbeats), the CPU its worker uses, and
  how many sockets a second it took when they all opened at once.

Targets: /healthz, push and claim p99 < 50 ms with the sockets open (issue #27); event p50 < 100 ms
and p99 < 250 ms (issue #38). Prints a table and writes bench-results-floor.json.
"""

import asyncio
import json
import os
import platform
import random
import sys
import threading
import time
from datetime import datetime
from pathlib import Path
from types import SimpleNamespace

import requests
import websockets

from common import bench_database, gunicorn, wait_until_idle, worker_rss_mb, wrk
from dialerapi.web import agent_tokens
from dialerapi.plumbing.db import connect
from dialerapi.sides.agent.socket import POLL_SECONDS

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from conftest import start_nginx  # noqa: E402 (the tests' private nginx with the shipped site)

DB_NAME = "dialerapi_bench_floor"
SECRET = "bench-secret-0123456789"
ENGINE_SECRET = "bench-engine-secret-9876543210"
SOCKETS = int(os.environ.get("BENCH_SOCKETS", 1000))
SECONDS = int(os.environ.get("BENCH_FLOOR_SECONDS", 15))
RATE = 20
EVENTS = 100
FIRST_AGENT = 10000
LEADS = 100_000
IDLE_SECONDS = 20
TARGET_P99_MS, TARGET_EVENT_P50_MS, TARGET_EVENT_P99_MS = 50, 100, 250


def fresh_floor(url):
    """SOCKETS + EVENTS agents dialing home_loan, idle on AMI, and LEADS due home_loan leads."""
    conn = connect(url, io_timeout=600)
    with conn.cursor() as cur:
        for table in ("sales_pending_actions", "sales_missed_activities", "sales_call_attempts",
                      "sales_agent_skills", "sales_agents", "dialerapi_outbox", "dialerapi_engine_replies",
                      "dialerapi_socket_hosts"):
            cur.execute(f"DELETE FROM {table}")
        cur.execute("TRUNCATE sales_master")
        cur.execute("INSERT INTO sales_master (oli_id, data_id, phone_number, client_name, form_type, priority_id,"
                    " dial_status, call_count, isReserved, created_at, updated_at)"
                    " SELECT CONCAT('L-', LPAD(seq, 6, '0')), UUID(), CONCAT('9198', LPAD(seq, 8, '0')),"
                    f" CONCAT('Lead ', seq), 'home_loan', 2, 'Pending', 0, 0, NOW(), NOW() FROM seq_0_to_{LEADS - 1}")
        cur.execute(f"INSERT INTO sales_agents (id, extension, name, ami_idle) SELECT {FIRST_AGENT} + seq,"
                    f" CONCAT('6', LPAD(seq, 4, '0')), CONCAT('Agent ', seq), 1 FROM seq_0_to_{SOCKETS + EVENTS - 1}")
        cur.execute("INSERT INTO sales_agent_skills (agent_id, form_type) SELECT id, 'home_loan' FROM sales_agents")
    conn.commit()
    conn.close()


def panels_active(url, active):
    conn = connect(url)
    with conn.cursor() as cur:
        cur.execute("UPDATE sales_agents SET panel_active = %s", (int(active),))
    conn.commit()
    conn.close()


class Floor:
    """Agent panels held open by one asyncio thread; records when each agent's frames arrive."""

    def __init__(self, url, agent_ids):
        self.frames = {}  # agent_id -> [(monotonic seconds, message)]
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        self._sockets = []

        async def open_all():
            return await asyncio.gather(*(self._panel(url, agent_id) for agent_id in agent_ids))

        started = time.monotonic()
        self._sockets = asyncio.run_coroutine_threadsafe(open_all(), self._loop).result(300)
        self.opened_seconds = time.monotonic() - started

    async def _panel(self, url, agent_id):
        # As a browser's panel connects (issue #28): the agent's token in the URL, the page's Origin.
        token, _ = agent_tokens.mint({"WS_SECRET": SECRET, "AGENT_TOKEN_SECONDS": 43200}, agent_id)
        ws = await websockets.connect(f"{url}/ws?token={token}", origin=url.replace("ws://", "http://"),
                                      open_timeout=120, ping_interval=None, max_queue=None)
        frames = self.frames.setdefault(agent_id, [])
        for _ in range(2):  # the state on connect
            frames.append((time.monotonic(), json.loads(await ws.recv())))
        self._loop.create_task(self._read(ws, frames))
        return ws

    @staticmethod
    async def _read(ws, frames):
        try:
            async for raw in ws:
                frames.append((time.monotonic(), json.loads(raw)))
        except websockets.ConnectionClosed:
            pass

    def with_state(self):
        """Agents whose two state events arrived on connect."""
        return sum(1 for frames in self.frames.values()
                   if [m["event"] for _, m in frames[:2]] == ["dialer.outbound_blocked", "dialer.missed_activities"])

    def arrival(self, agent_id, oli_id, after, timeout=10):
        """When agent_id's socket got a missed_activities frame naming oli_id, at or after `after`."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for at, message in list(self.frames.get(agent_id, ())):
                if at >= after and message["event"] == "dialer.missed_activities" and \
                        any(item["oli_id"] == oli_id for item in message["data"]["items"]):
                    return at
            time.sleep(0.005)
        return None

    def close(self):
        async def close_all():
            await asyncio.gather(*(ws.close() for ws in self._sockets), return_exceptions=True)
        asyncio.run_coroutine_threadsafe(close_all(), self._loop).result(120)
        self._loop.call_soon_threadsafe(self._loop.stop)


def requests_at_rate(base, run):
    """/healthz, 1-lead pushes and predictive claims at RATE/s each, all at once for SECONDS."""
    reports, threads = {}, []
    for endpoint in ("healthz", "push", "claim"):
        def one(endpoint=endpoint):
            reports[endpoint] = wrk("floor.lua", base, SECONDS, BENCH_RATE=RATE, BENCH_ENDPOINT=endpoint,
                                    BENCH_RUN=f"{run}{endpoint}", WS_SECRET=SECRET, ENGINE_SECRET=ENGINE_SECRET)
        threads.append(threading.Thread(target=one))
        threads[-1].start()
    for thread in threads:
        thread.join()
    if len(reports) != 3:
        sys.exit(f"a wrk run failed: only {sorted(reports)} reported")
    return {endpoint: {k: report[k] for k in ("requests", "rate_per_s", "status_errors", "p50_ms", "p99_ms")}
            for endpoint, report in reports.items()}


def event_latencies(base, floor):
    """call-connected answered -> the agent's missed_activities frame, for EVENTS agents, in ms.

    The gap between events is drawn across a whole outbox poll period (seeded): a fixed gap after each
    frame would fire every event at the same phase of the poll and hide the worst case."""
    engine = {"X-API-Key": ENGINE_SECRET}
    gaps = random.Random(27)
    latencies = []
    for n in range(EVENTS):
        agent_id = FIRST_AGENT + n
        claim = requests.post(f"{base}/engine/claim", headers=engine, timeout=10, json={
            "mode": "progressive", "agent_id": agent_id, "request_id": f"event-claim-{n}"}).json()
        oli_id = claim["lead"]["oli_id"]
        requests.post(f"{base}/engine/call-connected", headers=engine, timeout=10, json={
            "oli_id": oli_id, "agent_id": agent_id, "request_id": f"event-connected-{n}"}).raise_for_status()
        answered = time.monotonic()
        arrived = floor.arrival(agent_id, oli_id, answered - 1)
        latencies.append(None if arrived is None else max(0.0, (arrived - answered) * 1000))
        time.sleep(gaps.uniform(0.05, 0.05 + POLL_SECONDS))
    return latencies


def questions(url):
    """MariaDB's count of statements received since it started (every client's)."""
    conn = connect(url)
    with conn.cursor() as cur:
        cur.execute("SHOW GLOBAL STATUS LIKE 'Questions'")
        count = int(cur.fetchone()["Value"])
    conn.close()
    return count


def cpu_seconds(master_pid):
    """User plus system CPU seconds of the workers of gunicorn `master_pid` so far."""
    total = 0
    for pid in open(f"/proc/{master_pid}/task/{master_pid}/children").read().split():
        fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def idle_host(url, sockets_pid):
    """What the service costs with nothing happening, over IDLE_SECONDS: statements per second at
    the database (this bench's own two reads excluded) and the socket pool's CPU share. Measured
    before the socket pool's first socket (its outbox thread starts then) and with its sockets
    open, the difference is the socket host's own."""
    wait_until_idle(url)
    before, cpu_before, started = questions(url), cpu_seconds(sockets_pid), time.monotonic()
    time.sleep(IDLE_SECONDS)
    elapsed = time.monotonic() - started
    statements = questions(url) - before - 1
    return {"seconds": round(elapsed, 1), "db_statements_per_s": round(statements / elapsed, 1),
            "cpu_percent": round(100 * (cpu_seconds(sockets_pid) - cpu_before) / elapsed, 1)}


def percentile(values, fraction):
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(fraction * len(ordered)))], 1)


def main():
    url = bench_database(DB_NAME)
    fresh_floor(url)
    settings = {"DATABASE_URL": url, "WS_SECRET": SECRET, "ENGINE_SECRET": ENGINE_SECRET, "TRUSTED_PROXY_COUNT": "1"}
    port = 19000 + os.getpid() % 400
    workdir = Path(f"/tmp/dialerapi-bench-floor-{os.getpid()}")
    workdir.mkdir(exist_ok=True)
    with gunicorn("wsgi:app", port, **settings) as (http, _), \
            gunicorn("wsgi:app", port + 1, workers=1, GUNICORN_POOL="sockets", **settings) as (sockets, sockets_pid):
        nginx = start_nginx(SimpleNamespace(base_url=http), workdir, sockets=SimpleNamespace(base_url=sockets))
        base = f"http://127.0.0.1:{nginx.port}"
        try:
            rss_before = worker_rss_mb(sockets_pid)
            # The same claims with no socket here: the agents' panels count as active (on another host).
            panels_active(url, True)
            quiet = requests_at_rate(base, "quiet")
            wait_until_idle(url)
            panels_active(url, False)
            idle_before = idle_host(url, sockets_pid)
            floor = Floor(base.replace("http://", "ws://"), range(FIRST_AGENT + EVENTS, FIRST_AGENT + EVENTS + SOCKETS))
            events_floor = Floor(base.replace("http://", "ws://"), range(FIRST_AGENT, FIRST_AGENT + EVENTS))
            with_state = floor.with_state() + events_floor.with_state()
            rss_open = worker_rss_mb(sockets_pid)
            idle = idle_host(url, sockets_pid)
            busy = {}
            loader = threading.Thread(target=lambda: busy.update(requests_at_rate(base, "busy")))
            loader.start()
            latencies = event_latencies(base, events_floor)
            loader.join()
            events_floor.close()
            floor.close()
        finally:
            nginx.stop()

    delivered = [value for value in latencies if value is not None]
    per_100 = round((sum(rss_open) - sum(rss_before)) / ((SOCKETS + EVENTS) / 100), 1)
    result = {
        "date": datetime.now().isoformat(timespec="seconds"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
                   "wrk, the Python socket client, nginx, both gunicorn pools and MariaDB on the same cores",
        "sockets": SOCKETS + EVENTS, "sockets_with_state": with_state, "seconds_to_open": round(floor.opened_seconds, 1),
        "rate_per_endpoint": RATE, "seconds": SECONDS,
        "no_sockets": quiet, "sockets_open": busy,
        "events": {"sent": len(latencies), "delivered": len(delivered), "p50_ms": percentile(delivered, 0.5),
                   "p99_ms": percentile(delivered, 0.99), "max_ms": round(max(delivered), 1)},
        "socket_pool_rss_mb": {"none_open": rss_before, "open": rss_open, "per_100_sockets": per_100},
        "idle_socket_host": {
            "sockets": SOCKETS + EVENTS, "seconds": idle["seconds"],
            "db_statements_per_s": {"no_socket_yet": idle_before["db_statements_per_s"],
                                    "sockets_open": idle["db_statements_per_s"],
                                    "socket_host": round(idle["db_statements_per_s"] - idle_before["db_statements_per_s"], 1)},
            "worker_cpu_percent": idle["cpu_percent"], "sockets_opened_per_s": round(SOCKETS / floor.opened_seconds)},
    }
    result["target_met"] = (all(busy[k]["p99_ms"] < TARGET_P99_MS and not busy[k]["status_errors"] for k in busy)
                            and result["events"]["p50_ms"] < TARGET_EVENT_P50_MS
                            and result["events"]["p99_ms"] < TARGET_EVENT_P99_MS and len(delivered) == len(latencies)
                            and with_state == SOCKETS + EVENTS)
    print(f"\nfloor benchmark ({result['machine']})")
    print(f"{SOCKETS + EVENTS} sockets through nginx: {with_state} got their state events on connect,"
          f" all opened in {result['seconds_to_open']} s")
    print(f"{'request at ' + str(RATE) + '/s each':28} {'no sockets p50/p99 ms':>24} {'sockets open p50/p99 ms':>26}")
    for endpoint in ("healthz", "push", "claim"):
        print(f"{endpoint:28} {quiet[endpoint]['p50_ms']:>11} / {quiet[endpoint]['p99_ms']:<10}"
              f" {busy[endpoint]['p50_ms']:>12} / {busy[endpoint]['p99_ms']:<10}"
              f" errors {quiet[endpoint]['status_errors']}/{busy[endpoint]['status_errors']}")
    events = result["events"]
    print(f"event call-connected -> agent's frame: {events['delivered']}/{events['sent']} delivered,"
          f" p50 {events['p50_ms']} ms, p99 {events['p99_ms']} ms, max {events['max_ms']} ms")
    print(f"socket pool RSS: {rss_before} MB with none open, {rss_open} MB with {SOCKETS + EVENTS} open:"
          f" {per_100} MB per 100 sockets")
    idle = result["idle_socket_host"]
    print(f"socket host idle with {idle['sockets']} sockets for {idle['seconds']} s:"
          f" {idle['db_statements_per_s']['socket_host']} database statements/s of its own"
          f" ({idle['db_statements_per_s']['sockets_open']} in all, {idle['db_statements_per_s']['no_socket_yet']}"
          f" before its first socket), worker CPU {idle['worker_cpu_percent']}%;"
          f" sockets opened at {idle['sockets_opened_per_s']}/s")
    print(f"targets (p99 < {TARGET_P99_MS} ms, event p50 < {TARGET_EVENT_P50_MS} ms and p99 < {TARGET_EVENT_P99_MS} ms):"
          f" {'met' if result['target_met'] else 'NOT met'}")
    Path("bench-results-floor.json").write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
