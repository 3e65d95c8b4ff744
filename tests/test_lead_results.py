"""Results back to the CRM (issue #48): GET /api/leads/{oli_id} and the lead events feed
GET /api/lead-events, each event written in the transaction of its change.

Built on lead-intake-api.md "States and transitions", "Claim and retry rules" (max tries),
POST /api/pending-callbacks and /api/pending-dispositions; decisions.md D2 (times), D3 (errors),
D5 (held actions), D6 (settle and sweep)."""

import importlib.util
import json
import re
from datetime import timedelta

import pymysql
import pytest
from test_busy_floor import at_once
from test_settle import settle  # noqa: F401 - the fixture: settle(oli_id, outcome, now=NOW, **kwargs)

from conftest import DEFAULT_NOW, ROOT, TZ, cli, connect_params, own_number, utc_text
from dialerapi.plumbing.db import get_db
from dialerapi.rules.agents import roster
from dialerapi.rules.caller_ids import numbers
from dialerapi.rules.campaigns import operations
from dialerapi.rules.compliance import do_not_call
from dialerapi.rules.config import dialer as dialer_config
from dialerapi.rules.core import vocabulary
from dialerapi.rules.dialing import claims, crm_actions
from dialerapi.rules.events import lead_events
from dialerapi.rules.leads import dialstate, transitions
from dialerapi.upkeep import jobs
from dialerapi.web import agent_tokens

NOW = DEFAULT_NOW


@pytest.fixture(autouse=True)
def fixed_now(frozen_clock):
    frozen_clock(NOW)


@pytest.fixture
def live_lead(new_lead, make_live, sql):
    """A lead live on a call (reservation R-<oli_id>), and agent 501 on the roster."""
    sql("INSERT IGNORE INTO sales_agents (id, extension, name) VALUES (501, '4501', 'Kavya')")

    def make(oli_id="OLI-1", form_type="home_loan", **columns):
        new_lead(oli_id, form_type=form_type)
        return make_live(oli_id, reservation_id=f"R-{oli_id}", reserved_at=NOW - timedelta(minutes=2), **columns)

    return make


@pytest.fixture
def feed(client, auth):
    """GET /api/lead-events as the CRM: the whole body."""

    def read(**query):
        response = client.get("/api/lead-events", query_string=query, headers=auth)
        assert response.status_code == 200, response.get_json()
        return response.get_json()

    return read


def events_of(feed, **query):
    return feed(**query)["events"]


def test_a_settle_tells_the_crm_the_call_and_the_lead_it_left(settle, live_lead, feed, sql):
    live_lead(call_answered_at=NOW - timedelta(seconds=40), agent_connected_at=NOW - timedelta(seconds=39))
    settle("OLI-1", "answered", agent_id=501, hangup_by="customer", hangup_cause="16",
           started_at=NOW - timedelta(minutes=1), reservation_id="R-OLI-1")
    lead = sql.lead("OLI-1")
    attempt = sql.one("SELECT id FROM sales_call_attempts")
    [event] = events_of(feed)
    stored = sql.one("SELECT id FROM dialerapi_lead_events")
    assert event == {
        "id": f"evt_{stored['id']}", "type": "lead.call_ended", "occurred_at": utc_text(NOW),
        "occurred_at_local": "2026-11-21 10:00:00", "oli_id": "OLI-1", "data_id": lead["data_id"],
        "data": {
            "call_id": attempt["id"], "outcome": "answered", "agent_id": 501, "call_type": "outbound",
            "reservation_id": "R-OLI-1", "started_at": "2026-11-21 09:59:00", "ended_at": "2026-11-21 10:00:00",
            "answered_at": "2026-11-21 09:59:20", "agent_connected_at": "2026-11-21 09:59:21",
            "connect_seconds": 1, "late_connect": False, "hangup_by": "customer", "hangup_cause": "16",
            "consent": None, "caller_id": None,
            "lead": {"dial_status": "Received", "priority_id": 2, "call_count": 1, "last_dial_result": "ANSWER",
                     "disposeRemark": None, "next_retry_at": None, "callback_scheduled_at": None,
                     "callback_agent_id": None}}}


