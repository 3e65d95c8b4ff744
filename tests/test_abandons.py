"""The abandon rate the law counts, per campaign (issue #37; docs/compliance/abandon-rate.md "Abandon rate").

Every call's record proves itself (item 1); the counts follow the rules (item 2) in each window
(item 3) and agree, in POST /engine/floor, /metrics and `dialerapi report abandons` (item 4), with a
count made here over sales_call_attempts in plain SQL; a predictive claim over the limit answers
409 abandon_limit while a progressive one is served (item 5); 16 engines through two gunicorns lose
and double no count (item 6). Calls are played through the rules (bridge, call-connected, settle)
on the service clock, moved by the test (decisions.md D2).
"""

import csv
import io
import json
import random
import threading
from datetime import datetime, timedelta

import pytest
import requests
from docs_examples import answers, example

from conftest import (
    DEFAULT_NOW,
    ENGINE_SECRET,
    MONITOR_SECRET,
    SECRET,
    TZ,
    Sql,
    cli,
    make_app,
    set_clock,
    start_gunicorn,
)
from dialerapi.plumbing import clock, migrate
from dialerapi.plumbing.db import get_db, queries
from dialerapi.rules.agents import roster
from dialerapi.rules.campaigns import operations
from dialerapi.rules.compliance import abandons
from dialerapi.rules.config import dialer as dialer_config
from dialerapi.rules.leads import dialstate
from dialerapi.upkeep import jobs

NOW = DEFAULT_NOW
ENGINE = {"X-API-Key": ENGINE_SECRET}
ZERO = {"answered": 0, "abandoned": 0, "late_connects": 0, "machines": 0, "rate": 0.0}


@pytest.fixture
def floor(sql, floor_agent):
    """Agents 501 (home_loan) and 502 (credit_card), free."""
    floor_agent(501, skills=("home_loan",))
    floor_agent(502, skills=("credit_card",))


@pytest.fixture
def play(sql, run, tz):
    """Play one call of a new lead and settle it: play(outcome, at=..., answered=seconds after the
    claim or None, connected=seconds after the claim or None, form_type=...). The lead is claimed
    at `at` (a predictive claim's reservation) and settled 60 s later."""
    made = iter(range(1, 100000))

    def call(outcome, at=NOW, answered=None, connected=None, form_type="home_loan", agent_id=None):
        oli_id = f"CALL-{next(made):05d}"
        sql("INSERT INTO sales_master (oli_id, data_id, phone_number, client_name, form_type, priority_id, dial_status,"
            " previous_dial_status, isReserved, reservation_id, reserved_at, created_at, updated_at) VALUES (%s, UUID(),"
            " '9876543210', 'Meena Sundaram', %s, 2, 'Calling', 'Pending', 1, UUID(), %s, %s, %s)",
            oli_id, form_type, at, at, at)
        agent_id = agent_id or (501 if form_type == "home_loan" else 502)
        if answered is not None:
            set_clock(at + timedelta(seconds=answered))
            run(roster.bridge, oli_id, clock.now(tz))
        if connected is not None:
            set_clock(at + timedelta(seconds=connected))
            run(roster.open_missed_activity, oli_id, agent_id, clock.now(tz), tz)
        set_clock(at + timedelta(seconds=60))
        run(dialstate.settle, oli_id, outcome, clock.now(tz), tz=tz, grace_minutes=5, release_retry_ms=1000,
            agent_id=agent_id if connected is not None else None, started_at=at)
        sql("UPDATE sales_agents SET ami_idle = 1")
        return oli_id

    return call


def recorded(sql, now, form_type=None, seconds=2, since=None, day=None):
    """The count over the call records, in SQL written here: answered = outcome answered or
    abandoned; abandoned = abandoned + answered with the agent more than `seconds` after the answer."""
    where, params = ["ended_at <= %s"], [now]
    if since is not None:
        where.append("ended_at >= %s")
        params.append(since)
    if day is not None:
        where.append("DATE(ended_at) = %s")
        params.append(day)
    if form_type is not None:
        where.append("form_type = %s")
        params.append(form_type)
    row = sql.one(
        "SELECT COUNT(*) AS calls, COALESCE(SUM(result IN ('ANSWER', 'ABANDON')), 0) AS answered,"
        " COALESCE(SUM(result = 'ABANDON' OR (result = 'ANSWER'"
        "   AND TIMESTAMPDIFF(SECOND, answered_at, agent_connected_at) > %s)), 0) AS abandoned,"
        " COALESCE(SUM(result = 'ANSWER' AND TIMESTAMPDIFF(SECOND, answered_at, agent_connected_at) > %s), 0)"
        "   AS late_connects, COALESCE(SUM(result = 'MACHINE'), 0) AS machines"
        f" FROM sales_call_attempts WHERE {' AND '.join(where)}", seconds, seconds, *params)
    answered, abandoned = int(row["answered"]), int(row["abandoned"])
    return {"answered": answered, "abandoned": abandoned, "late_connects": int(row["late_connects"]),
            "machines": int(row["machines"]), "rate": round(abandoned / answered, 4) if answered else 0.0}


