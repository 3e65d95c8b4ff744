"""Agents: roster commands, opening missed activities, GET /api/missed-activities (lead-intake-api.md;
decisions.md D7), blocking and the event outbox (D9)."""

import json
from datetime import datetime, timedelta, timezone

import pytest

from conftest import TZ, cli, make_app, utc_text
from dialerapi.plumbing.db import get_db
from dialerapi.rules.agents import roster
from dialerapi.rules.core import vocabulary
from dialerapi.rules.leads import dialstate
from dialerapi.upkeep import jobs

NOW = datetime(2026, 11, 21, 10, 0, 0)


@pytest.fixture(autouse=True)
def fixed_now(frozen_clock):
    frozen_clock(NOW)


@pytest.fixture
def agent(app):
    """Add an agent through the library: agent(501, "4501", skills=[...])."""

    def add(agent_id=501, extension="4501", name="Kavya Iyer", skills=("home_loan",), priorities=()):
        with app.app_context():
            get_db().run(roster.save_agent, agent_id, extension, name, list(skills), list(priorities))
        return agent_id

    return add


def outbox(sql):
    return [row["agent_id"] for row in sql("SELECT agent_id FROM dialerapi_outbox ORDER BY id")]


# --- roster ------------------------------------------------------------------------------------

@pytest.mark.long
@pytest.mark.slow
def test_roster_commands(database_url, sql, tmp_path):
    assert cli(database_url, "agents", "add", "501", "4501", "Kavya Iyer", "--skill", "home_loan",
               "--skill", "credit_card", "--priority", "1").returncode == 0
    duplicate = cli(database_url, "agents", "add", "501", "4999", "Someone")
    assert duplicate.returncode == 1 and "exists" in duplicate.stderr
    taken = cli(database_url, "agents", "add", "502", "4501", "Arun")
    assert taken.returncode == 1 and "extension 4501 already belongs to agent 501" in taken.stderr
    assert cli(database_url, "agents", "update", "501", "--name", "Kavya R. Iyer", "--all-priorities").returncode == 0
    csv = tmp_path / "floor.csv"
    csv.write_text("id,extension,name,skills,priorities\n"
                   "601,4601,Arun Raja,home_loan;health_insurance,\n"
                   "602,4602,प्रिया शर्मा,credit_card,1;2\n", encoding="utf-8")
    assert cli(database_url, "agents", "import", str(csv)).returncode == 0
    listed = json.loads(cli(database_url, "agents", "list", "--json").stdout)
    assert [(a["id"], a["extension"], a["name"], a["skills"], a["priorities"]) for a in listed] == [
        (501, "4501", "Kavya R. Iyer", ["credit_card", "home_loan"], []),
        (601, "4601", "Arun Raja", ["health_insurance", "home_loan"], []),
        (602, "4602", "प्रिया शर्मा", ["credit_card"], [1, 2]),
    ]
    assert cli(database_url, "agents", "remove", "601").returncode == 0
    assert [r["id"] for r in sql("SELECT id FROM sales_agents ORDER BY id")] == [501, 602]
    assert sql("SELECT * FROM sales_agent_skills WHERE agent_id = 601") == []


def test_a_bad_csv_row_imports_nothing(database_url, sql, tmp_path):
    csv = tmp_path / "floor.csv"
    csv.write_text("id,extension,name,skills,priorities\n701,4701,Ok,home_loan,\n702,47x2,Bad,home_loan,\n")
    result = cli(database_url, "agents", "import", str(csv))
    assert result.returncode == 1 and "line 3" in result.stderr and "3-16 digits" in result.stderr
    assert sql("SELECT * FROM sales_agents") == []


# --- opening missed activities -------------------------------------------------------------------

@pytest.mark.clock
def test_call_connected_opens_a_live_missed_activity(app, agent, new_lead, make_live, sql):
    agent()
    new_lead("OLI-1")
    make_live("OLI-1")
    with app.app_context():
        activity_id = get_db().run(roster.open_missed_activity, "OLI-1", 501, NOW, TZ, "redial")
    row = sql.one("SELECT * FROM sales_missed_activities WHERE id = %s", activity_id)
    assert (row["agent_id"], row["oli_id"], row["lead_id"], row["call_type"], row["extension"]) == (
        501, "OLI-1", sql.lead("OLI-1")["id"], "redial", "4501")
    assert row["connected_at"] == NOW and row["ended_at"] is None and row["due_at"] is None
    assert utc_text(NOW) == row["connected_at_utc"].strftime("%Y-%m-%dT%H:%M:%SZ")
    assert outbox(sql) == [501]


