"""The supervisor's credential, board and socket (issue #49).

A supervisor's key or token opens the board, its socket and the agent report and nothing else;
every other caller's credential is refused there (lead-intake-api.md "Authentication"; decisions.md
D3, D9). The socket sends a snapshot on connect and one update frame per batch of changes made by
any process (how soon is bench/board_bench.py's measure: p99 under 1 s)."""

import json
import threading
import time
from datetime import datetime

import jsonschema
import pytest
import requests
from test_sockets import frame, rejected, until
from wsclient import Client, ConnectionClosed

from conftest import ENGINE_SECRET, MONITOR_SECRET, SECRET, SUPERVISOR_SECRET, TZ, mint_token, utc_text
from dialerapi.plumbing.db import get_db
from dialerapi.rules.agents import roster
from dialerapi.rules.dialing import claims
from dialerapi.web import agent_tokens

SUPERVISOR_PATHS = {("GET", "/api/board"), ("GET", "/api/reports/agents"), ("GET", "/api/campaigns"),
                    ("GET", "/api/campaigns/home_loan"), ("GET", "/api/caller-ids")}
REPORT = "/api/reports/agents?from=2026-11-21&to=2026-11-21"
# How long a test waits for a change to reach the board: a bound on waiting for the event, not the
# issue's 1 s, which bench/board_bench.py measures (speed is never asserted in a timed test).
EVENT_SECONDS = 10


@pytest.fixture
def floor(sql):
    sql("INSERT INTO sales_agents (id, extension, name) VALUES (501, '4501', 'Kavya Iyer'), (502, '4502', 'Arun Raja')")
    sql("INSERT INTO sales_agent_skills (agent_id, form_type) VALUES (501, 'home_loan'), (502, 'home_loan'),"
        " (502, 'credit_card')")


def supervisor_token(client, name="Priya (floor 2)", **body):
    response = client.post("/api/supervisor-tokens", json={"name": name, **body}, headers={"X-API-Key": SECRET})
    assert response.status_code == 201, response.get_json()
    return response.get_json()["token"]


def every_route(app):
    """(method, path) of every route that takes a credential, with placeholders filled in."""
    for rule in app.url_map.iter_rules():
        view = app.view_functions[rule.endpoint]
        if getattr(view, "public", False):
            continue
        path = rule.rule.replace("<oli_id>", "OLI-1").replace("<path:filename>", "x").replace(
            "<path:form_type>", "home_loan")
        for method in rule.methods - {"HEAD", "OPTIONS"}:
            yield method, path


def test_a_supervisor_opens_the_board_and_the_report_and_nothing_else(app, client, floor):
    token = supervisor_token(client)
    routes = set(every_route(app))
    assert SUPERVISOR_PATHS <= routes
    for credential in ({"Authorization": f"Bearer {token}"}, {"X-API-Key": SUPERVISOR_SECRET}):
        for method, path in sorted(routes):
            response = client.open(REPORT if path == "/api/reports/agents" else path, method=method,
                                   headers=credential, json={} if method == "POST" else None)
            if (method, path) in SUPERVISOR_PATHS:
                assert response.status_code == 200, (path, response.get_json())
            else:
                assert (response.status_code, response.get_json()) == (403, {"ok": False, "error": "forbidden"}), path


@pytest.mark.parametrize("headers, status", [
    ({"X-API-Key": SECRET}, {"/api/board": 401, REPORT: 200}),
    ({"X-API-Key": ENGINE_SECRET}, {"/api/board": 401, REPORT: 401}),
    ({"X-API-Key": MONITOR_SECRET}, {"/api/board": 401, REPORT: 401}),
    ({}, {"/api/board": 401, REPORT: 401}),
])
def test_other_service_keys_do_not_open_the_board(client, floor, headers, status):
    for path, expected in status.items():
        assert client.get(path, headers=headers).status_code == expected, path


def test_an_agent_token_does_not_open_the_board(client, floor, app):
    with app.app_context():
        token, _ = agent_tokens.mint(app.config, 501)
    for path in ("/api/board", REPORT):
        response = client.get(path, headers={"Authorization": f"Bearer {token}"})
        assert (response.status_code, response.get_json()["error"]) == (403, "forbidden")