def recorded_windows(sql, now, form_type=None, period="30d"):
    minute = now.replace(second=0)
    today = now.replace(hour=0, minute=0, second=0)
    return {
        "15m": recorded(sql, now, form_type, since=minute - timedelta(minutes=14)),
        "today": recorded(sql, now, form_type, day=now.date()),
        "period": recorded(sql, now, form_type, since=today - timedelta(days=29) if period == "30d"
                           else minute - timedelta(minutes=1439)),
    }


def engine_floor(client, **body):
    answer = client.post("/engine/floor", json=body, headers=ENGINE)
    assert answer.status_code == 200, answer.get_json()
    return answer.get_json()


def floor_windows(client, form_type):
    groups = {g["form_type"]: g for g in engine_floor(client)["form_types"]}
    return groups[form_type]["abandons"]["windows"]


# --- item 1: the record -------------------------------------------------------------------------

def test_a_settled_call_records_its_campaign_the_answer_and_the_agent(client, sql, floor, tz, new_lead, run):
    """lead-intake-api.md "Claim and retry rules"; issue #37 item 1: the first bridge is the answer,
    the first call-connected the agent; the campaign is the one dialed, whatever a later push says."""
    new_lead("OLI-1", form_type="home_loan")
    claimed = client.post("/engine/claim", headers=ENGINE, json={
        "mode": "predictive", "form_type": "home_loan", "request_id": "c-1"}).get_json()["lead"]
    set_clock(NOW + timedelta(seconds=8))
    assert client.post("/engine/bridge", headers=ENGINE, json={"oli_id": "OLI-1", "request_id": "b-1"}).status_code == 200
    set_clock(NOW + timedelta(seconds=9))  # a second bridge of the same reservation is not a new answer
    assert client.post("/engine/bridge", headers=ENGINE, json={"oli_id": "OLI-1", "request_id": "b-2"}).status_code == 200
    set_clock(NOW + timedelta(seconds=12))
    assert client.post("/engine/call-connected", headers=ENGINE, json={
        "oli_id": "OLI-1", "agent_id": 501, "request_id": "m-1"}).status_code == 200
    set_clock(NOW + timedelta(seconds=13))
    assert client.post("/engine/call-connected", headers=ENGINE, json={
        "oli_id": "OLI-1", "agent_id": 501, "request_id": "m-2"}).status_code == 200
    set_clock(NOW + timedelta(minutes=3))
    settled = client.post("/engine/settle", headers=ENGINE, json={
        "oli_id": "OLI-1", "outcome": "answered", "agent_id": 501, "started_at": "2026-11-21 10:00:00",
        "reservation_id": claimed["reservation_id"]})
    assert settled.status_code == 200, settled.get_json()
    new_lead("OLI-1", form_type="credit_card")  # the lead moves campaign after the call

    attempt = sql.one("SELECT * FROM sales_call_attempts WHERE oli_id = 'OLI-1'")
    assert (attempt["form_type"], attempt["reservation_id"], attempt["result"]) == (
        "home_loan", claimed["reservation_id"], "ANSWER")
    assert (attempt["answered_at"], attempt["agent_connected_at"]) == (
        NOW + timedelta(seconds=8), NOW + timedelta(seconds=12))
    assert (attempt["connect_seconds"], attempt["late_connect"]) == (4, 1)
    assert sql.lead("OLI-1")["form_type"] == "credit_card"
    assert floor_windows(client, "home_loan")["today"] == {"answered": 1, "abandoned": 1, "late_connects": 1,
                                                           "machines": 0, "rate": 1.0}
    assert floor_windows(client, "credit_card")["today"] == ZERO
    # The next call of the lead starts with no moments: an unanswered call is not late.
    moments = sql.one("SELECT call_answered_at, agent_connected_at FROM sales_master WHERE oli_id = 'OLI-1'")
    assert moments == {"call_answered_at": None, "agent_connected_at": None}


def test_moments_left_by_an_earlier_reservation_are_not_this_calls(sql, floor, play, tz, run):
    """A previous release's settle does not clear the moments: the next reservation ignores the old ones."""
    oli_id = play("no_answer", at=NOW)
    sql("UPDATE sales_master SET call_answered_at = %s, agent_connected_at = %s, dial_status = 'Calling',"
        " isReserved = 1, reservation_id = UUID(), reserved_at = %s WHERE oli_id = %s",
        NOW - timedelta(hours=1), NOW - timedelta(minutes=50), NOW + timedelta(minutes=5), oli_id)
    set_clock(NOW + timedelta(minutes=5, seconds=4))
    run(roster.bridge, oli_id, clock.now(tz))
    set_clock(NOW + timedelta(minutes=6))
    run(dialstate.settle, oli_id, "answered", clock.now(tz), tz=tz, grace_minutes=5, release_retry_ms=1000)
    attempt = sql("SELECT answered_at, agent_connected_at, late_connect FROM sales_call_attempts"
                  " WHERE oli_id = %s ORDER BY id", oli_id)[-1]
    assert attempt == {"answered_at": NOW + timedelta(minutes=5, seconds=4), "agent_connected_at": None,
                       "late_connect": None}


# --- item 2: counted the way the rules count ---------------------------------------------------

