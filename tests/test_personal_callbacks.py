"""Personal callbacks (issue #40): a callback the CRM files with `callbackAgentId` waits for that
agent. The owner's claim takes it first; nobody else's, and no predictive claim, until it has been
due for personal_callback_fallback_minutes (0 at once, NULL never) or the owner leaves the roster;
the owner sees the list on the socket and at GET /api/callbacks; the floor counts them.

Built on lead-intake-api.md "Claim and retry rules", POST /api/send-callback-request and POST
/api/pending-callbacks (decisions.md D3 for the errors, D5 for held actions, D6 for settle)."""

import json
import threading
import time
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
import requests
from test_busy_floor import at_once
from wsclient import Client

from conftest import DEFAULT_NOW, ENGINE_SECRET, SECRET, TZ, cli, mint_token, start_gunicorn
from dialerapi.plumbing import clock
from dialerapi.plumbing.db import connect, get_db, queries
from dialerapi.rules.agents import roster
from dialerapi.rules.dialing import claims
from dialerapi.rules.leads import dialstate

NOW = DEFAULT_NOW
OWNER, OTHER = 501, 502


@pytest.fixture(autouse=True)
def fixed_now(frozen_clock):
    frozen_clock(NOW)


@pytest.fixture
def post(client, auth):
    def post(path, body):
        return client.post(path, json=body, headers=auth)

    return post


@pytest.fixture
def two_agents(floor_agent):
    floor_agent(OWNER)
    floor_agent(OTHER)


@pytest.fixture
def personal(new_lead, sql):
    """A Callback lead due at `due` waiting for `owner`, as the CRM's callback leaves it."""

    def make(oli_id, owner=OWNER, due=NOW - timedelta(minutes=1), priority_id=1, form_type="home_loan", **fields):
        new_lead(oli_id, priority_id=priority_id, form_type=form_type, **fields)
        sql("UPDATE sales_master SET dial_status = 'Callback', next_retry_at = NULL, callback_scheduled_at = %s,"
            " callback_agent_id = %s WHERE oli_id = %s", due, owner, oli_id)
        return oli_id

    return make


def owner_of(sql, oli_id):
    return sql.one("SELECT callback_agent_id FROM sales_master WHERE oli_id = %s", oli_id)["callback_agent_id"]


def claimed(run, agent_id, now=NOW):
    row = run(claims.claim_next, agent_id, now, tz=TZ)
    return row and row["oli_id"]


def set_fallback(sql, minutes):
    sql("UPDATE sales_dialer_config SET personal_callback_fallback_minutes = %s WHERE id = 1", minutes)


# --- the CRM names the owner (item 1) -------------------------------------------------------------

@pytest.mark.parametrize("path, extra", [
    ("/api/pending-callbacks", {"agentId": 777}),  # agentId: who filed it, an audit field
    ("/api/send-callback-request", {}),
])
def test_the_crm_names_the_owner_and_the_lead_keeps_it(post, sql, new_lead, floor_agent, path, extra):
    floor_agent(OWNER)
    new_lead("OLI-1")
    response = post(path, {"oliId": "OLI-1", "scheduledAt": "2026-11-21 11:00", "callbackAgentId": OWNER, **extra})
    assert response.status_code == 200, response.get_json()
    assert owner_of(sql, "OLI-1") == OWNER


@pytest.mark.parametrize("path", ["/api/pending-callbacks", "/api/send-callback-request"])
def test_an_owner_not_on_the_roster_is_404_unknown_agent_and_nothing_is_stored(post, sql, new_lead, path):
    new_lead("OLI-1")
    before = sql.lead("OLI-1")
    response = post(path, {"oliId": "OLI-1", "scheduledAt": "2026-11-21 11:00", "callbackAgentId": 999})
    assert response.status_code == 404
    assert response.get_json() == {"ok": False, "error": "unknown_agent"}
    assert sql.lead("OLI-1") == before and owner_of(sql, "OLI-1") is None
    assert sql.one("SELECT COUNT(*) AS n FROM sales_pending_actions")["n"] == 0