def test_the_last_try_tells_of_the_call_then_of_the_dialer_giving_up(settle, live_lead, feed, sql):
    live_lead(call_count=19, first_attempt_at=NOW - timedelta(days=3))
    settle("OLI-1", "no_answer")
    events = events_of(feed)
    assert [e["type"] for e in events] == ["lead.call_ended", "lead.disposed"]
    assert events[1]["data"]["reason"] == "max_tries" and events[1]["data"]["held"] is False
    assert events[1]["data"]["disposeRemark"] == transitions.MAX_TRIES_REMARK == sql.lead("OLI-1")["disposeRemark"]
    assert events[1]["data"]["lead"]["dial_status"] == "Disposed"


def test_a_callback_held_during_the_call_is_told_after_the_call_with_who_filed_it(
        settle, live_lead, feed, client, auth):
    live_lead()
    response = client.post("/api/pending-callbacks", json={
        "oliId": "OLI-1", "scheduledAt": "2026-11-22 11:00", "agentId": 777, "remarks": "after lunch"}, headers=auth)
    assert response.status_code == 202
    assert events_of(feed) == []
    settle("OLI-1", "answered", agent_id=501)
    events = events_of(feed)
    assert [e["type"] for e in events] == ["lead.call_ended", "lead.callback_applied"]
    applied = events[1]["data"]
    assert applied["applied_by"] == "settle" and applied["action"]["agentId"] == 777
    assert applied["action"]["remarks"] == "after lunch" and applied["action"]["scheduled_at"] == "2026-11-22 11:00:00"
    assert applied["lead"]["dial_status"] == "Callback"
    assert events[0]["data"]["lead"]["dial_status"] == "Received"


def test_a_held_disposition_applied_by_the_sweep_is_told_as_disposed_by_the_sweep(live_lead, feed, client, auth, sql,
                                                                                  app):
    live_lead()
    client.post("/api/pending-dispositions", json={"oliId": "OLI-1", "reason": "Not interested"}, headers=auth)
    sql("UPDATE sales_master SET isReserved = 0, dial_status = 'Received' WHERE oli_id = 'OLI-1'")
    with app.app_context():
        result = crm_actions.sweep(get_db(), NOW + timedelta(minutes=1), TZ)
    assert result["applied"] == 1
    [event] = events_of(feed)
    assert event["type"] == "lead.disposed" and event["occurred_at_local"] == "2026-11-21 10:01:00"
    assert event["data"]["reason"] == "crm" and event["data"]["held"] is True
    assert event["data"]["applied_by"] == "sweep" and event["data"]["action"]["reason"] == "Not interested"


def test_a_disposition_of_a_lead_not_on_a_call_is_told_at_once(new_lead, feed, client, auth):
    new_lead("OLI-1")
    response = client.post("/api/pending-dispositions", json={"oliId": "OLI-1", "reason": "Sold"}, headers=auth)
    assert response.status_code == 200
    [event] = events_of(feed)
    assert (event["type"], event["data"]["held"], event["data"]["reason"]) == ("lead.disposed", False, "crm")
    assert event["data"]["action"]["id"] == response.get_json()["pending"]["id"]


def test_a_released_reservation_is_told_with_the_reservation_it_ended(live_lead, feed, run):
    live_lead()
    run(dialstate.release, "OLI-1", NOW, tz=TZ, grace_minutes=10, release_retry_ms=60000, reservation_id="R-OLI-1")
    [event] = events_of(feed)
    assert event["type"] == "lead.released"
    assert event["data"]["reservation_id"] == "R-OLI-1" and event["data"]["reserved_at"] == "2026-11-21 09:58:00"
    assert event["data"]["lead"]["dial_status"] == "Pending"


