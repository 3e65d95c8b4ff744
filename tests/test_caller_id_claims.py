"""The caller ID an outbound claim presents (docs/operations/caller-ids.md; rules.caller_ids.choice):
once the floor has numbers, every progressive, predictive and redial claim answers
`caller_id: {number, pool, match}` chosen in its transaction by its campaign's chain (the lead's
area code, the longest prefix winning; its state; the pool), the number presented least today
first, ties to the lowest id; flagged, retired and capped numbers never; a refusing campaign
passes the lead over or refuses the redial with caller_id_exhausted; 16 claimers released at once
never push a number past its cap (checked against the call records). lead-intake-api.md "Claim
and retry rules"."""

import json
from datetime import timedelta

import pytest

from conftest import DEFAULT_NOW, ENGINE_SECRET, TZ, progressive_claims_at_once, set_presented
from dialerapi.plumbing.db import get_db
from dialerapi.rules.caller_ids import numbers, pools
from dialerapi.rules.campaigns import operations
from dialerapi.rules.dialing import claims, crm_actions
from dialerapi.rules.leads import dialstate

NOW = DEFAULT_NOW
ENGINE = {"Authorization": f"Bearer {ENGINE_SECRET}"}


def add(run, number, pools=("default",), **options):
    run(numbers.add, number, list(pools), NOW, "cli", **options)


def claim(run, agent_id=501, now=NOW):
    """(oli_id, the caller ID answer) of a progressive claim, or None."""
    row = run(claims.claim_next, agent_id, now, tz=TZ)
    return row and (row["oli_id"], row["caller_id_choice"])


def settle(run, oli_id, outcome="no_answer", now=NOW + timedelta(seconds=30)):
    return run(dialstate.settle, oli_id, outcome, now, tz=TZ, grace_minutes=10, release_retry_ms=60000)


def campaign(run, **settings):
    run(operations.update, "home_loan", settings, NOW, "cli")


def presented(sql, number):
    return sql.one("SELECT presented_today FROM dialerapi_caller_ids WHERE number = %s", number)["presented_today"]


def test_a_floor_without_caller_ids_presents_none(new_lead, floor_agent, run):
    floor_agent(501)
    new_lead("HOME-1", phone_number="+1 919 555 1234")
    assert claim(run) == ("HOME-1", None)


def test_area_code_then_state_then_pool_the_least_presented_first(new_lead, floor_agent, run, sql):
    floor_agent(501)
    for number in ("+19195550100", "+19195550101", "+13055550100"):
        add(run, number)
    add(run, "+19195550199", pools=("other",))
    new_lead("RALEIGH-1", phone_number="+1 919 555 1234")
    new_lead("RALEIGH-2", phone_number="+1 919 555 4321")
    new_lead("DURHAM-1", phone_number="+1 984 555 1234")
    new_lead("SF-1", phone_number="+1 415 555 1234")
    picks = []
    for _ in range(4):
        oli_id, caller_id = claim(run)
        picks.append((oli_id, caller_id["number"], caller_id["match"], caller_id["pool"]))
        settle(run, oli_id)
    assert picks == [
        ("RALEIGH-1", "+19195550100", "area_code", "default"),
        ("RALEIGH-2", "+19195550101", "area_code", "default"),  # 0100 presented once already
        ("DURHAM-1", "+19195550100", "state", "default"),  # 984 is North Carolina; ties to the lowest id
        ("SF-1", "+13055550100", "pool", "default"),  # presented least of the pool
    ]
    assert (presented(sql, 19195550100), presented(sql, 19195550101), presented(sql, 13055550100),
            presented(sql, 19195550199)) == (2, 1, 1, 0)
    calls = sql("SELECT oli_id, caller_id FROM sales_call_attempts ORDER BY id")
    assert [(row["oli_id"], row["caller_id"]) for row in calls] == [
        ("RALEIGH-1", 19195550100), ("RALEIGH-2", 19195550101), ("DURHAM-1", 19195550100), ("SF-1", 13055550100)]
    event = sql.one("SELECT body FROM dialerapi_lead_events WHERE type = 'lead.call_ended' AND oli_id = 'SF-1'")
    assert json.loads(event["body"])["caller_id"] == "+13055550100"