@pytest.mark.parametrize("value", ["501", -1, 0, 1.5, True])
def test_a_malformed_owner_is_400_naming_callbackAgentId(post, new_lead, value):
    new_lead("OLI-1")
    response = post("/api/pending-callbacks", {"oliId": "OLI-1", "scheduledAt": "2026-11-21 11:00",
                                               "callbackAgentId": value})
    assert response.status_code == 400
    assert {d["field"] for d in response.get_json()["details"]} == {"callbackAgentId"}


def test_without_an_owner_a_callback_is_anyones_and_agentId_stays_an_audit_field(post, sql, new_lead, two_agents, run):
    new_lead("OLI-1")
    response = post("/api/pending-callbacks", {"oliId": "OLI-1", "scheduledAt": "2026-11-21 09:58", "agentId": OWNER})
    assert response.status_code == 200
    assert owner_of(sql, "OLI-1") is None
    assert claimed(run, OTHER) == "OLI-1"


def test_a_held_callback_keeps_its_owner_until_settle_applies_it(post, sql, new_lead, floor_agent, make_live, run):
    floor_agent(OWNER)
    new_lead("OLI-1")
    make_live("OLI-1")
    response = post("/api/pending-callbacks", {"oliId": "OLI-1", "scheduledAt": "2026-11-21 11:00",
                                               "callbackAgentId": OWNER})
    assert response.status_code == 202
    assert sql.one("SELECT callbackAgentId FROM sales_pending_actions")["callbackAgentId"] == OWNER
    assert owner_of(sql, "OLI-1") is None
    run(dialstate.settle, "OLI-1", "answered", NOW, tz=TZ, grace_minutes=10, release_retry_ms=60000)
    lead = sql.lead("OLI-1")
    assert lead["dial_status"] == "Callback" and owner_of(sql, "OLI-1") == OWNER


@pytest.mark.parametrize("newer, owner_after", [
    ({"path": "/api/pending-callbacks", "body": {"scheduledAt": "2026-11-21 12:00"}}, None),
    ({"path": "/api/pending-callbacks", "body": {"scheduledAt": "2026-11-21 12:00", "callbackAgentId": OTHER}}, OTHER),
    ({"path": "/api/pending-dispositions", "body": {"reason": "Not interested"}}, None),
])
def test_a_newer_callback_or_disposition_supersedes_the_owner(post, sql, new_lead, two_agents, make_live, run,
                                                              newer, owner_after):
    new_lead("OLI-1")
    make_live("OLI-1")
    assert post("/api/pending-callbacks", {"oliId": "OLI-1", "scheduledAt": "2026-11-21 11:00",
                                           "callbackAgentId": OWNER}).status_code == 202
    assert post(newer["path"], {"oliId": "OLI-1", **newer["body"]}).status_code == 202
    run(dialstate.settle, "OLI-1", "answered", NOW, tz=TZ, grace_minutes=10, release_retry_ms=60000)
    assert owner_of(sql, "OLI-1") == owner_after
    # And on a lead that is not live, at once.
    post(newer["path"], {"oliId": "OLI-1", **newer["body"]})
    assert owner_of(sql, "OLI-1") == owner_after


def test_a_push_that_resets_the_lead_clears_the_owner(personal, sql, new_lead):
    personal("OLI-1")
    new_lead("OLI-1")
    assert sql.lead("OLI-1")["dial_status"] == "Pending" and owner_of(sql, "OLI-1") is None


def test_a_push_skips_a_live_lead_and_its_owner_stays(personal, sql, new_lead):
    personal("OLI-1")
    sql("UPDATE sales_master SET dial_status = 'Calling', isReserved = 1 WHERE oli_id = 'OLI-1'")
    new_lead("OLI-1")
    assert owner_of(sql, "OLI-1") == OWNER