def test_a_listed_number_tells_each_of_its_leads_once(new_lead, feed, client, auth, run, sql, database_url):
    for oli_id in ("OLI-1", "OLI-2"):
        new_lead(oli_id, phone_number="+91 98765 43210")
    new_lead("OLI-3", phone_number="+91 98765 43299")
    run(do_not_call.add, ["919876543210"], "cli", NOW)
    run(do_not_call.add, ["919876543210"], "cli", NOW)  # listed already: no lead changes, no event
    events = events_of(feed)
    assert sorted((e["type"], e["oli_id"], e["data"]["source"]) for e in events) == [
        ("lead.do_not_call", "OLI-1", "cli"), ("lead.do_not_call", "OLI-2", "cli")]
    # A push of a listed number: its new lead is told, a re-push of a marked one is not.
    new_lead("OLI-4", phone_number="+91 98765 43210")
    new_lead("OLI-1", phone_number="+91 98765 43210")
    assert [(e["oli_id"], e["data"]["source"]) for e in events_of(feed)[2:]] == [("OLI-4", "push")]
    # A DND disposition lists the number of OLI-3.
    client.post("/api/pending-dispositions", json={"oliId": "OLI-3", "reason": "DND"}, headers=auth)
    assert [(e["type"], e["oli_id"], e["data"].get("source")) for e in events_of(feed)[3:]] == [
        ("lead.do_not_call", "OLI-3", "dnd"), ("lead.disposed", "OLI-3", None)]
    # A registry import touching a lead.
    new_lead("OLI-5", phone_number="+91 98765 43255")
    result = cli(database_url, "dnc", "import", "-", "--source", "registry", stdin="+919876543255\n")
    assert result.returncode == 0, result.stderr
    assert [(e["oli_id"], e["data"]["source"]) for e in events_of(feed)[5:]] == [("OLI-5", "registry")]
    assert sql.one("SELECT COUNT(*) AS n FROM dialerapi_lead_events WHERE type = 'lead.do_not_call'")["n"] == 5


def test_a_number_taken_off_the_list_tells_each_of_its_leads_and_a_live_one_at_its_call_end(
        new_lead, feed, run, sql, make_live, floor_agent, client, auth, settle):
    """Issue #65 item 7: `dnc remove` unmarks each lead of the number with lead.do_not_call_removed;
    a lead live meanwhile (an inbound call) keeps its mark (a listing never touches a live row)
    until its call ends, which clears it and tells of it (source `call_end`). A number listed while
    its lead was live is marked by the first claim to read the lead (lead.do_not_call, source `claim`)."""
    floor_agent(501)
    for oli_id in ("OLI-1", "OLI-2"):
        new_lead(oli_id, phone_number="+91 98765 43210")
    run(do_not_call.add, ["919876543210"], "cli", NOW)
    make_live("OLI-2")
    run(do_not_call.remove, ["919876543210"], NOW)
    run(do_not_call.remove, ["919876543210"], NOW)  # off the list already: no lead changes, no event
    told = [(e["type"], e["oli_id"], e["data"]["source"]) for e in events_of(feed)[2:]]
    assert told == [("lead.do_not_call_removed", "OLI-1", "cli")]
    assert client.get("/api/leads/OLI-1", headers=auth).get_json()["lead"]["do_not_call"] is False
    settle("OLI-2", "answered", agent_id=501, call_type="inbound")
    told = [(e["type"], e["oli_id"], e["data"].get("source")) for e in events_of(feed)[3:]]
    assert told == [("lead.call_ended", "OLI-2", None), ("lead.do_not_call_removed", "OLI-2", "call_end")]
    assert client.get("/api/leads/OLI-2", headers=auth).get_json()["lead"]["do_not_call"] is False

    new_lead("OLI-3", phone_number="+91 98765 43233")
    make_live("OLI-3")
    run(do_not_call.add, ["919876543233"], "cli", NOW)
    assert [e["oli_id"] for e in events_of(feed) if e["oli_id"] == "OLI-3"] == []
    sql("UPDATE sales_master SET dial_status = 'Pending', isReserved = 0 WHERE oli_id = 'OLI-3'")
    sql("UPDATE sales_master SET dial_status = 'Disposed' WHERE oli_id IN ('OLI-1', 'OLI-2')")
    assert run(claims.claim_next, 501, NOW, tz=TZ) is None
    assert [(e["type"], e["data"]["source"]) for e in events_of(feed) if e["oli_id"] == "OLI-3"] == [
        ("lead.do_not_call", "claim")]
    assert client.get("/api/leads/OLI-3", headers=auth).get_json()["lead"]["do_not_call"] is True


def test_a_personal_callback_past_its_fallback_is_told_once(new_lead, sql, feed, run, floor_agent):
    floor_agent(501)
    new_lead("OLI-1")
    due = NOW - timedelta(minutes=31)
    sql("UPDATE sales_master SET dial_status = 'Callback', next_retry_at = NULL, callback_scheduled_at = %s,"
        " callback_agent_id = 501 WHERE oli_id = 'OLI-1'", due)

    def tell(conn):
        return lead_events.fallen_back(conn, NOW, dialer_config.load_config(conn), TZ)

    assert run(tell) == 1
    assert run(tell) == 0
    [event] = events_of(feed)
    assert event["type"] == "lead.callback_fell_back"
    assert event["data"] == {"cause": "fallback", "owner": 501, "callback_scheduled_at": "2026-11-21 09:29:00"}


