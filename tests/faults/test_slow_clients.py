"""No client holds up another (issue #64 item 1), on the socket pool as deploy/gunicorn.conf.py runs
it (gevent): a floor of 8,000 agents (a board snapshot of about 2.4 MB) with boards that read their
snapshot and then never read again.

Before issue #64 the outbox thread wrote every board update itself: once such a board's window was
full it waited without end, and no panel on that host heard of anything more. Here 16 agents'
panels time their events (a missed activity filed, then cleared, by another process) while 500
agents change at a time: first with one board that reads, then with three more that stop reading (two after their snapshot,
one after the first bytes of it), once the board that reads has been sent more than their buffers hold.
Every event still arrives, at the p99 of the first phase (within 2x or 0.5 s: the machine's noise); the three are
closed as `too_slow` (counted in /health), the reading board stays open, and /health says the
host's fan-out keeps up. The figures are printed.

Built on lead-intake-api.md "Agent socket" and decisions.md D9.
"""

import json
import socket
import statistics
import threading
import time

import pytest
import requests
from wsclient import Client

from conftest import MONITOR_SECRET, SECRET, SUPERVISOR_SECRET, TZ, start_gunicorn
from dialerapi.plumbing import clock
from dialerapi.plumbing.db import get_db
from dialerapi.rules.agents import roster, state_history

# Serial: the two phases' latencies are compared, so nothing else may share the machine's cores
# with one of them (in the parallel run a simulation beside the second phase alone failed it in CI).
pytestmark = [pytest.mark.faults, pytest.mark.serial]
AGENTS = 8000
FIRST = 10000
PANELS = 16
ROUNDS = 3
CHURN_BLOCK = 100
EVENT_SECONDS = 10
STALLED_BOARDS = 3
# What the board that reads must get after the others stalled before the panels are timed: more
# than a stalled board's socket buffers and WS_SEND_QUEUE_BYTES hold, so the stall has happened.
FILL_BYTES = 8 << 20


@pytest.fixture
def socket_host(database_url, tmp_path):
    server = start_gunicorn(database_url, tmp_path / "gunicorn.log", workers=1, pool="sockets")
    yield server
    server.stop()


def add_floor(sql):
    sql("INSERT INTO sales_agents (id, extension, name, panel_active, ami_idle)"
        f" SELECT {FIRST} + seq, 60000 + seq, CONCAT('Agent ', seq), 1, 0 FROM seq_0_to_{AGENTS - 1}")
    sql(f"INSERT INTO sales_agent_skills (agent_id, form_type) SELECT {FIRST} + seq, 'home_loan' FROM seq_0_to_{AGENTS - 1}")


class Churn:
    """Another process's changes to the floor: 500 agents' AMI state flipped per transaction, each
    recorded in the agent state history the boards are fed from, until `stop()`."""

    def __init__(self, app):
        self.app = app
        self.changes = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _flip(self, conn, first):
        ids = list(range(first, first + CHURN_BLOCK))
        with conn.cursor() as cur:
            cur.execute("UPDATE sales_agents SET ami_idle = 1 - ami_idle WHERE id BETWEEN %s AND %s", (ids[0], ids[-1]))
        state_history.record(conn, ids)

    def _run(self):
        first = FIRST + PANELS
        with self.app.app_context():
            while not self._stop.is_set():
                get_db().run(self._flip, first)
                self.changes += CHURN_BLOCK
                first = first + CHURN_BLOCK if first + 2 * CHURN_BLOCK < FIRST + AGENTS else FIRST + PANELS
                self._stop.wait(0.2)

    def stop(self):
        self._stop.set()
        self._thread.join(30)


class ReadingBoard:
    """A board that reads every frame, in a thread of its own."""

    def __init__(self, ws_url):
        self.client = Client.connect(ws_url, headers={"X-API-Key": SUPERVISOR_SECRET}, max_size=None)
        self.frames = 0
        self.bytes = 0
        self.closed = None
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self):
        try:
            while True:
                text = self.client.receive(timeout=60)
                if text is not None:
                    self.frames += 1
                    self.bytes += len(text)
        except Exception as exc:  # noqa: BLE001 - recorded: the test asserts it never closed
            self.closed = exc


def stalled_board(port, ws_url):
    """A board that reads its snapshot and then nothing more: a small receive buffer and a client
    that holds one frame, so once its window is full the server can send it nothing."""
    raw = socket.socket()
    raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    raw.connect(("127.0.0.1", port))
    client = Client.connect(ws_url, headers={"X-API-Key": SUPERVISOR_SECRET}, sock=raw, max_size=None, max_queue=1)
    snapshot = json.loads(client.receive(timeout=60))
    assert snapshot["event"] == "board.snapshot" and len(snapshot["data"]["agents"]) >= AGENTS
    return client