# --- claims honour it (item 2) --------------------------------------------------------------------

def test_the_owner_claims_it_ahead_of_other_work_oldest_due_first(run, two_agents, personal, new_lead, sql):
    new_lead("FRESH")
    new_lead("ANYONES")
    sql("UPDATE sales_master SET dial_status = 'Callback', callback_scheduled_at = %s, next_retry_at = NULL"
        " WHERE oli_id = 'ANYONES'", NOW - timedelta(hours=3))
    personal("LATER", due=NOW - timedelta(minutes=1))
    personal("EARLIER", due=NOW - timedelta(minutes=5))
    personal("FUTURE", due=NOW + timedelta(minutes=5))
    assert [claimed(run, OWNER) for _ in range(4)] == ["EARLIER", "LATER", "ANYONES", "FRESH"]


def test_the_owner_takes_it_whatever_their_priority_list(run, floor_agent, personal):
    floor_agent(OWNER, priorities=(2,))
    personal("OLI-1", priority_id=1)
    assert claimed(run, OWNER) == "OLI-1"


def test_the_owner_needs_the_skill_the_lead_is_dialed_in(run, floor_agent, personal):
    floor_agent(OWNER, skills=("car_loan",))
    personal("OLI-1")
    assert claimed(run, OWNER) is None


def test_nobody_else_takes_it_before_the_fallback_not_even_a_predictive_claim(run, two_agents, personal, new_lead):
    personal("OLI-1", due=NOW - timedelta(minutes=29, seconds=59))
    assert claimed(run, OTHER) is None
    assert run(claims.claim_predictive, NOW, tz=TZ) is None
    new_lead("FRESH")
    assert claimed(run, OTHER) == "FRESH", "the other agent's claim goes past it to other work"


@pytest.mark.parametrize("minutes, due_ago, taken", [
    (30, timedelta(minutes=30), True),
    (30, timedelta(minutes=29), False),
    (0, timedelta(seconds=0), True),
    (None, timedelta(days=3), False),
])
def test_after_the_fallback_anyone_with_the_skill_takes_it(run, two_agents, personal, sql, minutes, due_ago, taken):
    set_fallback(sql, minutes)
    personal("OLI-1", due=NOW - due_ago)
    assert claimed(run, OTHER) == ("OLI-1" if taken else None)


def test_another_agents_claim_never_waits_on_an_owners_callback_it_may_not_take(app, two_agents, personal,
                                                                               database_url):
    """The owner's callback is left out of the other agents' candidate reads (claims.sql
    due_candidates), so a transaction holding it (a CRM action, the owner's claim) never holds them up."""
    personal("OLI-1")
    holder = connect(database_url)
    holder.begin()
    list(queries.lock_leads(holder, oli_ids=("OLI-1",)))
    result = {}

    def claim():
        with app.app_context():
            result["row"] = get_db().run(claims.claim_next, OTHER, NOW, tz=TZ)

    claimer = threading.Thread(target=claim)
    claimer.start()
    claimer.join(timeout=20)
    answered_while_held = not claimer.is_alive()
    holder.rollback()
    holder.close()
    claimer.join()
    assert answered_while_held, "the other agent's claim waited for the owner's callback"
    assert result == {"row": None}


def test_after_the_fallback_a_predictive_claim_takes_it_too(run, two_agents, personal):
    personal("OLI-1", due=NOW - timedelta(minutes=31))
    assert run(claims.claim_predictive, NOW, tz=TZ)["oli_id"] == "OLI-1"


def test_the_owner_leaving_the_roster_hands_it_to_anyone_at_once(run, two_agents, personal, sql, post, new_lead,
                                                                 make_live):
    set_fallback(sql, None)
    personal("OLI-1")
    new_lead("HELD")
    make_live("HELD")
    assert post("/api/pending-callbacks", {"oliId": "HELD", "scheduledAt": "2026-11-21 09:58",
                                           "callbackAgentId": OWNER}).status_code == 202
    run(roster.remove_agent, OWNER, NOW)
    assert owner_of(sql, "OLI-1") is None
    assert sql.one("SELECT callbackAgentId FROM sales_pending_actions")["callbackAgentId"] is None
    assert claimed(run, OTHER) == "OLI-1"