def test_the_state_tier_is_the_region_the_crm_gave_not_the_numbers_area_code(new_lead, floor_agent, run, client):
    """A customer who moved keeps their number: the state match reads the lead's place as its calling
    rules do (the CRM's region first; rules.compliance.places), on a progressive claim and a redial."""
    floor_agent(501)
    add(run, "+13055550100")  # Florida
    add(run, "+15185550100")  # New York, as the lead's 212 is
    new_lead("MOVED-1", phone_number="+1 212 555 1234", region="US-FL")
    new_lead("MOVED-2", phone_number="+1 212 555 4321", region="US-FL")
    assert claim(run)[1] == {"number": "+13055550100", "pool": "default", "match": "state"}
    redial = client.post("/engine/claim", headers=ENGINE, json={
        "mode": "redial", "agent_id": 501, "oli_id": "MOVED-2", "request_id": "moved-2"})
    assert redial.status_code == 200, redial.get_json()
    assert redial.get_json()["caller_id"] == {"number": "+13055550100", "pool": "default", "match": "state"}


def test_the_longest_area_prefix_wins_over_a_less_presented_shorter_one(new_lead, floor_agent, run, sql):
    floor_agent(501)
    add(run, "+441387123456")  # area code 1387 (Dumfries)
    add(run, "+441387312345")  # area code 13873 (Langholm)
    set_presented(sql, 441387312345, 5)
    new_lead("LANGHOLM-1", phone_number="+44 13873 99999")
    assert claim(run)[1] == {"number": "+441387312345", "pool": "default", "match": "area_code"}


def test_a_number_added_between_two_claims_is_matched_by_the_next(new_lead, floor_agent, run):
    """Each host reads a pool's area prefixes and regions again after a change of the floor's numbers
    (docs/operations/caller-ids.md, "What it costs")."""
    floor_agent(501)
    add(run, "+13055550100")
    new_lead("RALEIGH-1", phone_number="+1 919 555 1234")
    new_lead("RALEIGH-2", phone_number="+1 919 555 4321")
    assert claim(run)[1] == {"number": "+13055550100", "pool": "default", "match": "pool"}
    add(run, "+19195550100")
    assert claim(run)[1] == {"number": "+19195550100", "pool": "default", "match": "area_code"}


def test_a_new_day_ranks_the_numbers_not_presented_yet_as_none_today(new_lead, floor_agent, run, sql):
    """The caller_id_day job (pools.start_day): yesterday's ranks no longer order today's ties."""
    floor_agent(501)
    for number in ("+19195550100", "+19195550101", "+19195550102"):
        add(run, number)
    yesterday = (NOW - timedelta(days=1)).date()
    set_presented(sql, 19195550100, 9, yesterday)
    set_presented(sql, 19195550101, 3, yesterday)
    assert run(pools.start_day, NOW) == 2, "the rows of yesterday; 0102 was added today"
    ranks = [row["presented_rank"] for row in sql("SELECT presented_rank FROM dialerapi_caller_id_pools"
                                                  " ORDER BY caller_id")]
    assert ranks == [numbers.day_key(NOW.date())] * 3
    assert run(pools.start_day, NOW) == 0
    new_lead("RALEIGH-1", phone_number="+1 919 555 1234")
    assert claim(run)[1]["number"] == "+19195550100", "none presented today: the lowest id"


def test_flagged_retired_and_capped_numbers_are_never_presented_and_a_new_day_starts_at_zero(
        new_lead, floor_agent, run, sql, client, auth):
    floor_agent(501)
    add(run, "+19195550100", daily_cap=1)
    add(run, "+19195550101")
    add(run, "+19195550102")
    assert client.patch("/api/caller-ids/+19195550101", headers=auth, json={"state": "flagged"}).status_code == 200
    run(numbers.change, "+19195550102", {"state": "retired"}, NOW, "cli")
    campaign(run, caller_id_match=["area_code"])
    for n in range(3):
        new_lead(f"RALEIGH-{n}", phone_number=f"+1 919 555 123{n}")
    assert claim(run) == ("RALEIGH-0", {"number": "+19195550100", "pool": "default", "match": "area_code"})
    settle(run, "RALEIGH-0")
    assert claim(run, now=NOW + timedelta(minutes=1)) is None, "at its cap, and the others may not present"
    assert sql.one("SELECT COUNT(*) AS n FROM sales_master WHERE isReserved = 1")["n"] == 0
    tomorrow = NOW + timedelta(days=1)
    assert claim(run, now=tomorrow)[1]["number"] == "+19195550100", "a new calendar day counts from 0"
    assert presented(sql, 19195550100) == 1 and presented(sql, 19195550101) == 0 and presented(sql, 19195550102) == 0