def test_call_connected_on_a_lead_not_on_a_call_opens_nothing(app, agent, new_lead, sql):
    agent()
    new_lead("OLI-1")
    with app.app_context(), pytest.raises(vocabulary.NotLive):
        get_db().run(roster.open_missed_activity, "OLI-1", 501, NOW, TZ)
    assert sql("SELECT * FROM sales_missed_activities") == [] and outbox(sql) == []


@pytest.mark.long
@pytest.mark.clock
def test_call_connected_command(database_url, agent, new_lead, make_live, sql):
    agent()
    new_lead("OLI-1")
    new_lead("NOT-LIVE")
    refused = cli(database_url, "call-connected", "NOT-LIVE", "--agent-id", "501")
    assert refused.returncode == 1 and "is not live" in refused.stderr
    assert sql("SELECT * FROM sales_missed_activities") == []
    make_live("OLI-1")
    result = cli(database_url, "call-connected", "OLI-1", "--agent-id", "501", now=NOW)
    assert result.returncode == 0, result.stderr
    row = sql.one("SELECT id, connected_at FROM sales_missed_activities")
    assert row["id"] == json.loads(result.stdout)["missed_activity_id"]
    assert NOW <= row["connected_at"] < NOW + timedelta(minutes=1), "the command reads the clock the test set"
    unknown = cli(database_url, "call-connected", "OLI-1", "--agent-id", "999")
    assert unknown.returncode == 1 and "no agent has id 999" in unknown.stderr


# --- GET /api/missed-activities --------------------------------------------------------------------

@pytest.fixture
def read(client, auth):
    def read(query, ip="10.9.9.9"):
        return client.get("/api/missed-activities", query_string=query, headers=auth, environ_base={"REMOTE_ADDR": ip})

    return read


@pytest.mark.clock
def test_items_oldest_first_with_live_in_grace_and_overdue(read, agent, new_lead, open_missed_activity):
    agent()
    for oli_id in ("A", "B", "C", "D"):
        new_lead(oli_id)
    open_missed_activity("C", connected_at="2026-11-21 09:50:00")                       # live
    open_missed_activity("A", connected_at="2026-11-21 09:00:00", ended_at="2026-11-21 09:05:00",
                         due_at="2026-11-21 09:15:00")                                   # overdue
    open_missed_activity("B", connected_at="2026-11-21 09:40:00", ended_at="2026-11-21 09:55:00",
                         due_at="2026-11-21 10:05:00")                                   # in grace
    cleared = open_missed_activity("D", connected_at="2026-11-21 08:00:00")
    body = read({"agentId": 501}).get_json()
    assert body["ok"] is True and body["agent_id"] == 501 and body["grace_minutes"] == 10
    assert [i["oli_id"] for i in body["items"]] == ["D", "A", "B", "C"]
    by_oli = {i["oli_id"]: i for i in body["items"]}
    assert by_oli["A"]["overdue"] is True and by_oli["B"]["overdue"] is False and by_oli["C"]["overdue"] is False
    assert by_oli["C"]["ended_at"] is None and by_oli["C"]["due_at"] is None
    assert by_oli["A"] == {
        "id": by_oli["A"]["id"], "oli_id": "A", "lead_id": by_oli["A"]["lead_id"], "call_type": "outbound",
        "extension": "4501", "connected_at": utc_text(datetime(2026, 11, 21, 9, 0)),
        "ended_at": utc_text(datetime(2026, 11, 21, 9, 5)), "due_at": utc_text(datetime(2026, 11, 21, 9, 15)),
        "overdue": True,
    }
    assert body["blocked"] is True
    assert cleared["id"] == by_oli["D"]["id"]


def test_cleared_activities_are_not_listed(read, agent, new_lead, open_missed_activity, sql):
    agent()
    new_lead("A")
    new_lead("B")
    open_missed_activity("A", ended_at="2026-11-21 09:05:00", due_at="2026-11-21 09:15:00")
    kept = open_missed_activity("B")
    sql("UPDATE sales_missed_activities SET cleared_at = %s, cleared_by = 'callback' WHERE oli_id = 'A'", NOW)
    body = read({"extension": "4501"}).get_json()
    assert [i["id"] for i in body["items"]] == [kept["id"]] and body["blocked"] is False


@pytest.mark.clock
def test_at_most_100_items_oldest_first(read, agent, new_lead, sql):
    agent()
    new_lead("A")
    lead_id = sql.lead("A")["id"]
    for n in range(105):
        sql("INSERT INTO sales_missed_activities (agent_id, lead_id, oli_id, call_type, connected_at)"
            " VALUES (501, %s, 'A', 'outbound', %s)", lead_id, NOW - timedelta(minutes=n))
    items = read({"agentId": 501}).get_json()["items"]
    assert len(items) == 100
    assert items[0]["connected_at"] == utc_text(datetime(2026, 11, 21, 8, 16))
    assert items[-1]["connected_at"] == utc_text(datetime(2026, 11, 21, 9, 55))