@pytest.mark.parametrize("outcome, answered, abandoned", [
    ("answered", 1, 0), ("abandoned", 1, 1), ("no_answer", 0, 0), ("busy", 0, 0), ("congestion", 0, 0),
    ("rejected", 0, 0), ("cancelled", 0, 0), ("originate_failed", 0, 0), ("machine", 0, 0),
])
def test_only_live_answers_count_and_abandons_among_them(client, sql, floor, play, outcome, answered, abandoned):
    play(outcome, answered=5 if answered else None)
    expected = {"answered": answered, "abandoned": abandoned, "late_connects": 0,
                "machines": int(outcome == "machine"), "rate": 1.0 if abandoned else 0.0}
    assert floor_windows(client, "home_loan")["today"] == expected == recorded(sql, NOW + timedelta(minutes=1))


@pytest.mark.parametrize("connect_seconds, setting, late", [(2, 2, False), (3, 2, True), (5, 5, False), (6, 5, True)])
def test_an_agent_connected_more_than_abandon_connect_seconds_after_the_answer_is_an_abandon(
        client, sql, floor, play, connect_seconds, setting, late):
    sql("UPDATE sales_dialer_config SET abandon_connect_seconds = %s", setting)
    play("answered", answered=10, connected=10 + connect_seconds)
    assert floor_windows(client, "home_loan")["today"] == {
        "answered": 1, "abandoned": int(late), "late_connects": int(late), "machines": 0, "rate": float(late)}
    assert sql.one("SELECT late_connect FROM sales_call_attempts")["late_connect"] == int(late)


def test_a_progressive_call_with_no_bridge_is_never_late(client, sql, floor, play):
    play("answered", connected=30)
    assert floor_windows(client, "home_loan")["today"] == {"answered": 1, "abandoned": 0, "late_connects": 0,
                                                           "machines": 0, "rate": 0.0}


# --- item 3: windows ----------------------------------------------------------------------------

# Settle moments (claim at, settled 60 s later) around NOW = 2026-11-21 10:00: minutes, days and the
# edges of each window.
HISTORY = [timedelta(minutes=m) for m in (-3, -13, -14, -15, -16, -60, -600, -1380, -1438, -1439, -1440, -1500)] + \
    [timedelta(days=-d) for d in (1, 2, 28, 29, 30, 31, 45)] + [timedelta(minutes=-14, seconds=-30)]


@pytest.mark.parametrize("period", ["30d", "24h"])
def test_every_window_equals_a_count_over_the_call_records(client, sql, floor, play, run, period):
    sql("UPDATE sales_dialer_config SET abandon_period = %s", period)
    rng = random.Random(37)
    for offset in HISTORY:
        for form_type in ("home_loan", "credit_card"):
            outcome = rng.choice(["answered", "answered", "abandoned", "no_answer"])
            connected = rng.choice([None, 11, 14]) if outcome == "answered" else None
            play(outcome, at=NOW + offset - timedelta(seconds=60), answered=10, connected=connected,
                 form_type=form_type)
    for now in (NOW, NOW + timedelta(seconds=59), NOW + timedelta(minutes=1), NOW + timedelta(hours=14, minutes=30)):
        set_clock(now)
        state = engine_floor(client)
        # Issue #52: the windows read alone (the simulator's pacing) are the floor state's.
        alone = run(lambda conn: abandons.windows(conn, now, dialer_config.load_config(conn)))
        for group in state["form_types"]:
            assert group["abandons"]["windows"] == recorded_windows(sql, now, group["form_type"], period), (now, group)
            assert alone[group["form_type"]] == group["abandons"]["windows"]
        assert state["floor_abandons"] == recorded_windows(sql, now, None, period)
    set_clock(NOW)
    windows = floor_windows(client, "home_loan")
    assert windows["15m"]["answered"] < windows["today"]["answered"] <= windows["period"]["answered"]


# --- item 5: the limit held by the claim --------------------------------------------------------

def fill(play, answered, abandoned, form_type="home_loan"):
    for n in range(answered):
        play("abandoned" if n < abandoned else "answered", at=NOW - timedelta(minutes=30), answered=5,
             form_type=form_type)
    set_clock(NOW)


def predictive(client, request_id, form_type="home_loan"):
    answer = client.post("/engine/claim", headers=ENGINE, json={
        "mode": "predictive", "form_type": form_type, "request_id": request_id})
    return answer.status_code, answer.get_json()


