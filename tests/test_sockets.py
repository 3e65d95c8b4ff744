"""The /ws agent socket (decisions.md D9) through a real gunicorn (gthread) and a real websocket
client: authentication, snapshots, events on changes made by other processes, pause rules."""

import json
import time
from datetime import datetime, timedelta

import pytest
import requests
from wsclient import Client, ConnectionClosed

from conftest import ENGINE_SECRET, MONITOR_SECRET, SECRET, TZ, mint_token, start_gunicorn, utc_text
from dialerapi.plumbing import clock
from dialerapi.plumbing.db import get_db
from dialerapi.rules.agents import roster
from dialerapi.rules.leads import dialstate

AUTH = {"X-API-Key": SECRET}


@pytest.fixture
def floor(sql):
    sql("INSERT INTO sales_agents (id, extension, name) VALUES (501, '4501', 'Kavya Iyer'), (502, '4502', 'Arun Raja')")


@pytest.fixture
def connect(live_server, sql):
    opened = []

    def connect(query, headers=None):
        url = live_server.base_url.replace("http://", "ws://") + "/ws?" + query
        client = Client.connect(url, headers=headers if headers is not None else AUTH)
        opened.append(client)
        return client

    yield connect
    for client in opened:
        try:
            client.close()
        except ConnectionClosed:
            pass
    # The server marks a panel inactive when its socket closes, a moment after the close: wait for
    # it, or it would change the next test's agents.
    deadline = time.monotonic() + 5
    while sql.one("SELECT COUNT(*) AS n FROM sales_agents WHERE panel_active = 1")["n"]:
        assert time.monotonic() < deadline, "the server did not mark the closed panels inactive"
        time.sleep(0.05)


def frame(client, timeout=3):
    raw = client.receive(timeout=timeout)
    assert raw is not None, f"no frame within {timeout} s"
    return json.loads(raw)


def until(client, predicate, timeout=2.0):
    """Read frames until one satisfies `predicate`; fail after `timeout` seconds (D9: within 2 s)."""
    deadline = time.monotonic() + timeout
    seen = []
    while time.monotonic() < deadline:
        raw = client.receive(timeout=max(0.01, deadline - time.monotonic()))
        if raw is None:
            break
        message = json.loads(raw)
        seen.append(message)
        if predicate(message):
            return message
    pytest.fail(f"no matching frame within {timeout} s; saw {seen}")


def connected(connect, query):
    """A socket past its three state frames on connect (D9; dialer.callbacks since issue #40)."""
    client = connect(query)
    for _ in range(3):
        frame(client)
    return client


def rejected(client):
    message = frame(client)
    assert message["event"] == "server_error"
    with pytest.raises(ConnectionClosed) as closed:
        client.receive(timeout=3)
    return message["data"]["reason"], closed.value.reason


@pytest.mark.parametrize("query, headers", [
    ("agentId=501", {}),
    ("agentId=501", {"X-API-Key": "wrong"}),
    ("agentId=501", {"X-API-Key": ENGINE_SECRET}),
    ("agentId=501", {"X-API-Key": MONITOR_SECRET}),
])
def test_a_wrong_or_missing_key_is_refused_with_1008(connect, floor, query, headers):
    assert rejected(connect(query, headers)) == ("unauthorized", 1008)


@pytest.mark.parametrize("query", ["agentId=501&key=wrong", f"agentId=501&key={SECRET}",
                                   f"agentId=501&token={SECRET}", f"agentId=501&token={ENGINE_SECRET}"])
def test_the_service_key_in_the_url_is_refused_with_1008(connect, floor, query):
    """D9, issue #28: a key in a URL ends up in a browser; refused by default, right or wrong; in
    `token=` (issue #66: it opened the socket with the CRM key), always."""
    assert rejected(connect(query, {})) == ("key_in_url", 1008)