def silent_board(port):
    """A board that opens the socket and reads nothing of its snapshot: it returns once the first
    bytes of the snapshot's frame have come in (the server has read and encoded it, so the timed
    phase holds no join; a join's cost is issue #64 item 4's), and reads nothing more."""
    raw = socket.socket()
    raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    raw.connect(("127.0.0.1", port))
    raw.sendall((f"GET /board/ws HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
                 "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                 f"Sec-WebSocket-Version: 13\r\nX-API-Key: {SUPERVISOR_SECRET}\r\n\r\n").encode())
    raw.settimeout(60)
    head = b""
    while b"\r\n\r\n" not in head:
        head += raw.recv(1)
    assert head.startswith(b"HTTP/1.1 101"), head
    assert raw.recv(1), "the snapshot's frame never began"
    return raw


def until(client, predicate):
    deadline = time.monotonic() + EVENT_SECONDS
    while time.monotonic() < deadline:
        raw = client.receive(timeout=max(0.01, deadline - time.monotonic()))
        if raw is not None and predicate(json.loads(raw)):
            return
    pytest.fail(f"a panel's event did not arrive within {EVENT_SECONDS} s")


def panel_latencies(app, panels, rounds=ROUNDS):
    """Seconds from each commit to its panel's frame: a missed activity filed, then cleared, for
    every panel, `rounds` times."""
    seconds = []
    with app.app_context():
        for _ in range(rounds):
            for n, (agent_id, client) in enumerate(panels):
                now = clock.now(TZ)
                get_db().run(roster.open_missed_activity, f"OLI-P{n}", agent_id, now, TZ)
                started = time.monotonic()
                until(client, lambda m: m["event"] == "dialer.missed_activities" and m["data"]["items"])
                seconds.append(time.monotonic() - started)
                get_db().run(roster.clear_for_lead, f"OLI-P{n}", "callback", now, TZ)
                started = time.monotonic()
                until(client, lambda m: m["event"] == "dialer.missed_activities" and not m["data"]["items"])
                seconds.append(time.monotonic() - started)
    return seconds


def p99(values):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]


def health(server):
    return requests.get(server.url("/health"), headers={"X-API-Key": MONITOR_SECRET}, timeout=10).json()


def test_boards_that_never_read_do_not_hold_up_the_panels_of_their_host(socket_host, app, sql, new_lead, make_live):
    add_floor(sql)
    for n in range(PANELS):
        new_lead(f"OLI-P{n}")
        make_live(f"OLI-P{n}")  # on a call with the panel's agent, who files no outcome
    port = int(socket_host.base_url.rsplit(":", 1)[1])
    ws_base = socket_host.base_url.replace("http://", "ws://")
    panels = []
    for n in range(PANELS):
        client = Client.connect(f"{ws_base}/ws?agentId={FIRST + n}", headers={"X-API-Key": SECRET})
        for _ in range(3):  # the state on connect
            client.receive(timeout=EVENT_SECONDS)
        panels.append((FIRST + n, client))
    reading = ReadingBoard(f"{ws_base}/board/ws")
    churn = Churn(app)
    try:
        usual = panel_latencies(app, panels)
        stalled = [stalled_board(port, f"{ws_base}/board/ws") for _ in range(STALLED_BOARDS - 1)]
        silent = silent_board(port)
        frames_before, bytes_before = reading.frames, reading.bytes
        # The panels are timed from the moment the boards stall until the board that reads has been
        # sent more than the stalled ones' buffers hold, and at least four times as often as before:
        # a p99 of 384 events or more is not moved by a burst of two or three (CI once had three
        # events over 1 s in the first round, on a machine busy with something else).
        deadline = time.monotonic() + 180
        with_stalled = []
        while reading.bytes - bytes_before < FILL_BYTES or len(with_stalled) < 4 * len(usual):
            assert reading.closed is None and time.monotonic() < deadline, (
                f"the board that reads got {reading.bytes - bytes_before} bytes in 180 s: the fan-out "
                "waits on the boards that do not read")
            with_stalled += panel_latencies(app, panels, rounds=1)
        deadline = time.monotonic() + 60
        while health(socket_host)["metrics"]["agent_sockets"]["too_slow"] < STALLED_BOARDS:
            assert time.monotonic() < deadline, "the boards that never read were not closed as too_slow"
            time.sleep(0.5)
        changes = churn.changes
    finally:
        churn.stop()
    answer = health(socket_host)
    print(f"\npanel events: usual ({len(usual)}) p50 {statistics.median(usual) * 1000:.0f} ms "
          f"p99 {p99(usual) * 1000:.0f} ms; with {STALLED_BOARDS} boards that never read ({len(with_stalled)}) p50 "
          f"{statistics.median(with_stalled) * 1000:.0f} ms p99 {p99(with_stalled) * 1000:.0f} ms; "
          f"{changes} agent changes; the reading board got {reading.frames} frames")
    slowest = sorted(range(len(with_stalled)), key=with_stalled.__getitem__)[-4:]
    print("the slowest with them (round, event, ms): " + ", ".join(
        f"({n // (2 * PANELS)}, {n % (2 * PANELS)}, {with_stalled[n] * 1000:.0f})" for n in slowest))
    assert p99(with_stalled) <= max(2 * p99(usual), p99(usual) + 0.5)
    assert reading.closed is None and reading.frames > frames_before, "the board that reads was served throughout"
    assert answer["checks"]["agent_sockets"]["ok"], answer["checks"]["agent_sockets"]
    silent.close()
    for client in stalled + [reading.client] + [client for _, client in panels]:
        client.connection.close_timeout = 1
        try:
            client.close()
        except Exception:  # noqa: BLE001 - a stalled board's connection was cut by the server
            pass