def test_an_owner_leaving_the_roster_tells_of_their_callbacks(new_lead, sql, feed, run, floor_agent):
    floor_agent(501)
    new_lead("OLI-1")
    sql("UPDATE sales_master SET dial_status = 'Callback', callback_scheduled_at = %s, callback_agent_id = 501"
        " WHERE oli_id = 'OLI-1'", NOW + timedelta(hours=2))
    run(roster.remove_agent, 501, NOW)
    [event] = events_of(feed)
    assert event["type"] == "lead.callback_fell_back" and event["data"]["cause"] == "owner_removed"
    assert sql.one("SELECT callback_agent_id FROM sales_master WHERE oli_id = 'OLI-1'")["callback_agent_id"] is None


def test_a_settle_that_fails_leaves_no_event(settle, live_lead, sql):
    live_lead()
    with pytest.raises(vocabulary.UnknownAgent):
        settle("OLI-1", "answered", agent_id=999)
    with pytest.raises(vocabulary.StaleReservation):
        settle("OLI-1", "answered", reservation_id="R-other")
    assert sql("SELECT * FROM dialerapi_lead_events") == []


def test_the_feed_pages_and_resumes_from_next(settle, live_lead, feed):
    for n in range(5):
        live_lead(f"OLI-{n}")
        settle(f"OLI-{n}", "busy")
    first = feed(limit=2)
    second = feed(after=first["next"], limit=2)
    third = feed(after=second["next"], limit=2)
    last = feed(after=third["next"])
    assert [e["oli_id"] for e in first["events"] + second["events"] + third["events"]] == [f"OLI-{n}" for n in range(5)]
    assert last == {"ok": True, "events": [], "next": third["next"]}


def test_an_event_that_commits_late_is_not_passed_over(live_lead, feed, database_url, app, settle):
    """Ids are taken at INSERT and become visible at COMMIT: the feed orders by its own sequence,
    given at commit, so a reader that resumed past a later id still gets the earlier one. (Two
    form_types: settles of one form_type wait on its abandon counts' row.)"""
    live_lead("OLI-A")
    live_lead("OLI-B", form_type="credit_card")
    slow = pymysql.connect(**connect_params(database_url))
    try:
        slow.begin()
        dialstate.settle(slow, "OLI-A", "busy", NOW, tz=TZ, grace_minutes=10, release_retry_ms=60000)
        settle("OLI-B", "busy")  # a higher id, committed first
        page = feed()
        assert [e["oli_id"] for e in page["events"]] == ["OLI-B"]
        slow.commit()
    finally:
        slow.close()
    assert [e["oli_id"] for e in feed(after=page["next"])["events"]] == ["OLI-A"]


@pytest.mark.slow
def test_sixteen_settles_and_sixteen_sequencers_at_once_give_each_change_one_place(live_lead, sql, app):
    oli_ids = [f"OLI-{n}" for n in range(16)]
    for oli_id in oli_ids:
        live_lead(oli_id)

    def settle_and_sequence(oli_id):
        with app.app_context():
            get_db().run(dialstate.settle, oli_id, "no_answer", NOW, tz=TZ, grace_minutes=10, release_retry_ms=60000)
            return get_db().run(lead_events.sequence)

    at_once(settle_and_sequence, oli_ids)
    with app.app_context():
        get_db().run(lead_events.sequence)
    rows = sql("SELECT e.seq, e.oli_id FROM dialerapi_lead_events AS e ORDER BY e.seq")
    attempts = sql("SELECT oli_id FROM sales_call_attempts")
    assert sorted(r["oli_id"] for r in rows) == sorted(a["oli_id"] for a in attempts) == sorted(oli_ids)
    assert [r["seq"] for r in rows] == list(range(1, 17))