def test_a_refusing_campaign_refuses_a_redial_with_its_pool_and_a_default_fallback_presents_the_default(
        new_lead, floor_agent, run, client, sql):
    floor_agent(502)
    add(run, "+19195550100", pools=("raleigh",))
    add(run, "+13055550100", pools=("miami",))
    campaign(run, caller_id_pool="raleigh", caller_id_match=["area_code"])
    new_lead("SF-1", phone_number="+1 415 555 1234")
    refused = client.post("/engine/claim", headers=ENGINE, json={
        "mode": "redial", "agent_id": 502, "oli_id": "SF-1", "request_id": "r-1"})
    assert refused.status_code == 409
    assert refused.get_json() == {"ok": False, "error": "not_claimable", "reason": "caller_id_exhausted",
                                  "pool": "raleigh"}
    campaign(run, caller_id_fallback="default", caller_id_default="+13055550100")
    redial = client.post("/engine/claim", headers=ENGINE, json={
        "mode": "redial", "agent_id": 502, "oli_id": "SF-1", "request_id": "r-2"})
    assert redial.status_code == 200
    assert redial.get_json()["caller_id"] == {"number": "+13055550100", "pool": "raleigh", "match": "default"}
    assert sql.one("SELECT caller_id FROM sales_master WHERE oli_id = 'SF-1'")["caller_id"] == 13055550100


def test_a_sticky_campaign_presents_the_number_the_lead_last_saw_and_an_inbound_call_presents_none(
        new_lead, floor_agent, run, client, sql):
    floor_agent(501)
    add(run, "+19195550100")
    add(run, "+19195550101")
    campaign(run, caller_id_sticky=True)
    new_lead("RALEIGH-1", phone_number="+1 919 555 1234")
    assert claim(run)[1]["number"] == "+19195550100"
    settle(run, "RALEIGH-1")
    again = claim(run, now=NOW + timedelta(hours=2))
    assert again == ("RALEIGH-1", {"number": "+19195550100", "pool": "default", "match": "sticky"}), \
        "0101 is presented less, but the lead saw 0100"
    settle(run, "RALEIGH-1", now=NOW + timedelta(hours=2, seconds=30))
    inbound = client.post("/engine/claim", headers=ENGINE, json={
        "mode": "inbound", "agent_id": 501, "oli_id": "RALEIGH-1", "request_id": "i-1"})
    assert inbound.status_code == 200 and inbound.get_json()["caller_id"] is None
    assert presented(sql, 19195550100) == 2


def test_an_originate_that_failed_gives_its_count_back(new_lead, floor_agent, run, sql):
    floor_agent(501)
    add(run, "+19195550100")
    new_lead("RALEIGH-1", phone_number="+1 919 555 1234")
    assert claim(run)[1]["number"] == "+19195550100"
    assert presented(sql, 19195550100) == 1
    settle(run, "RALEIGH-1", outcome="originate_failed")
    assert presented(sql, 19195550100) == 0
    assert sql.one("SELECT caller_id FROM sales_call_attempts")["caller_id"] == 19195550100


def test_a_reservation_the_lease_released_stays_counted(app, new_lead, floor_agent, run, sql):
    """The phone may have rung before the engine went silent (docs/operations/caller-ids.md)."""
    floor_agent(501)
    add(run, "+19195550100")
    new_lead("RALEIGH-1", phone_number="+1 919 555 1234")
    assert claim(run)[1]["number"] == "+19195550100"
    with app.app_context():
        released = crm_actions.release_expired(get_db(), NOW + timedelta(hours=4), TZ, lease_seconds=4 * 3600,
                                               grace_minutes=10, release_retry_ms=60000)
    assert released == ["RALEIGH-1"]
    assert sql.lead("RALEIGH-1")["isReserved"] == 0
    assert presented(sql, 19195550100) == 1


def test_sixteen_claimers_at_once_never_push_a_number_past_its_cap(app, new_lead, floor_agent, run, sql):
    """16 claimers released at once on 16 due leads of one area code, whose three numbers may
    present 4 calls each today: exactly 12 are served, each number presented exactly 4 times,
    checked against the leads and, once the calls settle, against the call records."""
    for agent_id in range(501, 517):
        floor_agent(agent_id)
    for number in ("+19195550100", "+19195550101", "+19195550102"):
        add(run, number, daily_cap=4)
    for n in range(16):
        new_lead(f"RALEIGH-{n:02d}", phone_number=f"+1 919 555 {2000 + n}")
    got, errors = progressive_claims_at_once(app, range(501, 517), NOW)
    assert not errors
    served = [oli_id for oli_id in got if oli_id]
    assert len(served) == 12 and len(set(served)) == 12
    by_number = sql("SELECT caller_id, COUNT(*) AS n FROM sales_master WHERE isReserved = 1 GROUP BY caller_id")
    assert {row["caller_id"]: row["n"] for row in by_number} == {19195550100: 4, 19195550101: 4, 19195550102: 4}
    for oli_id in served:
        settle(run, oli_id)
    calls = sql("SELECT caller_id, COUNT(*) AS n FROM sales_call_attempts GROUP BY caller_id")
    assert {row["caller_id"]: row["n"] for row in calls} == {19195550100: 4, 19195550101: 4, 19195550102: 4}
    assert [presented(sql, number) for number in (19195550100, 19195550101, 19195550102)] == [4, 4, 4]