def test_a_predictive_claim_over_the_limit_is_refused_and_a_progressive_one_served(client, sql, floor, play, new_lead):
    for n in range(4):
        new_lead(f"HL-{n}")
    fill(play, answered=50, abandoned=2)  # 4%: over 3% with 50 answered
    status, body = predictive(client, "p-1")
    assert (status, body["error"], body["reason"]) == (409, "not_claimable", "abandon_limit")
    assert body == answers(example("abandon-limit-refusal"))[0], "the answer docs/compliance/abandon-rate.md shows"
    figures = body["abandons"]
    assert [f["form_type"] for f in figures] == ["home_loan"]
    assert figures[0]["windows"]["today"] == {"answered": 50, "abandoned": 2, "late_connects": 0, "machines": 0,
                                                "rate": 0.04}
    assert (figures[0]["limit"], figures[0]["period"], figures[0]["over_limit"]) == (0.03, "30d", True)
    assert sql.one("SELECT COUNT(*) AS n FROM sales_master WHERE isReserved = 1 AND oli_id LIKE 'HL-%%'")["n"] == 0
    # An agent already waits: a progressive claim cannot abandon, and is served.
    progressive = client.post("/engine/claim", headers=ENGINE, json={
        "mode": "progressive", "agent_id": 501, "request_id": "g-1"}).get_json()
    assert progressive["ok"] and progressive["lead"]["oli_id"].startswith("HL-")
    # Another campaign is not held by this one's rate.
    new_lead("CC-1", form_type="credit_card")
    assert predictive(client, "p-2", "credit_card")[0] == 200


def test_a_predictive_claim_of_every_skill_leaves_out_the_form_types_over_the_limit(client, sql, floor, play, new_lead):
    new_lead("HL-1")
    new_lead("CC-1", form_type="credit_card")
    fill(play, answered=50, abandoned=3)
    answer = client.post("/engine/claim", headers=ENGINE, json={"mode": "predictive", "request_id": "p-1"}).get_json()
    assert answer["lead"]["oli_id"] == "CC-1"
    # credit_card has nothing more due: no lead; home_loan's are held by its rate.
    nothing = client.post("/engine/claim", headers=ENGINE, json={"mode": "predictive", "request_id": "p-3"})
    assert nothing.status_code == 200 and nothing.get_json()["lead"] is None
    sql("DELETE FROM sales_agent_skills WHERE form_type = 'credit_card'")
    refused = client.post("/engine/claim", headers=ENGINE, json={"mode": "predictive", "request_id": "p-4"})
    assert (refused.status_code, refused.get_json()["reason"]) == (409, "abandon_limit")


def test_the_lead_read_says_the_limit_holds_its_predictive_claims_and_not_its_progressive_ones(
        client, auth, sql, run, floor, play, new_lead, command):
    """Issue #68 item 6: `callable` is a progressive claim's answer; `callable.predictive` says
    abandon_limit while the rate holds the campaign's predictive claims back (the claim's own
    judgement: the refusal comes with it), and not_predictive when its campaign dials none so."""
    new_lead("HL-1")
    fill(play, answered=50, abandoned=2)

    def callable_of():
        response = client.get("/api/leads/HL-1", headers=auth)
        assert response.status_code == 200, response.get_json()
        return response.get_json()["lead"]["callable"]

    open_now = {"now": True, "reason": None, "rule": None, "source": None, "note": None, "next_at": None}
    found = callable_of()
    assert found == {**open_now, "predictive": {**open_now, "now": False, "reason": "abandon_limit"}}
    assert predictive(client, "p-1")[1]["reason"] == "abandon_limit"
    printed = command("leads", "why", "HL-1")
    assert printed.exit_code == 0 and "callable now\nbut not by a predictive claim: abandon_limit" in printed.output
    sql("UPDATE sales_dialer_config SET enforce_abandon_limit = 0")
    assert callable_of()["predictive"] == open_now
    run(operations.update, "home_loan", {"predictive": False}, clock.now(TZ), "test")
    assert callable_of()["predictive"] == {**open_now, "now": False, "reason": "not_predictive"}


@pytest.mark.parametrize("answered, abandoned, setting, served", [
    (49, 2, {}, True),                                   # under abandon_min_answered
    (100, 2, {}, True),                                  # 2%, and 3 / 101 if this call abandons too
    (100, 3, {}, False),                                 # exactly at 3%: at the limit is refused
    (50, 1, {}, False),                                  # 2%, but 2 / 51 (3.9%) if this call abandons
    (66, 1, {}, True),                                   # 2 / 67 = 2.99% at worst
    (50, 2, {"enforce_abandon_limit": 0}, True),         # over, but enforcement off
    (100, 4, {"abandon_limit": 0.05}, True),             # over 3%, and 5 / 101 under 5%
    (20, 1, {"abandon_min_answered": 20}, False),
])
def test_when_the_limit_holds(client, sql, floor, play, new_lead, answered, abandoned, setting, served):
    new_lead("HL-1")
    for column, value in setting.items():
        sql(f"UPDATE sales_dialer_config SET {column} = %s", value)
    fill(play, answered, abandoned)
    status, body = predictive(client, "p-1")
    assert (status == 200) is served, body


def test_the_period_holds_the_claim_after_a_quiet_today_and_claims_resume_below_the_limit(
        client, sql, floor, play, new_lead):
    new_lead("HL-1")
    for n in range(60):  # 5 days ago: 60 answered, 4 abandoned (6.7%); today nothing yet
        play("abandoned" if n < 4 else "answered", at=NOW - timedelta(days=5), answered=5)
    set_clock(NOW)
    status, body = predictive(client, "p-1")
    assert (status, body.get("reason")) == (409, "abandon_limit")
    assert body["abandons"][0]["windows"]["today"]["answered"] == 0
    # Progressive calls answered today bring the period's rate down: 4 / 160, 5 / 161 (3.1%) if the
    # next predictive call abandons: still held; 4 / 166, 5 / 167 (2.99%) at worst: served.
    for _ in range(100):
        play("answered", at=NOW - timedelta(minutes=10), connected=1)
    set_clock(NOW)
    assert predictive(client, "p-2")[1]["reason"] == "abandon_limit"
    for _ in range(6):
        play("answered", at=NOW - timedelta(minutes=10), connected=1)
    set_clock(NOW)
    assert predictive(client, "p-3")[0] == 200
    sql("UPDATE sales_dialer_config SET abandon_period = '24h'")
    assert floor_windows(client, "home_loan")["period"]["answered"] == 106