@pytest.mark.parametrize("claimer, outcome", [(OWNER, "no_answer"), (OWNER, "answered"), (OTHER, "busy")])
def test_the_end_of_its_call_ends_the_ownership_whoever_claimed_it(run, two_agents, personal, sql, claimer, outcome):
    set_fallback(sql, 0)
    personal("OLI-1")
    assert claimed(run, claimer) == "OLI-1"
    assert owner_of(sql, "OLI-1") == OWNER, "kept while the call is live"
    told_before = sql.one("SELECT COALESCE(MAX(id), 0) AS id FROM dialerapi_outbox")["id"]
    run(dialstate.settle, "OLI-1", outcome, NOW, tz=TZ, grace_minutes=10, release_retry_ms=60000, agent_id=claimer)
    assert owner_of(sql, "OLI-1") is None
    assert OWNER in {row["agent_id"] for row in sql("SELECT agent_id FROM dialerapi_outbox WHERE id > %s", told_before)}


def test_a_released_reservation_ends_the_ownership_too(run, two_agents, personal, sql):
    personal("OLI-1")
    lead = run(claims.claim_next, OWNER, NOW, tz=TZ)
    run(dialstate.release, "OLI-1", NOW, tz=TZ, grace_minutes=10, release_retry_ms=1000,
        reservation_id=lead["reservation_id"])
    assert owner_of(sql, "OLI-1") is None


@pytest.mark.parametrize("change, reason", [
    ("UPDATE sales_agents SET pause_code = 'tea' WHERE id = 501", "paused"),
    ("UPDATE sales_agents SET outbound_blocked = 1 WHERE id = 501", "outbound_blocked"),
    ("UPDATE sales_dialer_config SET isMaintainance = 1", "maintenance"),
])
def test_never_for_an_owner_paused_or_blocked_nor_in_maintenance(run, two_agents, personal, sql, change, reason):
    personal("OLI-1")
    sql(change)
    with pytest.raises(claims.NotClaimable) as refused:
        claimed(run, OWNER)
    assert refused.value.reason == reason
    assert sql.lead("OLI-1")["isReserved"] == 0


def test_never_against_do_not_call(run, two_agents, personal, sql):
    personal("OLI-1")
    sql("UPDATE sales_master SET do_not_call = 1 WHERE oli_id = 'OLI-1'")
    assert claimed(run, OWNER) is None


def test_never_outside_the_work_window(run, two_agents, personal, sql):
    personal("OLI-1", due=datetime(2026, 11, 21, 5, 0))
    sql("UPDATE sales_dialer_config SET outbound_obey_work_hours = 1, work_start = '09:00', work_end = '18:00'")
    assert claimed(run, OWNER, now=datetime(2026, 11, 21, 6, 0)) is None
    assert claimed(run, OWNER, now=datetime(2026, 11, 21, 9, 0)) == "OLI-1"


def test_the_owners_callback_in_an_open_zone_goes_before_other_work_past_those_in_closed_zones(
        run, two_agents, personal, new_lead, sql, frozen_clock):
    sql("UPDATE sales_dialer_config SET obey_calling_window = 1, personal_callback_fallback_minutes = NULL")
    for n in range(3):  # due first, asleep in New York
        personal(f"NY-{n}", phone_number="+1 212 555 0100", due=datetime(2026, 11, 20, 0, n))
    personal("IN-1", due=datetime(2026, 11, 21, 9, 0))
    new_lead("FRESH")
    new_york, india = ZoneInfo("America/New_York"), ZoneInfo("Asia/Kolkata")
    moment = datetime(2026, 11, 23, 3, 0, tzinfo=new_york)
    assert 9 <= moment.astimezone(india).hour < 21, "Indian calling hours, New York night"
    frozen_clock(moment)
    assert claimed(run, OWNER, now=clock.now(TZ)) == "IN-1"