@pytest.mark.slow
def test_sixteen_crm_actions_racing_a_settle_tell_exactly_what_committed(live_lead, sql, app, auth):
    """Fifteen callbacks and the settle race on one lead: those answered 202 were held and the
    settle applied the latest of them, told in one lead.callback_applied naming it; those answered
    200 came after the settle and were applied at once (no held action to tell of)."""
    live_lead()

    def act(n):
        if n == 0:
            with app.app_context():
                get_db().run(dialstate.settle, "OLI-1", "answered", NOW, tz=TZ, grace_minutes=10,
                             release_retry_ms=60000)
            return None
        with app.test_client() as own:
            response = own.post("/api/pending-callbacks", json={
                "oliId": "OLI-1", "scheduledAt": f"2026-11-22 {n:02d}:00"}, headers=auth)
            return response.status_code, response.get_json()["pending"]["id"]

    answers = [answer for answer in at_once(act, list(range(16))) if answer]
    held = [pending_id for status, pending_id in answers if status == 202]
    events = [lead_events.public_event(row) for row in sql("SELECT * FROM dialerapi_lead_events ORDER BY id")]
    assert [e["type"] for e in events].count("lead.call_ended") == 1
    told = [e["data"]["action"]["id"] for e in events if e["type"] == "lead.callback_applied"]
    assert told == ([max(held)] if held else [])
    assert sql("SELECT * FROM sales_pending_actions WHERE status = 'pending'") == []
    latest = sql.one("SELECT scheduled_at FROM sales_pending_actions WHERE status = 'applied' ORDER BY id DESC LIMIT 1")
    assert sql.lead("OLI-1")["callback_scheduled_at"] == latest["scheduled_at"]


def test_read_one_lead_with_its_calls_newest_first_and_a_cursor(settle, live_lead, client, auth, sql, make_live):
    live_lead()
    for n in range(5):
        if n:
            make_live("OLI-1", reservation_id=f"R-{n}")
        settle("OLI-1", "busy" if n < 4 else "answered", agent_id=501, started_at=NOW - timedelta(seconds=30))
    ids = [r["id"] for r in sql("SELECT id FROM sales_call_attempts ORDER BY id DESC")]
    first = client.get("/api/leads/OLI-1?limit=3", headers=auth).get_json()
    assert first["ok"] and [c["id"] for c in first["calls"]] == ids[:3] and first["next"] == str(ids[2])
    rest = client.get(f"/api/leads/OLI-1?limit=3&cursor={first['next']}", headers=auth).get_json()
    assert [c["id"] for c in rest["calls"]] == ids[3:] and rest["next"] is None
    lead = first["lead"]
    row = sql.lead("OLI-1")
    assert lead["oli_id"] == "OLI-1" and lead["data_id"] == row["data_id"] and lead["dial_status"] == "Received"
    assert lead["call_count"] == 5 and lead["live"] is False and lead["do_not_call"] is False
    assert lead["phone_e164"] == own_number("OLI-1")[1:].replace(" ", "")
    assert lead["call_zones"] == ["Asia/Calcutta"]  # phonenumbers' name
    assert first["calls"][0] == {
        "id": ids[0], "outcome": "answered", "result": "ANSWER", "agent_id": 501, "call_type": "outbound",
        "form_type": "home_loan", "started_at": "2026-11-21 09:59:30", "ended_at": "2026-11-21 10:00:00",
        "answered_at": None, "agent_connected_at": None, "connect_seconds": None, "late_connect": None,
        "hangup_by": None, "hangup_cause": None}
    assert first["calls"][1]["outcome"] == "busy"


def test_a_lead_on_a_call_reads_live_and_a_personal_callback_shows_its_fallback(new_lead, make_live, client, auth, sql,
                                                                              floor_agent):
    floor_agent(501)
    new_lead("OLI-1")
    make_live("OLI-1")
    assert client.get("/api/leads/OLI-1", headers=auth).get_json()["lead"]["live"] is True
    new_lead("OLI-2")
    sql("UPDATE sales_master SET dial_status = 'Callback', callback_scheduled_at = %s, callback_agent_id = 501"
        " WHERE oli_id = 'OLI-2'", NOW)
    lead = client.get("/api/leads/OLI-2", headers=auth).get_json()["lead"]
    assert (lead["callback_agent_id"], lead["callback_fallback_at"]) == (501, "2026-11-21 10:30:00")