def test_minute_rows_go_after_two_days_hour_rows_after_400_and_day_rows_stay(app, sql):
    """The windows read minutes up to 24 hours back and the report hours up to a year: the prune
    job keeps what they read (and the day rows, the compliance record) and nothing else."""
    rows = [("m", NOW - timedelta(days=2)), ("m", NOW - timedelta(days=2, minutes=1)), ("h", NOW - timedelta(days=400)),
            ("h", NOW - timedelta(days=400, hours=1)), ("d", datetime(2020, 1, 1))]
    for grain, starts_at in rows:
        sql("INSERT INTO dialerapi_abandon_counts (grain, form_type, starts_at, node, calls) VALUES (%s, 'home_loan',"
            " %s, 'db:3306', 1)", grain, starts_at)
    assert jobs.prune_tick(app)["abandon_counts"] == 2
    assert [(r["grain"], r["starts_at"]) for r in sql("SELECT grain, starts_at FROM dialerapi_abandon_counts"
                                                      " ORDER BY grain, starts_at")] == \
        [("d", datetime(2020, 1, 1)), ("h", NOW - timedelta(days=400)), ("m", NOW - timedelta(days=2))]


def test_predictive_calls_no_agent_has_taken_count_as_abandons_until_one_does(
        client, sql, floor, floor_agent, play, new_lead):
    """The headroom: 1 abandoned of 100 answered; each live predictive call not yet with an agent
    (or with one late) could still be an abandon, and so could the next one dialed."""
    floor_agent(503, skills=("home_loan",))  # free while 501 takes a call
    for n in range(4):
        new_lead(f"HL-{n}")
    fill(play, answered=100, abandoned=1)
    first = predictive(client, "p-1")[1]["lead"]["oli_id"]        # at worst 2 / 101
    second = predictive(client, "p-2")[1]["lead"]["oli_id"]       # at worst 3 / 102
    status, body = predictive(client, "p-3")                      # at worst 4 / 103: over 3%
    assert (status, body["reason"], body["abandons"][0]["pending"]) == (409, "abandon_limit", 2)
    assert floor_windows(client, "home_loan")["today"]["rate"] == 0.01, "the rate itself is 1%"
    # An agent takes the first call 1 s after the answer: no longer a possible abandon.
    client.post("/engine/bridge", headers=ENGINE, json={"oli_id": first, "request_id": "b-1"})
    set_clock(NOW + timedelta(seconds=1))
    client.post("/engine/call-connected", headers=ENGINE, json={"oli_id": first, "agent_id": 501, "request_id": "m-1"})
    assert predictive(client, "p-4")[0] == 200
    # The second is taken 5 s after its answer: late, it still counts until it settles as an abandon.
    client.post("/engine/bridge", headers=ENGINE, json={"oli_id": second, "request_id": "b-2"})
    set_clock(NOW + timedelta(seconds=6))
    client.post("/engine/call-connected", headers=ENGINE, json={"oli_id": second, "agent_id": 503,
                                                                 "request_id": "m-2"})
    sql("UPDATE sales_agents SET ami_idle = 1")
    status, body = predictive(client, "p-5")
    assert (status, body["abandons"][0]["pending"]) == (409, 2)
    # The settle forgets the call's moments with the rest of its lead write (issue #52): the lead's
    # next call, predictive or not, starts with none.
    settled = client.post("/engine/settle", headers=ENGINE, json={
        "oli_id": first, "outcome": "answered", "agent_id": 501, "started_at": f"{NOW:%Y-%m-%d %H:%M:%S}"})
    assert settled.status_code == 200, settled.get_json()
    assert sql.one("SELECT call_answered_at, agent_connected_at, predictive_call FROM sales_master"
                   " WHERE oli_id = %s", first) == {"call_answered_at": None, "agent_connected_at": None,
                                                    "predictive_call": 0}