def test_never_outside_the_customers_calling_window(run, two_agents, personal, sql, frozen_clock):
    personal("NY", phone_number="+1 212 555 0100", due=datetime(2026, 11, 20, 0, 0))
    sql("UPDATE sales_dialer_config SET obey_calling_window = 1")
    new_york = ZoneInfo("America/New_York")
    frozen_clock(datetime(2026, 11, 23, 3, 0, tzinfo=new_york))
    assert claimed(run, OWNER, now=clock.now(TZ)) is None
    assert sql.lead("NY")["isReserved"] == 0
    frozen_clock(datetime(2026, 11, 23, 10, 0, tzinfo=new_york))
    assert claimed(run, OWNER, now=clock.now(TZ)) == "NY"


# --- the owner sees them (item 3) -----------------------------------------------------------------

def test_get_callbacks_lists_the_owners_due_and_next_24_hours(client, auth, two_agents, personal, sql):
    personal("DUE", due=NOW - timedelta(minutes=10))
    personal("PAST", due=NOW - timedelta(minutes=45))
    personal("SOON", due=NOW + timedelta(hours=2))
    personal("TOMORROW", due=NOW + timedelta(hours=24, minutes=1))
    personal("THEIRS", owner=OTHER)
    response = client.get("/api/callbacks?agentId=501", headers=auth)
    assert response.status_code == 200
    body = response.get_json()
    assert body["agent_id"] == OWNER and body["fallback_minutes"] == 30
    assert [(i["oli_id"], i["due"], i["minutes_until_fallback"]) for i in body["items"]] == [
        ("PAST", True, 0), ("DUE", True, 20), ("SOON", False, 150)]
    first = body["items"][0]
    assert first == {"oli_id": "PAST", "data_id": sql.lead("PAST")["data_id"], "client_name": "Meena Sundaram",
                     "form_type": "home_loan", "callback_scheduled_at": "2026-11-21 09:15:00", "due": True,
                     "seconds_until_due": 0, "fallback_minutes": 30, "fallback_at": "2026-11-21 09:45:00",
                     "minutes_until_fallback": 0}
    assert body["items"][2]["seconds_until_due"] == 7200


def test_get_callbacks_with_the_agents_own_token_and_not_anothers(client, two_agents, personal, live_server):
    personal("DUE")
    token = mint_token(live_server.base_url, OWNER)
    own = client.get("/api/callbacks", headers={"Authorization": f"Bearer {token}"})
    assert own.status_code == 200 and [i["oli_id"] for i in own.get_json()["items"]] == ["DUE"]
    other = client.get(f"/api/callbacks?agentId={OTHER}", headers={"Authorization": f"Bearer {token}"})
    assert other.status_code == 403 and other.get_json()["error"] == "forbidden"
    assert client.get("/api/callbacks?agentId=999", headers={"X-API-Key": SECRET}).status_code == 404


def test_never_falling_back_says_so(client, auth, two_agents, personal, sql):
    set_fallback(sql, None)
    personal("DUE")
    body = client.get("/api/callbacks?agentId=501", headers=auth).get_json()
    assert body["fallback_minutes"] is None
    assert body["items"][0]["fallback_at"] is None and body["items"][0]["minutes_until_fallback"] is None


def frames_until(client, event, timeout=5):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        raw = client.receive(timeout=max(0.01, deadline - time.monotonic()))
        if raw is None:
            break
        message = json.loads(raw)
        if message["event"] == event:
            return message["data"]
    pytest.fail(f"no {event} within {timeout} s")