@pytest.mark.parametrize("query", ["agentId=999", "extension=4999", "", "agentId=abc", "extension=12"])
def test_an_unknown_agent_is_refused_with_1008(connect, floor, query):
    assert rejected(connect(query)) == ("unknown_agent", 1008)


@pytest.mark.clock
@pytest.mark.parametrize("query, headers", [
    ("agentId=501", AUTH),
    ("extension=4501", {"Authorization": f"Bearer {SECRET}"}),
    ("token={token}", {}),
    ("", {"Authorization": "Bearer {token}"}),
])
def test_a_snapshot_on_connect(connect, floor, new_lead, open_missed_activity, live_server, query, headers):
    new_lead("OLI-1")
    open_missed_activity("OLI-1", agent_id=501, ended_at="2020-01-01 10:00:00", due_at="2020-01-01 10:10:00")
    token = mint_token(live_server.base_url, 501)
    client = connect(query.format(token=token), {name: value.format(token=token) for name, value in headers.items()})
    blocked = frame(client)
    assert blocked == {"event": "dialer.outbound_blocked", "data": {"agent_id": 501, "blocked": True}}
    missed = frame(client)
    assert missed["event"] == "dialer.missed_activities"
    data = missed["data"]
    assert data["agent_id"] == 501 and data["blocked"] is True and data["grace_minutes"] == 10
    assert [(i["oli_id"], i["overdue"], i["due_at"]) for i in data["items"]] == [
        ("OLI-1", True, utc_text(datetime(2020, 1, 1, 10, 10)))]
    assert frame(client) == {"event": "dialer.callbacks",
                             "data": {"agent_id": 501, "fallback_minutes": 30, "items": []}}


@pytest.mark.clock
def test_changes_by_other_processes_arrive_within_2_seconds(connect, floor, app, live_server, new_lead, make_live):
    new_lead("OLI-1")
    make_live("OLI-1")
    client = connect("agentId=501")
    assert frame(client)["data"]["blocked"] is False
    assert frame(client)["data"]["items"] == []
    # The dialing engine, in another process: the call connects, then ends.
    now = clock.now(TZ)
    with app.app_context():
        get_db().run(roster.open_missed_activity, "OLI-1", 501, now, TZ)
    live = until(client, lambda m: m["event"] == "dialer.missed_activities" and m["data"]["items"])
    assert live["data"]["items"][0]["ended_at"] is None
    with app.app_context():
        get_db().run(dialstate.settle, "OLI-1", "answered", now, tz=TZ, grace_minutes=0, release_retry_ms=60000,
                     agent_id=501)
    ended = until(client, lambda m: m["event"] == "dialer.missed_activities" and m["data"]["items"][0]["ended_at"])
    assert ended["data"]["items"][0]["due_at"] is not None
    # Grace 0: a second later the blocking job (any process) finds the activity overdue. The socket
    # says blocked once: in the frame above when it was read after the due time already, else next.
    with app.app_context():
        assert get_db().run(roster.refresh_blocking, now + timedelta(seconds=1), TZ) == {501: True}
    if not ended["data"]["blocked"]:
        assert until(client, lambda m: m["event"] == "dialer.outbound_blocked")["data"]["blocked"] is True
    # The CRM's callback through the HTTP API clears the activity and unblocks the agent.
    response = requests.post(live_server.url("/api/pending-callbacks"), headers=AUTH,
                             json={"oliId": "OLI-1", "scheduledAt": "2030-01-01 10:00"})
    assert response.status_code == 200
    unblocked = until(client, lambda m: m["event"] == "dialer.outbound_blocked" and not m["data"]["blocked"])
    assert unblocked["data"] == {"agent_id": 501, "blocked": False}
    cleared = until(client, lambda m: m["event"] == "dialer.missed_activities")
    assert cleared["data"]["items"] == [] and cleared["data"]["blocked"] is False