def test_a_pending_call_is_late_past_its_own_campaigns_connect_seconds(
        client, sql, run, floor, floor_agent, play, new_lead):
    """Issue #67 item 1 (the abandon rule's connect seconds): home_loan's campaign allows 10 s, the
    floor (credit_card, no campaign) 2 s. An agent taken 5 s after the answer ends a home_loan
    call's headroom but not a credit_card one's, in the claim (409 abandon_limit with `pending`)
    and in POST /engine/floor alike."""
    run(operations.update, "home_loan", {"abandon_connect_seconds": 10}, NOW, "test")
    pending = {}
    for form_type, first_agent, second_agent in (("home_loan", 501, 503), ("credit_card", 502, 504)):
        floor_agent(second_agent, skills=(form_type,))
        for n in range(4):
            new_lead(f"{form_type}-{n}", form_type=form_type)
        fill(play, answered=100, abandoned=1, form_type=form_type)
        calls = [predictive(client, f"{form_type}-p{n}", form_type)[1]["lead"]["oli_id"] for n in range(2)]
        status, body = predictive(client, f"{form_type}-full", form_type)  # at worst 4 / 103: over 3%
        assert (status, body["reason"], body["abandons"][0]["pending"]) == (409, "abandon_limit", 2)
        for oli_id, agent_id in zip(calls, (first_agent, second_agent)):
            set_clock(NOW)
            client.post("/engine/bridge", headers=ENGINE, json={"oli_id": oli_id, "request_id": f"b-{oli_id}"})
            set_clock(NOW + timedelta(seconds=5))
            client.post("/engine/call-connected", headers=ENGINE, json={
                "oli_id": oli_id, "agent_id": agent_id, "request_id": f"m-{oli_id}"})
        sql("UPDATE sales_agents SET ami_idle = 1")
        groups = {g["form_type"]: g for g in engine_floor(client)["form_types"]}
        status, body = predictive(client, f"{form_type}-after", form_type)
        pending[form_type] = (groups[form_type]["abandons"]["pending"], status,
                              body["abandons"][0]["pending"] if status == 409 else None)
    assert pending == {"home_loan": (0, 200, None), "credit_card": (2, 409, 2)}


def test_campaigns_connect_seconds_are_read_in_a_database_of_the_servers_default_collation(fresh_database, run):
    """The tables are utf8mb4_unicode_ci whatever the database's default (a MariaDB 10.11 server's
    is utf8mb4_general_ci): the claim's free_skills and /engine/floor's floor_calls compare a
    campaign's form_type with them all the same (the rolling-upgrade test found a 500 here)."""
    migrate.upgrade(fresh_database)
    app = make_app(fresh_database)
    with app.app_context():
        db = get_db()
        db.run(operations.update, "home_loan", {"abandon_connect_seconds": 10}, NOW, "test")
        sql = Sql(fresh_database)
        sql("INSERT INTO sales_agents (id, extension, name, panel_active, ami_idle) VALUES (501, 4501, 'Meena', 1, 1)")
        sql("INSERT INTO sales_agent_skills (agent_id, form_type) VALUES (501, 'home_loan')")
        sql("INSERT INTO sales_master (oli_id, data_id, phone_number, client_name, form_type, priority_id, dial_status,"
            " previous_dial_status, isReserved, reservation_id, reserved_at, predictive_call, call_answered_at,"
            " agent_connected_at, created_at, updated_at) VALUES ('CALL-1', UUID(), '9876543210', 'Meena Sundaram',"
            " 'home_loan', 2, 'Calling', 'Pending', 1, UUID(), %s, 1, %s, %s, %s, %s)",
            NOW, NOW, NOW + timedelta(seconds=5), NOW, NOW)
        config = db.run(dialer_config.load_config)
        skills = db.run(lambda conn: list(queries.free_skills(conn, now=NOW, ahead=True, form_type=None,
                                                               **abandons.limit_params(NOW, config))))
        calls = db.run(lambda conn: list(queries.floor_calls(conn, **abandons.connect_params(config))))
    assert [(row["form_type"], row["pending"]) for row in skills] == [("home_loan", 0)], "5 s is within 10"
    assert [(row["form_type"], int(row["pending"])) for row in calls] == [("home_loan", 0)]


# --- item 4: metrics, report, settings ----------------------------------------------------------

def test_metrics_show_the_rate_per_form_type_and_window(client, sql, floor, play):
    """The gauge equals the count over the call records, as the floor state does."""
    fill(play, answered=4, abandoned=1)
    play("abandoned", at=NOW - timedelta(minutes=5), answered=5, form_type="credit_card")
    set_clock(NOW)
    text = client.get("/metrics", headers={"X-API-Key": MONITOR_SECRET}).get_data(as_text=True)
    for form_type in ("home_loan", "credit_card"):
        for window, figures in recorded_windows(sql, NOW, form_type).items():
            assert f'dialerapi_abandon_rate{{form_type="{form_type}",window="{window}"}} {float(figures["rate"])}' in text
    assert 'dialerapi_abandon_rate{form_type="home_loan",window="today"} 0.25' in text
    assert 'dialerapi_abandon_rate{form_type="credit_card",window="15m"} 1.0' in text