@pytest.mark.clock
@pytest.mark.parametrize("exact", [True, False], ids=["utc-columns", "wall-clock-only"])
def test_times_are_utc_whatever_the_db_timezone(database_url, auth, agent, new_lead, sql, frozen_clock, exact):
    agent()
    new_lead("A")
    lead_id = sql.lead("A")["id"]
    utc = ("2026-11-21 10:00:00", "2026-11-21 10:01:00", "2026-11-21 10:11:00") if exact else (None, None, None)
    # Wall-clock times in Kolkata (+05:30), with their UTC instants, or without them (an engine writing SQL).
    sql("INSERT INTO sales_missed_activities (agent_id, lead_id, oli_id, call_type, connected_at, ended_at, due_at,"
        " connected_at_utc, ended_at_utc, due_at_utc) VALUES (501, %s, 'A', 'outbound', '2026-11-21 15:30:00',"
        " '2026-11-21 15:31:00', '2026-11-21 15:41:00', %s, %s, %s)", lead_id, *utc)
    client = make_app(database_url, DB_TIMEZONE="Asia/Kolkata").test_client()
    frozen_clock(datetime(2026, 11, 21, 10, 10, tzinfo=timezone.utc))
    body = client.get("/api/missed-activities?agentId=501", headers=auth).get_json()
    item = body["items"][0]
    assert (item["connected_at"], item["ended_at"], item["due_at"]) == (
        "2026-11-21T10:00:00Z", "2026-11-21T10:01:00Z", "2026-11-21T10:11:00Z")
    # 10:10 UTC = 15:40 Kolkata: the activity due at 15:41 Kolkata is still in grace.
    assert item["overdue"] is False and body["blocked"] is False
    frozen_clock(datetime(2026, 11, 21, 10, 11, 1, tzinfo=timezone.utc))
    body = client.get("/api/missed-activities?agentId=501", headers=auth).get_json()
    assert body["items"][0]["overdue"] is True and body["blocked"] is True


@pytest.mark.parametrize("query, status, error", [
    ({"agentId": 999}, 404, "unknown_agent"),
    ({"extension": "4999"}, 404, "unknown_extension"),
    ({}, 400, "validation_failed"),
    ({"agentId": 501, "extension": "4501"}, 400, "validation_failed"),
    ({"extension": "45"}, 400, "validation_failed"),
    ({"extension": "12345678901234567"}, 400, "validation_failed"),
    ({"extension": "45a1"}, 400, "validation_failed"),
    ({"agentId": "five"}, 400, "validation_failed"),
])
def test_lookup_errors(read, agent, query, status, error):
    agent()
    response = read(query)
    assert response.status_code == status and response.get_json()["error"] == error


def test_missed_activities_has_its_own_limit_of_240(read, agent, client, auth):
    agent()
    for _ in range(240):
        assert read({"agentId": 501}).status_code == 200
    limited = read({"agentId": 501})
    assert limited.status_code == 429 and limited.get_json()["error"] == "rate_limited"
    other = client.post("/api/pending-dispositions", json={"oliId": "x", "reason": "DND"}, headers=auth,
                        environ_base={"REMOTE_ADDR": "10.9.9.9"})
    assert other.status_code == 404, "the CRM actions keep their own counter"


# --- blocking ---------------------------------------------------------------------------------------

def refresh(app, now=NOW):
    with app.app_context():
        return get_db().run(roster.refresh_blocking, now, TZ)


@pytest.mark.clock
def test_an_overdue_activity_blocks_and_a_crm_callback_unblocks_at_once(app, agent, new_lead, make_live, client, auth, sql):
    agent()
    new_lead("OLI-1")
    make_live("OLI-1")
    with app.app_context():
        get_db().run(roster.open_missed_activity, "OLI-1", 501, NOW - timedelta(minutes=20), TZ)
        get_db().run(dialstate.settle, "OLI-1", "answered", NOW - timedelta(minutes=15), tz=TZ, grace_minutes=10,
                     release_retry_ms=60000, agent_id=501)
    assert refresh(app, NOW - timedelta(minutes=6)) == {}, "still inside the grace window"
    assert refresh(app) == {501: True}
    assert sql.one("SELECT outbound_blocked FROM sales_agents WHERE id = 501")["outbound_blocked"] == 1
    assert refresh(app) == {}, "nothing changes twice"
    sql("DELETE FROM dialerapi_outbox")
    response = client.post("/api/pending-callbacks", json={"oliId": "OLI-1", "scheduledAt": "2026-11-21 16:00"},
                           headers=auth)
    assert response.status_code == 200
    assert sql.one("SELECT outbound_blocked FROM sales_agents WHERE id = 501")["outbound_blocked"] == 0
    assert outbox(sql) == [501]
    assert client.get("/api/missed-activities?agentId=501", headers=auth).get_json()["blocked"] is False