def test_a_change_made_just_after_a_process_s_first_socket_connected_reaches_it(
        floor, database_url, tmp_path, app, sql, new_lead, make_live):
    """D9, issue #38: a process's outbox tail starts where its first socket's snapshot was read. The
    process's event thread is held at its first heartbeat (dialerapi_socket_hosts locked), so its
    first poll comes after the change; the change arrives all the same (it was lost: CI, stop 44)."""
    new_lead("OLI-1")
    make_live("OLI-1")
    server = start_gunicorn(database_url, tmp_path / "gunicorn.log", workers=1)
    client = None
    try:
        sql("LOCK TABLES dialerapi_socket_hosts WRITE")
        client = Client.connect(server.base_url.replace("http://", "ws://") + "/ws?agentId=501", headers=AUTH)
        for _ in range(3):
            frame(client)
        with app.app_context():
            get_db().run(roster.open_missed_activity, "OLI-1", 501, clock.now(TZ), TZ)
        sql("UNLOCK TABLES")
        live = until(client, lambda m: m["event"] == "dialer.missed_activities")
        assert [item["oli_id"] for item in live["data"]["items"]] == ["OLI-1"]
    finally:
        sql("UNLOCK TABLES")
        if client is not None:
            client.close()
        server.stop()


def test_an_event_that_changes_nothing_sends_no_frame(connect, floor, app, sql, new_lead, make_live):
    """D9: the state goes again when it changed. An outbox row committed before the socket connected
    but tailed after it (or any row that changes nothing) sends no frame; the next change does."""
    new_lead("OLI-1")
    make_live("OLI-1")
    client = connected(connect, "agentId=501")
    now = clock.now(TZ)
    with app.app_context():
        get_db().run(roster.open_missed_activity, "OLI-1", 501, now, TZ)
    live = until(client, lambda m: m["event"] == "dialer.missed_activities")  # the tail is running
    assert live["data"]["items"][0]["ended_at"] is None
    sql("INSERT INTO dialerapi_outbox (agent_id, created_at) VALUES (501, %s)", now)
    assert client.receive(timeout=1) is None
    with app.app_context():
        get_db().run(dialstate.settle, "OLI-1", "answered", now, tz=TZ, grace_minutes=10, release_retry_ms=60000,
                     agent_id=501)
    assert frame(client)["event"] == "dialer.outbound_blocked"
    ended = frame(client)
    assert ended["event"] == "dialer.missed_activities" and ended["data"]["items"][0]["ended_at"] is not None


def test_other_agents_do_not_get_the_events(connect, floor, app, new_lead, make_live):
    new_lead("OLI-1")
    make_live("OLI-1")
    other = connected(connect, "agentId=502")
    with app.app_context():
        get_db().run(roster.open_missed_activity, "OLI-1", 501, clock.now(TZ), TZ)
    assert other.receive(timeout=1.5) is None


@pytest.fixture
def panel(connect, floor):
    client = connected(connect, "agentId=501")

    def say(event, data=None):
        client.send(json.dumps({"event": event, "data": data or {}}))
        return frame(client)

    return say


def test_pause_with_a_picker_code(panel, sql):
    assert panel("agent.pause", {"code": "tea"}) == {"event": "agent.paused",
                                                    "data": {"agent_id": 501, "code": "tea", "note": None}}
    assert sql.one("SELECT pause_code, reason_note FROM sales_agents WHERE id = 501") == {"pause_code": "tea",
                                                                                        "reason_note": None}
    assert panel("agent.resume") == {"event": "agent.resumed", "data": {"agent_id": 501}}
    assert sql.one("SELECT pause_code FROM sales_agents WHERE id = 501")["pause_code"] is None


def test_other_needs_a_short_note(panel, sql):
    note = "doctor appointment for my mother at the city hospital today"
    reply = panel("agent.pause", {"code": "other", "note": note})
    assert reply["event"] == "agent.paused" and reply["data"]["note"] == note
    assert sql.one("SELECT reason_note FROM sales_agents WHERE id = 501")["reason_note"] == note