def test_the_socket_sends_the_list_on_connect_and_when_it_changes(live_server, sql, two_agents, personal, new_lead):
    personal("DUE")
    new_lead("NEW")
    token = mint_token(live_server.base_url, OWNER)
    client = Client.connect(live_server.base_url.replace("http://", "ws://") + f"/ws?token={token}")
    try:
        first = frames_until(client, "dialer.callbacks")
        assert [i["oli_id"] for i in first["items"]] == ["DUE"]
        # The CRM files a personal callback through the API of the same host (any host would do).
        response = requests.post(live_server.url("/api/pending-callbacks"), headers={"X-API-Key": SECRET},
                                 json={"oliId": "NEW", "scheduledAt": "2026-11-21 10:30", "callbackAgentId": OWNER})
        assert response.status_code == 200, response.text
        changed = frames_until(client, "dialer.callbacks")
        assert [i["oli_id"] for i in changed["items"]] == ["DUE", "NEW"]
        # The engine claims the due one for the owner and the call connects: it has left the list.
        engine = {"X-API-Key": ENGINE_SECRET}
        claim = requests.post(live_server.url("/engine/claim"), headers=engine,
                              json={"mode": "progressive", "agent_id": OWNER, "request_id": "pc-1"})
        assert claim.json()["lead"]["oli_id"] == "DUE"
        connected = requests.post(live_server.url("/engine/call-connected"), headers=engine, json={
            "oli_id": "DUE", "agent_id": OWNER, "call_type": "outbound", "request_id": "pc-2"})
        assert connected.status_code == 200, connected.text
        assert [i["oli_id"] for i in frames_until(client, "dialer.callbacks")["items"]] == ["NEW"]
    finally:
        client.close()
    # The server marks the panel inactive a moment after the close: wait, or it lands in the next test.
    deadline = time.monotonic() + 5
    while sql.one("SELECT panel_active FROM sales_agents WHERE id = %s", OWNER)["panel_active"]:
        assert time.monotonic() < deadline, "the server did not mark the closed panel inactive"
        time.sleep(0.05)


# --- the engine sees them (item 4) ----------------------------------------------------------------

def test_the_floor_counts_personal_callbacks_by_owner_state(client, two_agents, personal, sql):
    personal("FREE-1")
    personal("FREE-2", due=NOW - timedelta(minutes=29))
    personal("BUSY", owner=OTHER)
    personal("PAST", due=NOW - timedelta(minutes=31))
    personal("FUTURE", due=NOW + timedelta(minutes=1))
    sql("UPDATE sales_agents SET ami_idle = 0 WHERE id = %s", OTHER)
    response = client.post("/engine/floor", json={"form_type": "home_loan"}, headers={"X-API-Key": ENGINE_SECRET})
    (row,) = response.get_json()["form_types"]
    assert row["personal_callbacks"] == {"owner_free": 2, "owner_busy": 1, "past_fallback": 1}
    sql("UPDATE sales_agents SET pause_code = 'tea' WHERE id = %s", OWNER)
    (row,) = client.post("/engine/floor", json={"form_type": "home_loan"},
                         headers={"X-API-Key": ENGINE_SECRET}).get_json()["form_types"]
    assert row["personal_callbacks"] == {"owner_free": 0, "owner_busy": 3, "past_fallback": 1}


# --- concurrency (item 5) -------------------------------------------------------------------------

CLAIMERS = 16


OWNERS = 8
OWNED = 3