def test_the_lead_read_answers_d3_errors(client, auth, engine_auth, new_lead, app):
    new_lead("OLI-1")
    assert client.get("/api/leads/NOPE", headers=auth).get_json() == {"ok": False, "error": "unknown_oli_id"}
    assert client.get("/api/leads/OLI-1", headers=engine_auth).status_code == 401
    assert client.get("/api/lead-events", headers=engine_auth).status_code == 401
    assert client.get("/api/leads/OLI-1").status_code == 401
    token, _ = agent_tokens.mint(app.config, 501, 600)
    agent = {"Authorization": f"Bearer {token}"}
    assert client.get("/api/leads/OLI-1", headers=agent).status_code == 403
    assert client.get("/api/lead-events", headers=agent).status_code == 403
    for query in ("limit=0", "limit=201", "limit=abc", "cursor=-1", "cursor=1e3", "extra=1"):
        response = client.get(f"/api/leads/OLI-1?{query}", headers=auth)
        assert response.status_code == 400 and response.get_json()["error"] == "validation_failed", query
    for query in ("limit=1001", "after=x", "after=" + "9" * 19):
        response = client.get(f"/api/lead-events?{query}", headers=auth)
        assert response.status_code == 400 and response.get_json()["error"] == "validation_failed", query
    assert client.get("/api/leads/%20OLI-1", headers=auth).status_code == 400


def test_events_older_than_the_retention_are_pruned_by_the_prune_job(settle, live_lead, sql, app, frozen_clock):
    live_lead()
    settle("OLI-1", "busy")
    frozen_clock(NOW + timedelta(days=7, minutes=1))
    assert jobs.prune_tick(app)["lead_events"] == 1
    assert sql("SELECT * FROM dialerapi_lead_events") == []


DOCS = ROOT / "docs" / "crm" / "results.md"


def docs_examples():
    """{event type: example} of docs/crm/results.md's catalogue, and "read" for the lead read's."""
    text = DOCS.read_text()
    examples = {m.group(1): json.loads(m.group(2))
                for m in re.finditer(r"<!-- event: (\S+) -->\n```json\n(.*?)\n```", text, re.S)}
    examples["read"] = json.loads(re.search(r"## Read one lead.*?```json\n(.*?)\n```", text, re.S).group(1))
    return examples


def assert_same_shape(documented, made, path="$"):
    """The same keys at every level, and the same JSON type wherever neither side is null."""
    if isinstance(documented, dict) and isinstance(made, dict):
        assert list(documented) == list(made), f"{path}: docs {list(documented)} != service {list(made)}"
        for key in documented:
            assert_same_shape(documented[key], made[key], f"{path}.{key}")
    elif isinstance(documented, list) and isinstance(made, list):
        for item in made:
            assert_same_shape(documented[0], item, f"{path}[]")
    elif documented is not None and made is not None:
        assert type(documented) is type(made), f"{path}: docs {documented!r} != service {made!r}"


def held_and_freed(new_lead, settle, run, sql):
    """lead.hold_ended then lead.held (issue #65), on leads of one number under a cap of one call a
    day: OLI-5 is claimed; OLI-6, held as the release before this one held a lead while its number
    was live, is due again when OLI-5 fails to originate; OLI-6 is called, and OLI-7 is held."""
    sql("INSERT INTO dialerapi_contact_caps (name, max_attempts, window_seconds, enabled) VALUES ('one-a-day', 1, 86400, 1)")
    sql("INSERT INTO sales_agents (id, extension, name, panel_active, ami_idle) VALUES (777, '4777', 'Debt desk', 1, 1)")
    sql("INSERT INTO sales_agent_skills (agent_id, form_type) VALUES (777, 'debt')")
    new_lead("OLI-5", form_type="debt", phone_number="+91 98450 77777")
    assert run(claims.claim_next, 777, NOW, tz=TZ)["oli_id"] == "OLI-5"
    for oli_id in ("OLI-6", "OLI-7"):
        new_lead(oli_id, form_type="debt", phone_number="+91 98450 77777")
    sql("UPDATE sales_master SET next_retry_at = %s, contact_cap = 'one-a-day', contact_cap_until = %s"
        " WHERE oli_id = 'OLI-6'", NOW + timedelta(days=1), NOW + timedelta(days=1))
    settle("OLI-5", "originate_failed")
    called = run(claims.claim_next, 777, NOW, tz=TZ)["oli_id"]
    settle(called, "no_answer")
    assert run(claims.claim_next, 777, NOW, tz=TZ) is None