@pytest.mark.parametrize("data, reason", [
    ({}, "invalid_pause_reason"),
    ({"code": ""}, "invalid_pause_reason"),
    ({"code": "nap"}, "invalid_pause_reason"),
    ({"code": "left"}, "invalid_pause_reason"),
    ({"code": "day_reset"}, "invalid_pause_reason"),
    ({"code": 7}, "invalid_pause_reason"),
    ({"code": "other"}, "invalid_pause_note"),
    ({"code": "other", "note": "   "}, "invalid_pause_note"),
    ({"code": "other", "note": "one two three four five six seven eight nine ten eleven twelve thirteen"},
     "invalid_pause_note"),
    ({"code": "other", "note": "x" * 81}, "invalid_pause_note"),
])
def test_pause_rules(panel, sql, data, reason):
    assert panel("agent.pause", data) == {"event": "server_error", "data": {"reason": reason}}
    assert sql.one("SELECT pause_code FROM sales_agents WHERE id = 501")["pause_code"] is None


def test_malformed_frames_get_server_error_and_the_socket_stays_open(connect, floor):
    client = connect("agentId=501")
    frame(client)
    frame(client)
    frame(client)  # dialer.callbacks (issue #40)
    for raw in ("not json", json.dumps([1]), json.dumps({"event": "agent.dance"})):
        client.send(raw)
        assert frame(client)["event"] == "server_error"
    client.send(json.dumps({"event": "agent.pause", "data": {"code": "lunch"}}))
    assert frame(client)["event"] == "agent.paused"


@pytest.mark.parametrize("raw", [
    '{"event": "agent.pause", "data": ' + "[" * 2_000 + "]" * 2_000 + "}",
    '{"event": "agent.pause", "data": {"code": "\\ud800"}}',
    '{"event": "agent.pause", "data": {"code": "other", "note": "lost \\udfff"}}',
], ids=["nested-2000-deep", "lone-surrogate-code", "lone-surrogate-note"])
def test_frames_that_cannot_be_read_or_stored_answer_invalid_message(connect, floor, sql, raw):
    """Issue #17: these crashed the agent's socket (the HTTP 500 page written into it). Nesting deeper than
    Python's recursion limit fits in a message under the size cap (deeper ones are closed with 1009)."""
    client = connect("agentId=501")
    frame(client)
    frame(client)
    frame(client)  # dialer.callbacks (issue #40)
    client.send(raw)
    assert frame(client) == {"event": "server_error", "data": {"reason": "invalid_message"}}
    client.send(json.dumps({"event": "agent.pause", "data": {"code": "lunch"}}))
    assert frame(client)["event"] == "agent.paused", "the socket stays open"
    assert sql.one("SELECT pause_code FROM sales_agents WHERE id = 501")["pause_code"] == "lunch"


def test_the_server_keeps_connections_alive_with_pings(app):
    assert app.config["SOCK_SERVER_OPTIONS"]["ping_interval"] == 25


def test_a_connected_panel_makes_the_agent_panel_active(connect, floor, sql):
    sql("UPDATE sales_agents SET wrapup_until = '2026-11-21 10:00:30' WHERE id = 501")
    client = connect("agentId=501")
    frame(client)
    assert sql.one("SELECT panel_active, wrapup_until FROM sales_agents WHERE id = 501")["panel_active"] == 1
    client.close()
    deadline = time.monotonic() + 3
    while sql.one("SELECT panel_active FROM sales_agents WHERE id = 501")["panel_active"] and time.monotonic() < deadline:
        time.sleep(0.05)
    row = sql.one("SELECT panel_active, wrapup_until FROM sales_agents WHERE id = 501")
    assert row["panel_active"] == 0 and str(row["wrapup_until"]) == "2026-11-21 10:00:30", "wrap-up kept"