@pytest.fixture
def crowd(sql):
    """CLAIMERS free agents of home_loan (601-616); the first OWNERS own OWNED due personal callbacks
    each, and there are as many ordinary due Pending leads as the rest need for OWNED claims each:
    the agents without callbacks of their own must pass the owners' by."""
    agents_ = list(range(601, 601 + CLAIMERS))
    sql("INSERT INTO sales_agents (id, extension, name, panel_active, ami_idle) VALUES "
        + ", ".join("(%s, %s, 'Agent', 1, 1)" for _ in agents_), *[v for a in agents_ for v in (a, str(a))])
    sql("INSERT INTO sales_agent_skills (agent_id, form_type) VALUES "
        + ", ".join("(%s, 'home_loan')" for _ in agents_), *agents_)
    rows = [(f"PC-{owner}-{n}", "Callback", NOW - timedelta(minutes=n + 1), owner)
            for owner in agents_[:OWNERS] for n in range(OWNED)]
    rows += [(f"ANY-{n:02d}", "Pending", None, None) for n in range((CLAIMERS - OWNERS) * OWNED)]
    sql("INSERT INTO sales_master (oli_id, data_id, phone_number, client_name, form_type, priority_id, dial_status,"
        " callback_scheduled_at, callback_agent_id, call_count, isReserved, created_at, updated_at) VALUES "
        + ", ".join("(%s, UUID(), '9876543210', 'Lead', 'home_loan', 1, %s, %s, %s, 0, 0, %s, %s)" for _ in rows),
        *[v for row in rows for v in (*row, NOW, NOW)])
    return agents_


def check_owners_only(sql, taken):
    """Each personal callback went to its owner, none twice, in the database as in the answers."""
    got = [oli_id for _, oli_id in taken]
    assert None not in got and len(got) == len(set(got)), taken
    for agent_id, oli_id in taken:
        if oli_id.startswith("PC-"):
            assert oli_id.split("-")[1] == str(agent_id), f"{oli_id} went to {agent_id}"
    live = sql("SELECT oli_id FROM sales_master WHERE dial_status = 'Calling' AND isReserved = 1")
    assert sorted(row["oli_id"] for row in live) == sorted(got)


def test_sixteen_agents_at_once_each_personal_callback_goes_to_its_owner_only(app, sql, crowd):
    def claim(agent_id):
        with app.app_context():
            row = get_db().run(claims.claim_next, agent_id, NOW, tz=TZ)
            return agent_id, row and row["oli_id"]

    taken = []
    for _ in range(OWNED):
        taken += at_once(claim, crowd)
    check_owners_only(sql, taken)
    assert sorted(oli_id for _, oli_id in taken if oli_id.startswith("PC-")) == sorted(
        f"PC-{owner}-{n}" for owner in crowd[:OWNERS] for n in range(OWNED))


def test_sixteen_agents_through_two_gunicorn_hosts_each_personal_callback_to_its_owner(
        live_server, database_url, tmp_path, sql, crowd):
    second = start_gunicorn(database_url, tmp_path / "second.log")
    try:
        hosts = [live_server, second]

        def claim(agent_id):
            host = hosts[agent_id % 2]
            body = {"mode": "progressive", "agent_id": agent_id, "request_id": f"pc-{agent_id}-{round_}"}
            response = requests.post(host.url("/engine/claim"), json=body, headers={"X-API-Key": ENGINE_SECRET},
                                     timeout=30)
            assert response.status_code == 200, response.text
            lead = response.json()["lead"]
            return agent_id, lead and lead["oli_id"]

        taken = []
        for round_ in range(OWNED):
            taken += at_once(claim, crowd)
        check_owners_only(sql, taken)
    finally:
        second.stop()


# --- the setting ----------------------------------------------------------------------------------

@pytest.mark.long
def test_the_fallback_is_a_floor_setting_the_cli_sets_and_empty_means_never(database_url, sql):
    result = cli(database_url, "config", "set", "personal_callback_fallback_minutes=5")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["personal_callback_fallback_minutes"] == 5
    result = cli(database_url, "config", "set", "personal_callback_fallback_minutes=")
    assert result.returncode == 0, result.stderr
    assert sql.one("SELECT personal_callback_fallback_minutes AS m FROM sales_dialer_config")["m"] is None
    refused = cli(database_url, "config", "set", "personal_callback_fallback_minutes=-1")
    assert refused.returncode == 2 and "personal_callback_fallback_minutes" in refused.stderr
    assert sql.one("SELECT personal_callback_fallback_minutes AS m FROM sales_dialer_config")["m"] is None