def test_a_supervisor_token_cannot_mint_tokens_and_expires(client, floor, frozen_clock):
    token = supervisor_token(client, lifetimeSeconds=60)
    response = client.post("/api/supervisor-tokens", json={"name": "again"}, headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 403
    frozen_clock(datetime(2026, 11, 21, 10, 1))
    response = client.get("/api/board", headers={"Authorization": f"Bearer {token}"})
    assert (response.status_code, response.get_json()) == (401, {"ok": False, "error": "unauthorized",
                                                                 "reason": "token_expired"})


@pytest.mark.parametrize("body, field", [({}, "name"), ({"name": ""}, "name"), ({"name": "x" * 65}, "name"),
                                         ({"name": "a", "lifetimeSeconds": 0}, "lifetimeSeconds"),
                                         ({"name": "a", "lifetimeSeconds": 86401}, "lifetimeSeconds"),
                                         ({"name": "a", "role": "crm"}, "role")])
def test_a_bad_token_request_is_a_400(client, body, field):
    response = client.post("/api/supervisor-tokens", json=body, headers={"X-API-Key": SECRET})
    assert response.status_code == 400 and field in json.dumps(response.get_json()["details"])


def test_the_snapshot_holds_tiles_and_rows_as_the_database_has_them(client, floor, run, frozen_clock, sql):
    frozen_clock(datetime(2026, 11, 21, 9, 0))
    run(roster.set_availability, 501, panel_active=True, ami_idle=True)
    run(roster.set_availability, 502, panel_active=True, ami_idle=False)
    frozen_clock(datetime(2026, 11, 21, 9, 30))
    run(roster.pause, 501, "lunch")
    frozen_clock(datetime(2026, 11, 21, 10, 0))
    body = client.get("/api/board", headers={"X-API-Key": SUPERVISOR_SECRET}).get_json()
    rows = {row["agent_id"]: row for row in body["agents"]}
    assert (rows[501]["state"], rows[501]["pause_code"], rows[501]["since"]) == (
        "paused", "lunch", utc_text(datetime(2026, 11, 21, 9, 30)))
    assert rows[502]["state"] == "on_call" and rows[502]["skills"] == ["credit_card", "home_loan"]
    tiles = {tile["form_type"]: tile for tile in body["floor"]["form_types"]}
    assert tiles["home_loan"]["agents"] == {"free": 0, "on_call": 1, "wrap_up": 0, "paused": 1, "outbound_blocked": 0,
                                            "panel_inactive": 0}
    assert tiles["credit_card"]["agents"]["on_call"] == 1
    assert {tile["abandons"]["level"] for tile in tiles.values()} == {"green"}


def test_the_tiles_tell_ringing_from_holding(client, floor, new_lead, make_live, open_missed_activity, sql):
    """A live call not answered rings; one answered in this reservation and not taken by an agent
    holds; one with an agent connected is neither (issue #49 item 3)."""
    for oli_id in ("RING", "HOLD", "TALK", "OLD"):
        new_lead(oli_id, form_type="credit_card")
    at = datetime(2026, 11, 21, 9, 59)
    make_live("RING", reserved_at=at)
    make_live("HOLD", reserved_at=at, call_answered_at=datetime(2026, 11, 21, 9, 59, 20))
    make_live("TALK", reserved_at=at, call_answered_at=datetime(2026, 11, 21, 9, 59, 20))
    open_missed_activity("TALK", agent_id=502, connected_at=datetime(2026, 11, 21, 9, 59, 30))
    # Answered in an earlier reservation: ringing again now.
    make_live("OLD", reserved_at=at, call_answered_at=datetime(2026, 11, 21, 9, 0))
    body = client.get("/api/board", headers={"X-API-Key": SUPERVISOR_SECRET}).get_json()
    calls = next(tile["calls"] for tile in body["floor"]["form_types"] if tile["form_type"] == "credit_card")
    assert calls == {"reserved": 4, "connected": 1, "not_connected": 3, "ringing": 2, "holding": 1}
    # Issue #66: the document's BoardResponse said neither `ringing` nor `holding`, nor `level`.
    document = client.get("/openapi.json").get_json()
    errors = list(jsonschema.Draft202012Validator({**document, "$ref": "#/components/schemas/BoardResponse"})
                  .iter_errors(body))
    assert errors == [], [error.message for error in errors]


# --- the socket, through a real gunicorn ------------------------------------------------------------

@pytest.fixture
def board(live_server, sql):
    opened = []

    def connect(query="", headers=None):
        url = live_server.base_url.replace("http://", "ws://") + "/board/ws" + (f"?{query}" if query else "")
        client = Client.connect(url, headers=headers or {})
        opened.append(client)
        return client

    yield connect
    for client in opened:
        try:
            client.close()
        except ConnectionClosed:
            pass


@pytest.mark.parametrize("query, headers, reason", [
    ("", {}, "unauthorized"),
    ("", {"X-API-Key": SECRET}, "unauthorized"),
    ("", {"X-API-Key": ENGINE_SECRET}, "unauthorized"),
    ("", {"X-API-Key": MONITOR_SECRET}, "unauthorized"),
    (f"key={SUPERVISOR_SECRET}", {}, "key_in_url"),
    (f"token={SUPERVISOR_SECRET}", {}, "key_in_url"),  # issue #66: `token=` is for tokens only
    (f"token={SECRET}", {}, "key_in_url"),
    ("token=not.a-token", {}, "invalid_token"),
    ("", {"X-API-Key": SUPERVISOR_SECRET, "Origin": "https://elsewhere.example"}, "origin_not_allowed"),
])
def test_the_board_socket_refuses_all_but_a_supervisor(board, floor, query, headers, reason):
    assert rejected(board(query, headers)) == (reason, 1008)


def test_an_agent_token_is_refused_by_the_board_socket(board, floor, live_server):
    token = mint_token(live_server.base_url, 501)
    assert rejected(board(f"token={token}")) == ("unauthorized", 1008)


def test_changes_by_other_processes_reach_the_board(board, floor, app, live_server):
    """The snapshot on connect, then a pause and 16 agents' state changes made at once by this
    process (another than the server's) each reach the board; 16 changes committed together reach it
    in one update frame."""
    with app.app_context():
        get_db().run(roster.set_availability, 501, panel_active=True, ami_idle=True)
    token = requests.post(live_server.url("/api/supervisor-tokens"), json={"name": "Priya"},
                          headers={"X-API-Key": SECRET}, timeout=10).json()["token"]
    client = board(f"token={token}")
    snapshot = frame(client)
    assert snapshot["event"] == "board.snapshot"
    rows = {row["agent_id"]: row for row in snapshot["data"]["agents"]}
    assert rows[501]["state"] == "free" and rows[502]["state"] == "panel_inactive"
    assert snapshot["data"]["settings"]["pause_alert_seconds"] == 900
    assert [tile["form_type"] for tile in snapshot["data"]["floor"]["form_types"]] == ["credit_card", "home_loan"]

    with app.app_context():
        get_db().run(roster.pause, 501, "tea")
    update = until(client, lambda m: m["event"] == "board.update" and any(
        row["agent_id"] == 501 for row in m["data"]["agents"]), timeout=EVENT_SECONDS)
    row = next(row for row in update["data"]["agents"] if row["agent_id"] == 501)
    assert (row["state"], row["pause_code"]) == ("paused", "tea")

    # 16 agents at once: every row arrives.
    for agent_id in range(601, 617):
        with app.app_context():
            get_db().run(roster.save_agent, agent_id, str(5000 + agent_id), f"Agent {agent_id}", ["home_loan"])
    barrier = threading.Barrier(16)

    def actor(agent_id):
        with app.app_context():
            barrier.wait()
            get_db().run(roster.set_availability, agent_id, panel_active=True, ami_idle=False)

    threads = [threading.Thread(target=actor, args=(agent_id,)) for agent_id in range(601, 617)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    seen = {}
    deadline = time.monotonic() + EVENT_SECONDS
    while len([a for a, s in seen.items() if s == "on_call"]) < 16 and time.monotonic() < deadline:
        message = until(client, lambda m: m["event"] == "board.update", timeout=max(0.05, deadline - time.monotonic()))
        seen.update({row["agent_id"]: row["state"] for row in message["data"]["agents"]})
    assert {agent_id: seen.get(agent_id) for agent_id in range(601, 617)} == dict.fromkeys(range(601, 617), "on_call")

    # How 16 separate commits fall into polls depends on the machine's load (CI once saw 16
    # frames); 16 changes committed together are seen by one poll and so must reach the board
    # in one frame, not one per agent.
    def free_all(conn):
        for agent_id in range(601, 617):
            roster.set_availability(conn, agent_id, ami_idle=True)

    with app.app_context():
        get_db().run(free_all)
    message = until(client, lambda m: m["event"] == "board.update" and m["data"]["agents"], timeout=EVENT_SECONDS)
    assert {row["agent_id"]: row["state"] for row in message["data"]["agents"]} == dict.fromkeys(range(601, 617), "free")


def test_a_removed_agent_leaves_the_board(board, floor, app, live_server):
    client = board("", {"X-API-Key": SUPERVISOR_SECRET})
    assert {row["agent_id"] for row in frame(client)["data"]["agents"]} == {501, 502}
    with app.app_context():
        get_db().run(roster.set_availability, 502, panel_active=True)
    # The board has seen 502's last change before the removal: the removal itself must be told
    # (CI saw a removed agent stay on the board when the poll fell between the two commits).
    until(client, lambda m: m["event"] == "board.update" and any(
        row["agent_id"] == 502 and row["state"] == "free" for row in m["data"]["agents"]), timeout=EVENT_SECONDS)
    with app.app_context():
        get_db().run(roster.remove_agent, 502, datetime(2026, 11, 21, 10, 0))
    update = until(client, lambda m: m["event"] == "board.update" and 502 in m["data"]["removed"],
                   timeout=EVENT_SECONDS)
    assert 502 not in {row["agent_id"] for row in update["data"]["agents"]}


def test_the_board_page_is_served_with_its_policy(client):
    page = client.get("/board/")
    assert page.status_code == 200 and b"board.js" in page.data
    assert "script-src" not in page.headers["Content-Security-Policy"] and "default-src 'self'" in page.headers[
        "Content-Security-Policy"]
    assert client.get("/board/board.js").status_code == 200
    assert client.get("/board/settings.py").status_code == 404
    assert client.get("/board").status_code == 308


@pytest.fixture
def capped_server(database_url, tmp_path):
    """A gunicorn of one worker (the caps count per worker process) with small board caps."""
    from conftest import start_gunicorn

    server = start_gunicorn(database_url, tmp_path / "gunicorn.log", workers=1, BOARD_MAX_PER_TOKEN="2",
                            BOARD_MAX_PER_SECRET="3")
    yield server
    server.stop()


def test_sixteen_boards_at_once_on_one_token_open_only_its_cap(floor, capped_server):
    """Issue #64: 200 boards on one supervisor token took every socket of the HTTP pool, and an agent's
    panel got `at_capacity`. 16 boards opened at once with one token: BOARD_MAX_PER_TOKEN of them get
    their snapshot, every other one `too_many_boards` with close 1013 (retry later); SUPERVISOR_SECRET
    has a cap of its own, and a closed board frees its place."""
    base = capped_server.base_url
    url = base.replace("http://", "ws://") + "/board/ws"
    token = requests.post(base + "/api/supervisor-tokens", json={"name": "Priya"}, headers={"X-API-Key": SECRET},
                          timeout=10).json()["token"]
    barrier = threading.Barrier(16)
    admitted, refused, errors = [], [], []
    lock = threading.Lock()

    def open_one():
        try:
            barrier.wait(timeout=30)
            client = Client.connect(f"{url}?token={token}")
            first = frame(client, timeout=10)
            with lock:
                (refused if first["event"] == "server_error" else admitted).append((client, first))
        except Exception as exc:  # counted below
            errors.append(exc)

    threads = [threading.Thread(target=open_one) for _ in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    servers = []
    try:
        assert errors == []
        assert [first["event"] for _, first in admitted] == ["board.snapshot"] * 2
        assert [first["data"] for _, first in refused] == [
            {"reason": "too_many_boards", "limit": 2, "retry_after": 10}] * 14
        with pytest.raises(ConnectionClosed) as closed:
            refused[0][0].receive(timeout=3)
        assert closed.value.reason == 1013
        for _ in range(3):
            servers.append(Client.connect(url, headers={"X-API-Key": SUPERVISOR_SECRET}))
            assert frame(servers[-1], timeout=10)["event"] == "board.snapshot"
        servers.append(Client.connect(url, headers={"X-API-Key": SUPERVISOR_SECRET}))
        assert rejected(servers[-1]) == ("too_many_boards", 1013)
        admitted[0][0].close()
        deadline = time.monotonic() + EVENT_SECONDS
        while True:
            servers.append(Client.connect(f"{url}?token={token}"))
            if frame(servers[-1], timeout=10)["event"] == "board.snapshot":
                break
            assert time.monotonic() < deadline, "a closed board's place was not freed"
            time.sleep(0.1)
    finally:
        for client, _ in admitted + refused:
            _close(client)
        for client in servers:
            _close(client)


def _close(client):
    try:
        client.close()
    except ConnectionClosed:
        pass


@pytest.mark.parametrize("name", [
    "P" * 64,
    "".join(chr(0x4E00 + 97 * n) for n in range(64)),  # CJK, 3 bytes each: 296 characters before issue #66
    "".join(chr(0x1F300 + 13 * n) for n in range(64)),  # outside the BMP, 4 bytes each: the longest
    '"' * 64,
])
def test_every_token_the_service_mints_opens_the_board(client, floor, name):
    """Issue #66: a 64-character CJK name got a 201 and a token every route then refused as
    `invalid_token`. A token minted for any name the request takes, at the longest lifetime, is
    accepted; the bound on a token's length is the longest such token, and one character more is
    refused before any signature work."""
    token = supervisor_token(client, name, lifetimeSeconds=86400)
    assert len(token) <= agent_tokens.MAX_TOKEN_CHARS
    assert client.get("/api/board", headers={"Authorization": f"Bearer {token}"}).status_code == 200
    padded = token + "A" * (agent_tokens.MAX_TOKEN_CHARS + 1 - len(token))
    too_long = client.get("/api/board", headers={"Authorization": f"Bearer {padded}"})
    assert too_long.status_code == 401 and too_long.get_json()["reason"] == "invalid_token"
    refused = client.post("/api/supervisor-tokens", json={"name": name + "x"}, headers={"X-API-Key": SECRET})
    assert refused.status_code == 400
    # board.md: from 1 s to AGENT_TOKEN_MAX_SECONDS (24 h), 12 h when not given.
    longer = client.post("/api/supervisor-tokens", json={"name": name, "lifetimeSeconds": 86401},
                         headers={"X-API-Key": SECRET})
    assert longer.status_code == 400


@pytest.mark.parametrize("method, path", [("GET", "/api/board"), ("GET", "/api/lead-events"), ("GET", "/healthz"),
                                          ("POST", "/engine/floor"), ("GET", "/api/pause-reasons")])
@pytest.mark.parametrize("secret", [SECRET, ENGINE_SECRET, MONITOR_SECRET, SUPERVISOR_SECRET])
def test_a_service_key_in_any_query_parameter_is_refused_on_every_route(client, method, path, secret):
    """Issue #66: keys travel in a header only (a URL is logged, kept in history, seen by proxies);
    any query parameter carrying any caller's key is refused with `key_in_url`, the right header
    or none, public routes included."""
    for query in (f"key={secret}", f"token={secret}", f"x=1&note={secret}"):
        answer = client.open(f"{path}?{query}", method=method, headers={"X-API-Key": secret}, json={})
        assert (answer.status_code, answer.get_json()) == (
            401, {"ok": False, "error": "unauthorized", "reason": "key_in_url"}), (path, query)


class RecordingSocket:
    """A board socket that keeps what it was sent (by its SendQueue's sender thread, issue #64)."""

    sock = None
    connected = True

    def __init__(self):
        self.frames = []
        self._arrived = threading.Condition()

    def send(self, text):
        with self._arrived:
            self.frames.append(json.loads(text))
            self._arrived.notify_all()

    def sent(self, count):
        """The frames, once `count` have arrived (fails after EVENT_SECONDS)."""
        with self._arrived:
            assert self._arrived.wait_for(lambda: len(self.frames) >= count, EVENT_SECONDS), self.frames
            return list(self.frames)

    def rows(self):
        """{agent_id: row} as this board has them after every frame."""
        rows = {}
        for message in self.frames:
            if message["event"] == "board.snapshot":
                rows = {row["agent_id"]: row for row in message["data"]["agents"]}
            elif message["event"] == "board.update":
                rows.update({row["agent_id"]: row for row in message["data"]["agents"]})
                for agent_id in message["data"]["removed"]:
                    rows.pop(agent_id, None)
        return rows


def test_a_board_joining_never_changes_what_another_board_was_sent(app, client, floor):
    """Issue #64 item 3: BoardFeed.join() overwrote the rows the feed diffs against with its snapshot,
    so a change the snapshot already held was never sent to the boards open before it (9 of 107
    changes missed with a board joining every 0.2 s). Here: board A open; agent 501 pauses and 502
    is removed; board B joins before the hub's poll reports them; the poll's update brings A both,
    and every board then shows what GET /api/board does."""
    from dialerapi.sides.supervisor.board import BoardFeed

    feed = BoardFeed(app)
    first, second = RecordingSocket(), RecordingSocket()
    with app.app_context():
        get_db().run(roster.set_availability, 501, panel_active=True, ami_idle=True)
        feed.join(first)
        get_db().run(roster.pause, 501, "tea")
        get_db().run(roster.set_availability, 502, panel_active=True)
        get_db().run(roster.remove_agent, 502, datetime(2026, 11, 21, 10, 0))
        feed.join(second)
        feed.changed({501, 502})
    served = client.get("/api/board", headers={"X-API-Key": SUPERVISOR_SECRET}).get_json()
    truth = {row["agent_id"]: row for row in served["agents"]}
    first.sent(2), second.sent(2)  # a snapshot and the update each
    assert first.rows() == truth, "the board open before the join"
    assert second.rows() == truth
    assert (truth[501]["state"], 502 in truth) == ("paused", False)


def test_the_boards_now_is_the_service_clock_to_the_millisecond(app, client, floor, frozen_clock):
    """Issue #64: the page sets its timers' clock from each frame's `now`; a whole-second `now` kept
    them up to a second behind and stood them still while frames came more than once a second."""
    from datetime import timedelta, timezone

    from conftest import DEFAULT_NOW, aware
    from dialerapi.sides.supervisor.board import BoardFeed

    moment = aware(DEFAULT_NOW) + timedelta(seconds=7, milliseconds=250)
    frozen_clock(moment)
    expected = moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.250Z")
    board = RecordingSocket()
    with app.app_context():
        get_db().run(roster.set_availability, 501, panel_active=True, ami_idle=True)
        feed = BoardFeed(app)
        feed.join(board)
        get_db().run(roster.pause, 501, "tea")
        feed.changed({501})
    assert [message["data"]["now"] for message in board.sent(2)] == [expected, expected]
    assert client.get("/api/board", headers={"X-API-Key": SUPERVISOR_SECRET}).get_json()["now"] == expected


def test_boards_joining_together_share_one_snapshot(app, floor):
    """Issue #64 item 4: 200 boards opened at once each read and encoded their own snapshot, one
    after another (the last waited 11.6 s). 16 boards joining while the feed is busy: the first
    snapshot read after they all asked serves them all, and each gets the same frame."""
    from dialerapi.sides.supervisor.board import BoardFeed

    feed = BoardFeed(app)
    boards = [RecordingSocket() for _ in range(16)]
    barrier, asked = threading.Barrier(16), threading.Semaphore(0)

    def join(board):
        with app.app_context():
            barrier.wait()
            asked.release()
            feed.join(board)

    with feed._lock:  # busy: an update or another board's snapshot
        threads = [threading.Thread(target=join, args=(board,)) for board in boards]
        for thread in threads:
            thread.start()
        for _ in boards:
            assert asked.acquire(timeout=EVENT_SECONDS)
    for thread in threads:
        thread.join(EVENT_SECONDS)
    snapshots = [board.sent(1)[0] for board in boards]
    assert all(snapshot == snapshots[0] for snapshot in snapshots) and snapshots[0]["event"] == "board.snapshot"
    # One read, or two when the lock was let go before the last board had quite asked.
    assert feed.snapshots_read <= 2, feed.snapshots_read
    with app.app_context():
        get_db().run(roster.pause, 501, "tea")
        feed.changed({501})
    late = RecordingSocket()
    with app.app_context():
        feed.join(late)
    assert feed.snapshots_read <= 3 and late.sent(1)[0]["data"]["agents"] != snapshots[0]["data"]["agents"], (
        "a board joining after an update reads a snapshot of its own")


def test_a_snapshot_is_not_shared_past_an_update(app, client, floor):
    """A board that asked before another's snapshot was read, but joins after an update was read,
    reads its own: the shared one lacks the update, which went only to the boards open then."""
    from dialerapi.sides.supervisor.board import BoardFeed

    feed, first, waiting = BoardFeed(app), RecordingSocket(), RecordingSocket()
    asked = threading.Event()
    with app.app_context():
        feed.join(first)

    def join():
        with app.app_context():
            asked.set()
            feed.join(waiting)

    with feed._lock:
        thread = threading.Thread(target=join)
        thread.start()
        assert asked.wait(EVENT_SECONDS)
        with app.app_context():
            feed._read_snapshot(TZ)  # another board's snapshot, read after this one asked
            get_db().run(roster.pause, 501, "tea")
            feed._pending.add(501)
            feed._send_update()  # then an update, sent to the boards open then
    thread.join(EVENT_SECONDS)
    waiting.sent(1)
    served = client.get("/api/board", headers={"X-API-Key": SUPERVISOR_SECRET}).get_json()
    assert waiting.rows() == {row["agent_id"]: row for row in served["agents"]}
    assert feed.snapshots_read == 3


def test_a_new_note_of_the_same_pause_reaches_the_board(board, floor, app):
    """Issue #64 item 3: the state history keeps the pause code, not its note, so a second `other`
    pause with a new note changed nothing the board was fed from, and the board kept the old note."""
    from dialerapi.plumbing import clock

    client = board("", {"X-API-Key": SUPERVISOR_SECRET})
    frame(client)
    with app.app_context():
        get_db().run(roster.pause, 501, "other", "bank visit", now=clock.now(TZ))
    until(client, lambda m: m["event"] == "board.update" and any(
        row["agent_id"] == 501 and row["reason_note"] == "bank visit" for row in m["data"]["agents"]),
        timeout=EVENT_SECONDS)
    with app.app_context():
        get_db().run(roster.pause, 501, "other", "parent teacher meeting", now=clock.now(TZ))
    until(client, lambda m: m["event"] == "board.update" and any(
        row["agent_id"] == 501 and row["reason_note"] == "parent teacher meeting" for row in m["data"]["agents"]),
        timeout=EVENT_SECONDS)


def test_a_ringing_call_shows_its_campaign_until_it_ends(board, floor, app, client, new_lead, sql):
    """Issue #64 item 3: a progressive claim (and a redial) names its agent, but the board showed a
    call's campaign only once an agent was connected (an open missed activity): a ringing call showed
    none. The claim is kept on the agent's row; the board shows the lead's form_type while that
    reservation is the lead's live one, and the call's end (a settle, a release) tells the board."""
    from dialerapi.plumbing import clock
    from dialerapi.rules.leads import dialstate

    def form_types():
        body = client.get("/api/board", headers={"X-API-Key": SUPERVISOR_SECRET}).get_json()
        return {row["agent_id"]: row["form_type"] for row in body["agents"]}

    def board_shows(agent_id, form_type):
        until(live, lambda m: m["event"] == "board.update" and any(
            row["agent_id"] == agent_id and row["form_type"] == form_type for row in m["data"]["agents"]),
            timeout=EVENT_SECONDS)

    new_lead("CARD-1", form_type="credit_card")
    new_lead("HOME-1", form_type="home_loan", phone_number="+91 98765 43211")
    with app.app_context():
        for agent_id in (501, 502):
            get_db().run(roster.set_availability, agent_id, panel_active=True, ami_idle=True)
    live = board("", {"X-API-Key": SUPERVISOR_SECRET})
    assert {row["agent_id"]: row["form_type"] for row in frame(live)["data"]["agents"]} == {501: None, 502: None}

    with app.app_context():
        claimed = get_db().run(claims.claim_next, 502, clock.now(TZ))
    assert claimed["oli_id"] == "CARD-1"
    board_shows(502, "credit_card")
    assert form_types() == {501: None, 502: "credit_card"}
    with app.app_context():
        get_db().run(dialstate.settle, "CARD-1", "no_answer", clock.now(TZ), tz=TZ, grace_minutes=10,
                     release_retry_ms=60000)
    board_shows(502, None)
    assert form_types() == {501: None, 502: None}

    with app.app_context():
        get_db().run(claims.claim_lead, 501, "HOME-1", clock.now(TZ))
    board_shows(501, "home_loan")
    with app.app_context():
        get_db().run(dialstate.release, "HOME-1", clock.now(TZ), tz=TZ, grace_minutes=10, release_retry_ms=60000)
    board_shows(501, None)
    assert form_types() == {501: None, 502: None}


class LiveBoard:
    """A board socket read by a thread of its own, its rows kept as the page keeps them."""

    def __init__(self, client):
        self.client = client
        self.rows = {}
        self.error = None
        self._changed = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        try:
            while True:
                raw = self.client.receive(timeout=60)
                if raw is None:
                    continue
                message = json.loads(raw)
                with self._changed:
                    if message["event"] == "board.snapshot":
                        self.rows = {row["agent_id"]: row for row in message["data"]["agents"]}
                    elif message["event"] == "board.update":
                        self.rows.update({row["agent_id"]: row for row in message["data"]["agents"]})
                        for agent_id in message["data"]["removed"]:
                            self.rows.pop(agent_id, None)
                    self._changed.notify_all()
        except Exception as exc:  # noqa: BLE001 - a closed board fails the test below
            self.error = exc

    def shows(self, truth, ignore=()):
        """Wait until the rows are `truth` but for the fields `ignore`; (True, None), or (False, what
        differs) after EVENT_SECONDS."""
        def kept(rows):
            return {agent_id: {k: v for k, v in row.items() if k not in ignore} for agent_id, row in rows.items()}

        with self._changed:
            if self._changed.wait_for(lambda: kept(self.rows) == kept(truth) or self.error, EVENT_SECONDS) \
                    and not self.error:
                return True, None
            mine, theirs = kept(self.rows), kept(truth)
            return False, {agent_id: (mine.get(agent_id), row) for agent_id, row in theirs.items()
                           if mine.get(agent_id) != row}


def test_boards_joining_during_churn_each_end_with_every_row_exact(board, floor, app, live_server, sql):
    """Issue #64 item 3: with 16 agents changing state, pause code and note from four threads and a
    board joining after every 25 changes, every board ends with exactly the rows GET /api/board
    answers once the floor is still (it used to miss changes a joining board's snapshot held), and
    each row is what the agent's history says: the state and pause code of its last row, since the
    first row of the run of rows showing the same. (The service clock stays at DEFAULT_NOW: a test
    clock running ahead of the server's puts history rows in the server's future, where today's
    figures are not yet counted; test_agent_states.py moves the clock between changes.)"""
    import random

    from dialerapi.plumbing import clock

    agent_ids = list(range(601, 617))
    with app.app_context():
        for agent_id in agent_ids:
            get_db().run(roster.save_agent, agent_id, str(5000 + agent_id), f"Agent {agent_id}", ["home_loan"])
    boards = [LiveBoard(board("", {"X-API-Key": SUPERVISOR_SECRET}))]
    changes, stop, lock = [0], threading.Event(), threading.Lock()
    joins = threading.Semaphore(0)

    def churn(seed):
        chooser = random.Random(seed)
        with app.app_context():
            while not stop.is_set():
                agent_id = chooser.choice(agent_ids)
                kind = chooser.randrange(4)
                if kind == 0:
                    get_db().run(roster.set_availability, agent_id, panel_active=True, ami_idle=chooser.random() < 0.5)
                elif kind == 1:
                    get_db().run(roster.pause, agent_id, chooser.choice(["tea", "lunch"]))
                elif kind == 2:
                    get_db().run(roster.pause, agent_id, "other", chooser.choice(["bank", "school run", "doctor"]),
                                 now=clock.now(TZ))
                else:
                    get_db().run(roster.resume, agent_id)
                with lock:
                    changes[0] += 1
                    if changes[0] % 25 == 0:
                        joins.release()

    threads = [threading.Thread(target=churn, args=(seed,)) for seed in range(4)]
    for thread in threads:
        thread.start()
    try:
        for _ in range(8):
            assert joins.acquire(timeout=EVENT_SECONDS), "the churn stopped"
            boards.append(LiveBoard(board("", {"X-API-Key": SUPERVISOR_SECRET})))
    finally:
        stop.set()
        for thread in threads:
            thread.join(EVENT_SECONDS)
    truth = {row["agent_id"]: row for row in requests.get(
        live_server.url("/api/board"), headers={"X-API-Key": SUPERVISOR_SECRET}, timeout=10).json()["agents"]}
    for n, live in enumerate(boards):
        # Talk time of an agent on a call grows with the server's clock between the board's last frame
        # and this read (make test-clock runs the server's clock on; CI saw 22 s against 21 s).
        exact, differs = live.shows(truth, ignore=("talk_seconds",))
        assert exact, f"board {n} (of {len(boards)}, after {changes[0]} changes): {differs or live.error}"

    def shows(row):  # the test's own reading of a history row (this churn has no wrap-up or block)
        if not row["panel_active"]:
            return "panel_inactive", None
        if row["pause_code"]:
            return "paused", row["pause_code"]
        return ("free" if row["ami_idle"] else "on_call"), None

    for agent_id in agent_ids:
        rows = sql("SELECT * FROM dialerapi_agent_states WHERE agent_id = %s ORDER BY at_utc, id", agent_id)
        if not rows:  # never changed
            assert truth[agent_id]["since"] is None
            continue
        first = len(rows) - 1
        while first > 0 and shows(rows[first - 1]) == shows(rows[-1]):
            first -= 1
        # The board's pause_code is the agent's whatever its state: an agent who paused before ever
        # opening the panel shows panel_inactive with that code (CI's make test-clock met one).
        expected = (shows(rows[-1])[0], rows[-1]["pause_code"] or None,
                    rows[first]["at_utc"].strftime("%Y-%m-%dT%H:%M:%SZ"))
        assert (truth[agent_id]["state"], truth[agent_id]["pause_code"], truth[agent_id]["since"]) == expected, rows


def test_a_change_undone_before_the_next_update_still_reaches_the_board_that_joined_between(app, client, floor):
    """A board joined while agent 501 was briefly at lunch; 501 was back at tea before the next
    update, so the update's read equals what the other boards were sent. It is still sent: the new
    board's snapshot said lunch (the churn test found a board stuck on such a row)."""
    from dialerapi.sides.supervisor.board import BoardFeed

    feed, first, second = BoardFeed(app), RecordingSocket(), RecordingSocket()
    with app.app_context():
        get_db().run(roster.set_availability, 501, panel_active=True, ami_idle=True)
        get_db().run(roster.pause, 501, "tea")
        feed.join(first)
        get_db().run(roster.pause, 501, "lunch")
        feed.join(second)
        get_db().run(roster.pause, 501, "tea")
        feed.changed({501})
    second.sent(2)
    served = client.get("/api/board", headers={"X-API-Key": SUPERVISOR_SECRET}).get_json()
    truth = {row["agent_id"]: row for row in served["agents"]}
    assert second.rows() == truth and first.rows() == truth


def test_a_change_reported_while_the_first_board_joins_reaches_it(app, client, floor):
    """A change committed after the first board's snapshot was read, and reported by the hub's poll
    before that board was in the feed, was dropped: with no board in the feed, changed() cleared
    what it was told without the feed's lock, and the board showed tea until 501's next change. It
    is kept for the next update."""
    from dialerapi.sides.supervisor.board import BoardFeed

    feed, first = BoardFeed(app), RecordingSocket()
    read_snapshot = feed._read_snapshot

    def read_then_change(tz):
        shared = read_snapshot(tz)
        get_db().run(roster.pause, 501, "lunch")
        feed.changed({501})  # the hub's poll (its own thread in the service), while the join holds the lock
        return shared

    feed._read_snapshot = read_then_change
    with app.app_context():
        get_db().run(roster.set_availability, 501, panel_active=True, ami_idle=True)
        get_db().run(roster.pause, 501, "tea")
        feed.join(first)
        feed.changed(set())  # the next poll
    first.sent(2)
    served = client.get("/api/board", headers={"X-API-Key": SUPERVISOR_SECRET}).get_json()
    truth = {row["agent_id"]: row for row in served["agents"]}
    assert first.rows() == truth