def test_the_report_agrees_with_the_call_records_and_names_the_worst_period(database_url, sql, floor, play):
    rng = random.Random(7)
    days = [NOW - timedelta(days=d) for d in range(0, 40, 3)]
    for day in days:
        for _ in range(rng.randint(3, 8)):
            outcome = rng.choice(["answered", "answered", "answered", "abandoned", "busy"])
            play(outcome, at=day.replace(hour=rng.randint(9, 20)), answered=4,
                 connected=rng.choice([5, 9]) if outcome == "answered" else None,
                 form_type=rng.choice(["home_loan", "credit_card"]))
    result = cli(database_url, "report", "abandons", "--from", "2026-10-25", "--to", "2026-11-21", "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    for row in report["days"]:
        day = datetime.strptime(row["day"], "%Y-%m-%d")
        expected = recorded(sql, day + timedelta(days=1), None if row["form_type"] == "*" else row["form_type"],
                            day=day.date())
        calls = sql.one("SELECT COUNT(*) AS n FROM sales_call_attempts WHERE DATE(ended_at) = %s"
                        + ("" if row["form_type"] == "*" else " AND form_type = %s"),
                        *([day.date()] + ([] if row["form_type"] == "*" else [row["form_type"]])))["n"]
        assert {k: row[k] for k in expected} == expected and row["calls"] == calls, row
    assert {row["day"] for row in report["days"]} == {f"{d:%Y-%m-%d}" for d in days if d >= datetime(2026, 10, 25)}
    for highest in report["highest"]:
        form_type = None if highest["form_type"] == "*" else highest["form_type"]
        best, best_end = None, None
        for end in (datetime(2026, 10, 25, 23, 59, 59) + timedelta(days=n) for n in range(28)):
            window = recorded(sql, end, form_type, since=end.replace(hour=0) - timedelta(days=29))
            if window["answered"] and (best is None or window["rate"] > best["rate"]):
                best, best_end = window, end
        assert (highest["rate"], highest["ends"]) == (best["rate"], f"{best_end:%Y-%m-%d}"), highest
        assert highest["over_limit"] == (best["abandoned"] / best["answered"] > 0.03)
    as_csv = cli(database_url, "report", "abandons", "--from", "2026-10-25", "--to", "2026-11-21", "--csv", "-")
    rows = list(csv.DictReader(io.StringIO(as_csv.stdout)))
    assert [r["day"] for r in rows] == [r["day"] for r in report["days"]]


def test_the_report_holds_each_campaign_to_its_own_period_and_limit(database_url, sql, run, floor, play):
    """Issue #67 item 3: a campaign under Ofcom's 24 hours and 2% is reported over 24-hour periods
    against 2%; one with no campaign settings, and the floor ("*"), over the floor's 30 days and 3%."""
    run(operations.update, "home_loan", {"abandon_period": "24h", "abandon_limit": 0.02}, NOW, "test")
    for outcome in ("answered", "answered", "answered", "abandoned"):
        play(outcome, at=NOW - timedelta(days=2, hours=3), answered=4, connected=5 if outcome == "answered" else None)
    for outcome in ("answered", "answered", "abandoned"):
        play(outcome, at=NOW - timedelta(days=3), answered=4, connected=5 if outcome == "answered" else None,
             form_type="credit_card")
    result = cli(database_url, "report", "abandons", "--from", "2026-11-10", "--to", "2026-11-21", "--json")
    assert result.returncode == 0, result.stderr
    highest = {row["form_type"]: row for row in json.loads(result.stdout)["highest"]}
    home_loan = highest["home_loan"]
    assert (home_loan["period"], home_loan["limit"], home_loan["rate"], home_loan["over_limit"]) == ("24h", 0.02, 0.25, True)
    ends = datetime.strptime(home_loan["ends"], "%Y-%m-%d %H:%M:%S")
    assert recorded(sql, ends - timedelta(seconds=1), "home_loan", since=ends - timedelta(hours=24))["rate"] == 0.25
    assert NOW - timedelta(days=2, hours=3) < ends <= NOW - timedelta(days=1, hours=2), "an hour's end within 24 h of the calls"
    assert {name: (row["period"], row["limit"]) for name, row in highest.items()} == {
        "home_loan": ("24h", 0.02), "credit_card": ("30d", 0.03), "*": ("30d", 0.03)}
    # The floor's worst 30 days end on the day of the credit_card calls, before the home_loan ones.
    assert (highest["*"]["rate"], highest["*"]["ends"]) == (round(1 / 3, 4), f"{NOW - timedelta(days=3):%Y-%m-%d}")
    text = cli(database_url, "report", "abandons", "--from", "2026-11-10", "--to", "2026-11-21").stdout
    assert "highest 24h rate of home_loan: 25.00% (1/4, limit 2.00%)" in text


def test_the_report_refuses_a_range_backwards(database_url):
    result = cli(database_url, "report", "abandons", "--from", "2026-11-21", "--to", "2026-11-01")
    assert result.returncode == 2 and "--to is before --from" in result.stderr


@pytest.mark.parametrize("setting, named", [
    ("abandon_limit=0", "abandon_limit"), ("abandon_limit=0.25", "abandon_limit"), ("abandon_period=7d", "abandon_period"),
    ("abandon_connect_seconds=0", "abandon_connect_seconds"), ("abandon_connect_seconds=31", "abandon_connect_seconds"),
    ("abandon_min_answered=-1", "abandon_min_answered"), ("enforce_abandon_limit=maybe", "enforce_abandon_limit"),
    ("abandon_rate=0.03", "abandon_rate"), ("amd_false_positive_share=1.5", "amd_false_positive_share"),
])
def test_a_setting_out_of_range_is_refused_naming_it_and_nothing_is_stored(database_url, sql, setting, named):
    result = cli(database_url, "config", "set", "abandon_period=24h", setting)
    assert result.returncode == 2 and named in result.stderr, result.stderr
    assert sql.one("SELECT abandon_period FROM sales_dialer_config")["abandon_period"] == "30d"


@pytest.mark.long
def test_settings_are_set_and_shown(database_url, sql):
    result = cli(database_url, "config", "set", "abandon_limit=0.05", "abandon_period=24h", "abandon_min_answered=20",
                 "abandon_connect_seconds=3", "enforce_abandon_limit=false", "amd_false_positive_share=0.2")
    assert result.returncode == 0, result.stderr
    shown = json.loads(cli(database_url, "config", "show").stdout)
    assert shown == {"enforce_abandon_limit": False, "abandon_limit": 0.05, "abandon_period": "24h",
                     "abandon_min_answered": 20, "abandon_connect_seconds": 3,
                     "personal_callback_fallback_minutes": 30, "work_start": "09:00:00", "work_end": "21:00:00",
                     "amd_false_positive_share": 0.2, "caller_id_daily_cap": 75, "caller_id_default_pool": "default",
                     "caller_id_headroom_share": 0.1}


# --- item 6: 16 engines through two hosts -------------------------------------------------------

@pytest.fixture
def two_hosts(database_url, tmp_path):
    hosts = [start_gunicorn(database_url, tmp_path / f"gunicorn-{n}.log") for n in range(2)]
    yield hosts
    for host in hosts:
        host.stop()


def test_sixteen_engines_through_two_hosts_lose_and_double_no_count(two_hosts, client, sql, floor_agent, database_url):
    """16 engines released at once, each playing calls through one of two gunicorns: the counts in
    /engine/floor and the report equal the count over the records made here."""
    for agent_id in range(601, 617):
        floor_agent(agent_id, skills=("home_loan", "credit_card"))
    sql("UPDATE sales_dialer_config SET enforce_abandon_limit = 0")
    leads = [{"oli_id": f"L-{n:03d}", "phone_number": f"98765{n:05d}", "client_name": "Meena Sundaram",
              "form_type": ("home_loan", "credit_card")[n % 2], "priority_id": 2} for n in range(96)]
    assert client.post("/api/leads", json={"leads": leads}, headers={"X-API-Key": SECRET}).status_code == 201
    start, errors, played = threading.Barrier(16), [], []

    def engine(n):
        host, rng = two_hosts[n % 2], random.Random(n)
        start.wait()
        for round_no in range(6):
            try:
                post = lambda op, body: requests.post(host.url(f"/engine/{op}"), json=body, headers=ENGINE, timeout=30)
                lead = post("claim", {"mode": "predictive", "ahead": True,
                                      "request_id": f"c-{n}-{round_no}"}).json()["lead"]
                outcome = rng.choice(["answered", "abandoned", "no_answer", "busy"])
                if outcome in ("answered", "abandoned"):
                    assert post("bridge", {"oli_id": lead["oli_id"], "request_id": f"b-{n}-{round_no}"}).ok
                if outcome == "answered":
                    assert post("call-connected", {"oli_id": lead["oli_id"], "agent_id": 601 + n,
                                                   "request_id": f"m-{n}-{round_no}"}).ok
                settled = post("settle", {"oli_id": lead["oli_id"], "outcome": outcome, "call_id": f"s-{n}-{round_no}",
                                          "started_at": lead["reserved_at"], "reservation_id": lead["reservation_id"]})
                assert settled.status_code == 200, settled.text
                played.append(outcome)
            except Exception as exc:  # noqa: BLE001 - every failure is reported below
                errors.append(repr(exc))

    threads = [threading.Thread(target=engine, args=(n,)) for n in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert not errors and len(played) == 96, errors[:3]
    now = datetime.strptime(requests.post(two_hosts[0].url("/engine/floor"), json={}, headers=ENGINE,
                                          timeout=30).json()["at"], "%Y-%m-%d %H:%M:%S")
    for host in two_hosts:
        state = requests.post(host.url("/engine/floor"), json={}, headers=ENGINE, timeout=30).json()
        for group in state["form_types"]:
            assert group["abandons"]["windows"]["today"] == recorded(sql, now + timedelta(hours=1),
                                                                     group["form_type"], day=now.date())
    assert sql.one("SELECT SUM(calls) AS n FROM dialerapi_abandon_counts WHERE grain = 'd'")["n"] == 96
    for grain in ("h", "m"):
        assert sql.one("SELECT SUM(answered) AS n FROM dialerapi_abandon_counts WHERE grain = %s", grain)["n"] == \
            sum(outcome in ("answered", "abandoned") for outcome in played)
    report = json.loads(cli(database_url, "report", "abandons", "--from", f"{now:%Y-%m-%d}", "--to",
                            f"{now:%Y-%m-%d}", "--json", now=now).stdout)
    floor_row = [row for row in report["days"] if row["form_type"] == "*"][0]
    assert {k: floor_row[k] for k in ("answered", "abandoned")} == {
        "answered": sum(o in ("answered", "abandoned") for o in played), "abandoned": played.count("abandoned")}