def test_the_docs_event_catalogue_is_what_the_service_writes(live_lead, settle, client, auth, feed, sql, run,
                                                               make_live, new_lead):
    live_lead("OLI-1", call_answered_at=NOW - timedelta(seconds=40), agent_connected_at=NOW - timedelta(seconds=39))
    client.post("/api/pending-dispositions", json={"oliId": "OLI-1", "reason": "Not interested", "agentId": 501},
                headers=auth)
    settle("OLI-1", "answered", agent_id=501, hangup_by="customer", hangup_cause="16",
           started_at=NOW - timedelta(minutes=2))
    live_lead("OLI-2")
    client.post("/api/pending-callbacks", json={"oliId": "OLI-2", "scheduledAt": "2026-11-23 11:30",
                                                "callbackAgentId": 501, "remarks": "after salary"}, headers=auth)
    settle("OLI-2", "answered", agent_id=501)
    sql("UPDATE sales_master SET callback_scheduled_at = %s WHERE oli_id = 'OLI-2'", NOW - timedelta(minutes=40))
    run(lambda conn: lead_events.fallen_back(conn, NOW, dialer_config.load_config(conn), TZ))
    live_lead("OLI-3")
    run(dialstate.release, "OLI-3", NOW, tz=TZ, grace_minutes=10, release_retry_ms=60000)
    client.post("/api/pending-dispositions", json={"oliId": "OLI-3", "reason": "DND"}, headers=auth)
    run(do_not_call.remove, [sql.lead("OLI-3")["phone_e164"]], NOW)
    held_and_freed(new_lead, settle, run, sql)
    client.patch("/api/campaigns/uk_collections", json={"abandon_period": "24h"}, headers=auth)
    run(operations.pause, "uk_collections", NOW, "cli")
    run(operations.resume, "uk_collections", NOW, "cli")
    run(numbers.add, "+19195550100", ["raleigh"], NOW, "cli", note="bought 2026-11")
    for patch in ({"state": "flagged", "note": "Spam Likely"}, {"state": "active", "daily_cap": 50}, {"state": "retired"}):
        run(numbers.change, "+19195550100", patch, NOW, "crm")
    made = {}
    for event in events_of(feed, limit=1000):
        made.setdefault(event["type"], event)
    documented = docs_examples()
    assert set(made) == set(lead_events.TYPES) == set(documented) - {"read"}
    for event_type in lead_events.TYPES:
        assert_same_shape(documented[event_type], made[event_type], event_type)
    read = client.get("/api/leads/OLI-1", headers=auth).get_json()
    assert_same_shape(documented["read"], read, "read")


@pytest.fixture
def results_reference(database_url, monkeypatch):
    """bench/reference_results_app.py, the results bench's reference, on the test database."""
    monkeypatch.setenv("DATABASE_URL", database_url)
    spec = importlib.util.spec_from_file_location("reference_results_app", ROOT / "bench" / "reference_results_app.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    yield module.app.test_client()
    if hasattr(module.local, "conn"):
        module.local.conn.close()


def test_the_results_bench_reference_reads_what_the_service_answers(live_lead, settle, make_live, client, auth,
                                                                     results_reference):
    """docs/performance.md: the reference of the results bench makes the service's reads, or its
    ratio compares unlike work."""
    live_lead()
    for n in range(3):
        if n:
            make_live("OLI-1")
        settle("OLI-1", "busy")
    service = client.get("/api/leads/OLI-1?limit=2", headers=auth).get_json()
    reference = results_reference.get("/lead/OLI-1?limit=2").get_json()
    assert [c["id"] for c in reference["calls"]] == [c["id"] for c in service["calls"]]
    assert {k: reference["lead"][k] for k in ("oli_id", "data_id", "dial_status", "call_count")} == \
        {k: service["lead"][k] for k in ("oli_id", "data_id", "dial_status", "call_count")}
    feed = client.get("/api/lead-events?limit=2", headers=auth).get_json()
    page = results_reference.get("/lead-events?after=0&limit=2").get_json()
    assert [f"evt_{e['id']}" for e in page["events"]] == [e["id"] for e in feed["events"]]
    assert [e["body"] for e in page["events"]] == [e["data"] for e in feed["events"]]


def test_every_outcome_reads_back_by_its_settle_name(live_lead, settle, make_live, client, auth):
    """The lead read's `outcome` is written by the database (lead_events.sql read_lead): it names
    each result as settle's outcomes do (states.OUTCOMES)."""
    live_lead()
    for n, outcome in enumerate(vocabulary.OUTCOMES):
        if n:
            make_live("OLI-1")
        settle("OLI-1", outcome)
    calls = client.get("/api/leads/OLI-1?limit=200", headers=auth).get_json()["calls"]
    assert [(c["outcome"], c["result"]) for c in reversed(calls)] == [
        (outcome, result) for outcome, (_, result) in vocabulary.OUTCOMES.items()]