def test_a_disposition_for_another_lead_does_not_unblock(app, agent, new_lead, open_missed_activity, client, auth, sql):
    agent()
    new_lead("A")
    new_lead("B")
    open_missed_activity("A", ended_at="2026-11-21 09:00:00", due_at="2026-11-21 09:10:00")
    refresh(app)
    client.post("/api/pending-dispositions", json={"oliId": "B", "reason": "DND"}, headers=auth)
    assert sql.one("SELECT outbound_blocked FROM sales_agents WHERE id = 501")["outbound_blocked"] == 1


@pytest.mark.clock
def test_the_blocking_job_runs_once_per_tick(app, agent, new_lead, open_missed_activity, sql):
    agent()
    new_lead("A")
    open_missed_activity("A", ended_at="2026-11-21 09:00:00", due_at="2026-11-21 09:10:00")
    assert jobs.blocking_tick(app) == {501: True}
    assert jobs.blocking_tick(app) is None, "a second process in the same tick skips"
    assert sql.one("SELECT outbound_blocked FROM sales_agents WHERE id = 501")["outbound_blocked"] == 1


def test_settle_queues_an_event_for_the_agent(app, agent, new_lead, make_live, sql):
    agent()
    new_lead("OLI-1")
    make_live("OLI-1")
    with app.app_context():
        get_db().run(roster.open_missed_activity, "OLI-1", 501, NOW, TZ)
        sql("DELETE FROM dialerapi_outbox")
        get_db().run(dialstate.settle, "OLI-1", "no_answer", NOW, tz=TZ, grace_minutes=10, release_retry_ms=60000,
                     agent_id=501)
    assert outbox(sql) == [501]


@pytest.mark.clock
def test_outbox_rows_older_than_an_hour_are_pruned_once_per_tick(app, sql):
    sql("INSERT INTO dialerapi_outbox (agent_id, created_at) VALUES (501, %s), (502, %s)",
        NOW - timedelta(minutes=61), NOW - timedelta(minutes=59))
    # A socket host that stopped writing its row an hour ago is gone (issue #27); a live one stays.
    sql("INSERT INTO dialerapi_socket_hosts (host, open_sockets, capacity, refused, workers, updated_at)"
        " VALUES ('gone/127.0.0.1:8001', 3, 2000, 0, '[3]', %s), ('live/127.0.0.1:8001', 5, 2000, 0, '[5]', %s)",
        NOW - timedelta(minutes=61), NOW - timedelta(seconds=5))
    assert jobs.prune_tick(app) == {"outbox": 1, "engine_replies": 0, "socket_hosts": 1, "abandon_counts": 0,
                                    "contact_numbers": 0, "lead_events": 0, "webhook_deliveries": 0, "webhook_attempts": 0, "agent_states": 0}
    assert [r["agent_id"] for r in sql("SELECT agent_id FROM dialerapi_outbox")] == [502]
    assert [r["host"] for r in sql("SELECT host FROM dialerapi_socket_hosts")] == ["live/127.0.0.1:8001"]
    assert jobs.prune_tick(app) is None


def test_a_crm_action_re_evaluates_only_the_agents_it_cleared(app, agent, new_lead, open_missed_activity, client,
                                                              auth, sql):
    agent(501, "4501")
    agent(502, "4502")
    new_lead("A")
    new_lead("B")
    open_missed_activity("A", agent_id=501, ended_at="2026-11-21 09:00:00", due_at="2026-11-21 09:10:00")
    refresh(app)
    # 502 falls overdue after the job's last run: the job, not this CRM action, flags them.
    open_missed_activity("B", agent_id=502, ended_at="2026-11-21 09:00:00", due_at="2026-11-21 09:10:00")
    sql("DELETE FROM dialerapi_outbox")
    client.post("/api/pending-dispositions", json={"oliId": "A", "reason": "DND"}, headers=auth)
    flags = {r["id"]: r["outbound_blocked"] for r in sql("SELECT id, outbound_blocked FROM sales_agents")}
    assert flags == {501: 0, 502: 0}
    assert outbox(sql) == [501], "only the cleared agent was re-evaluated"
    assert refresh(app) == {502: True}