@pytest.mark.parametrize("settings, field", [
    ({"caller_id_match": ["pool", "area_code"]}, "caller_id_match"),
    ({"caller_id_fallback": "default"}, "caller_id_fallback"),
    ({"caller_id_default": "9195550100"}, "caller_id_default"),
    ({"caller_id_pool": "Raleigh Pool"}, "caller_id_pool"),
    ({"caller_id_sticky": "sometimes"}, "caller_id_sticky"),
])
def test_a_wrong_caller_id_setting_is_refused_naming_it(client, auth, settings, field):
    answer = client.patch("/api/campaigns/home_loan", headers=auth, json=settings)
    assert answer.status_code == 400 and [detail["field"] for detail in answer.get_json()["details"]] == [field]


def test_a_campaign_answers_its_caller_id_rule(client, auth):
    changed = client.patch("/api/campaigns/home_loan", headers=auth, json={
        "caller_id_pool": "raleigh", "caller_id_match": ["area_code", "pool"], "caller_id_sticky": True})
    assert changed.status_code == 200, changed.get_json()
    effective = changed.get_json()["campaign"]["effective"]
    assert {name: effective[name] for name in effective if name.startswith("caller_id")} == {
        "caller_id_pool": "raleigh", "caller_id_match": ["area_code", "pool"], "caller_id_fallback": "refuse",
        "caller_id_default": None, "caller_id_sticky": True}


def return_call(client, request_id, phone_number, dialed_number=None, agent_id=501):
    body = {"mode": "inbound", "agent_id": agent_id, "request_id": request_id, "phone_number": phone_number}
    if dialed_number:
        body["dialed_number"] = dialed_number
    return client.post("/engine/claim", headers=ENGINE, json=body)


def test_a_return_call_finds_the_lead_called_from_the_number_dialed_else_the_latest(
        new_lead, floor_agent, run, client, sql):
    """Item 4: the customer dials back the caller ID they saw; the engine knows only the two numbers."""
    floor_agent(501)
    floor_agent(502)
    add(run, "+19195550100")
    add(run, "+19195550101")
    new_lead("LOAN-1", phone_number="+1 919 555 1234")
    new_lead("CARD-1", phone_number="+1 919 555 1234")
    assert claim(run, 501)[1]["number"] == "+19195550100"
    settle(run, "LOAN-1")
    assert claim(run, 502, now=NOW + timedelta(minutes=1)) == (
        "CARD-1", {"number": "+19195550101", "pool": "default", "match": "area_code"})
    settle(run, "CARD-1", now=NOW + timedelta(minutes=1, seconds=30))
    assert sql.one("SELECT caller_id FROM sales_call_attempts WHERE oli_id = 'CARD-1'")["caller_id"] == 19195550101
    first = return_call(client, "rc-1", "+1 919 555 1234", "+19195550100")
    assert first.status_code == 200, first.get_json()
    assert first.get_json()["lead"]["oli_id"] == "LOAN-1" and first.get_json()["caller_id"] is None
    run(dialstate.settle, "LOAN-1", "answered", NOW + timedelta(minutes=5), tz=TZ, grace_minutes=10,
        release_retry_ms=60000, call_type="inbound", agent_id=501)
    unknown = return_call(client, "rc-2", "19195551234", "+15555550100")
    assert unknown.get_json()["lead"]["oli_id"] == "LOAN-1", "an unknown number still rings: the latest lead"
    run(dialstate.settle, "LOAN-1", "answered", NOW + timedelta(minutes=6), tz=TZ, grace_minutes=10,
        release_retry_ms=60000, call_type="inbound", agent_id=501)
    stranger = return_call(client, "rc-3", "+1 415 555 9999", "+19195550100")
    assert stranger.status_code == 200 and stranger.get_json() == {"ok": True, "lead": None, "caller_id": None}


@pytest.mark.parametrize("body, field", [
    ({"oli_id": "LOAN-1", "phone_number": "+1 919 555 1234"}, "oli_id"),
    ({}, "oli_id"),
    ({"oli_id": "LOAN-1", "dialed_number": "+19195550100"}, "dialed_number"),
    ({"phone_number": "12"}, "phone_number"),
])
def test_an_inbound_claim_names_one_lead(client, body, field):
    answer = client.post("/engine/claim", headers=ENGINE, json={"mode": "inbound", "agent_id": 501,
                                                               "request_id": "rc-x", **body})
    assert answer.status_code == 400 and [detail["field"] for detail in answer.get_json()["details"]] == [field]
