"""The claim and the retry schedule: lead-intake-api.md "Claim and retry rules" 1-6 and the claim,
redial and reopen rows of "States and transitions"."""

import dataclasses
import itertools
import json
import threading
from datetime import datetime, time, timedelta

import pytest

from conftest import TZ, cli
from dialerapi.plumbing.db import get_db
from dialerapi.rules.agents import availability
from dialerapi.rules.agents import roster as agents
from dialerapi.rules.config import dialer as dialer_config
from dialerapi.rules.core import vocabulary
from dialerapi.rules.dialing import claims
from dialerapi.rules.leads import dialstate, transitions

NOW = datetime(2026, 11, 21, 10, 0, 0)


@pytest.fixture(autouse=True)
def fixed_now(frozen_clock):
    frozen_clock(NOW)


@pytest.fixture
def lead_in(new_lead, sql):
    """A lead in a given dial state: lead_in("A", "Not Connected", next_retry_at=..., form_type=...)."""

    def make(oli_id, dial_status="Pending", form_type="home_loan", priority_id=2, **columns):
        new_lead(oli_id, form_type=form_type, priority_id=priority_id)
        sql("UPDATE sales_master SET dial_status = %s, next_retry_at = NULL WHERE oli_id = %s", dial_status, oli_id)
        for column, value in columns.items():
            sql(f"UPDATE sales_master SET {column} = %s WHERE oli_id = %s", value, oli_id)
        return sql.lead(oli_id)

    return make


def claimed(run, agent_id=501, now=NOW):
    row = run(claims.claim_next, agent_id, now)
    return row and row["oli_id"]


# --- order and due-ness ----------------------------------------------------------------------------

@pytest.mark.clock
def test_claim_order_callback_pending_abandoned_not_connected(run, floor_agent, lead_in):
    floor_agent()
    lead_in("NC", "Not Connected", next_retry_at=NOW - timedelta(hours=1))
    lead_in("AB", "Abandoned", next_retry_at=NOW - timedelta(hours=2))
    lead_in("PE", "Pending")
    lead_in("CB", "Callback", callback_scheduled_at=NOW - timedelta(minutes=1))
    order = [claimed(run) for _ in range(5)]
    assert order == ["CB", "PE", "AB", "NC", None]


def test_the_claim_reserves_and_remembers_the_previous_status(run, floor_agent, lead_in, sql):
    floor_agent()
    before = lead_in("NC", "Not Connected", next_retry_at=NOW, call_count=3, first_attempt_at=NOW - timedelta(days=1))
    row = run(claims.claim_next, 501, NOW)
    stored = sql.lead("NC")
    assert row["dial_status"] == stored["dial_status"] == "Calling" and stored["isReserved"] == 1
    assert stored["previous_dial_status"] == "Not Connected"
    assert (stored["call_count"], stored["first_attempt_at"], stored["data_id"]) == (3, before["first_attempt_at"],
                                                                                   before["data_id"])


def test_within_a_bucket_the_earliest_due_goes_first(run, floor_agent, lead_in):
    floor_agent(skills=("home_loan", "credit_card"))
    lead_in("LATE", "Callback", callback_scheduled_at=NOW - timedelta(minutes=5))
    lead_in("EARLY", "Callback", form_type="credit_card", callback_scheduled_at=NOW - timedelta(hours=3))
    assert [claimed(run), claimed(run)] == ["EARLY", "LATE"]


@pytest.mark.clock
def test_future_callbacks_are_skipped_and_stay_unreserved(run, floor_agent, lead_in, sql):
    floor_agent()
    lead_in("CB", "Callback", callback_scheduled_at=NOW + timedelta(minutes=1))
    assert claimed(run) is None
    assert sql.lead("CB")["isReserved"] == 0 and sql.lead("CB")["dial_status"] == "Callback"
    assert claimed(run, now=NOW + timedelta(minutes=1)) == "CB"


@pytest.mark.clock
@pytest.mark.parametrize("status, next_retry_at, due", [
    ("Pending", None, True),
    ("Pending", NOW + timedelta(minutes=1), False),
    ("Not Connected", None, False),
    ("Not Connected", NOW + timedelta(seconds=1), False),
    ("Not Connected", NOW, True),
    ("Abandoned", NOW + timedelta(hours=1), False),
    ("Abandoned", NOW - timedelta(hours=1), True),
    ("Received", None, False),
    ("Rejected", None, False),
    ("Disposed", None, False),
])
def test_which_statuses_are_due(run, floor_agent, lead_in, status, next_retry_at, due):
    floor_agent()
    lead_in("L", status, next_retry_at=next_retry_at)
    assert claimed(run) == ("L" if due else None)


def test_live_rows_are_never_claimed_again(run, floor_agent, lead_in, make_live):
    floor_agent()
    lead_in("L")
    make_live("L")
    assert claimed(run) is None


@pytest.mark.clock
@pytest.mark.parametrize("obey, now, claimable", [
    (0, datetime(2026, 11, 21, 22, 0), True),
    (1, datetime(2026, 11, 21, 22, 0), False),
    (1, datetime(2026, 11, 21, 8, 59), False),
    (1, datetime(2026, 11, 21, 9, 0), True),
])
def test_due_callbacks_wait_for_the_work_window_when_obeyed(run, floor_agent, lead_in, sql, obey, now, claimable):
    sql("UPDATE sales_dialer_config SET outbound_obey_work_hours = %s", obey)
    floor_agent()
    lead_in("CB", "Callback", callback_scheduled_at=datetime(2026, 11, 21, 7, 0))
    assert claimed(run, now=now) == ("CB" if claimable else None)


# --- skills, priorities, availability, maintenance ---------------------------------------------------

def test_claim_is_by_skill(run, floor_agent, lead_in):
    floor_agent(skills=("credit_card",))
    lead_in("HL", form_type="home_loan")
    assert claimed(run) is None
    lead_in("CC", form_type="credit_card")
    assert claimed(run) == "CC"


def test_allowed_priorities_limit_the_claim_and_none_means_all(run, floor_agent, lead_in):
    floor_agent(501, priorities=(2,))
    floor_agent(502)
    lead_in("CB", "Callback", priority_id=1, callback_scheduled_at=NOW)
    assert claimed(run, 501) is None
    assert claimed(run, 502) == "CB"


@pytest.mark.parametrize("columns, reason", [
    ({"panel_active": 0}, "panel_inactive"),
    ({"pause_code": "tea"}, "paused"),
    ({"ami_idle": 0}, "ami_busy"),
    ({"wrapup_until": NOW + timedelta(seconds=30)}, "wrap_up"),
    ({"outbound_blocked": 1}, "outbound_blocked"),
])
def test_only_an_available_agent_claims_and_a_refusal_says_why(run, floor_agent, lead_in, sql, columns, reason):
    floor_agent(**columns)
    lead_in("L")
    with pytest.raises(claims.NotClaimable) as refused:
        claimed(run)
    assert refused.value.reason == reason
    assert sql.lead("L")["isReserved"] == 0


def test_wrap_up_ends(run, floor_agent, lead_in):
    floor_agent(wrapup_until=NOW)
    lead_in("L")
    assert claimed(run) == "L"


def test_maintenance_stops_new_claims_but_live_calls_go_on(run, floor_agent, lead_in, sql, make_live):
    floor_agent()
    lead_in("L1")
    lead_in("L2")
    make_live("L2")
    sql("UPDATE sales_dialer_config SET isMaintainance = 1")
    for claim in (lambda: claimed(run), lambda: run(claims.claim_predictive, NOW)):
        with pytest.raises(claims.NotClaimable, match="^maintenance$"):
            claim()
    result = run(dialstate.settle, "L2", "answered", NOW, tz=TZ, grace_minutes=10, release_retry_ms=60000)
    assert result["lead"]["dial_status"] == "Received"
    sql("UPDATE sales_dialer_config SET isMaintainance = 0")
    assert claimed(run) == "L1"


# --- concurrency --------------------------------------------------------------------------------------

def test_concurrent_claims_never_share_a_lead(app, floor_agent, lead_in, sql):
    for agent_id in range(601, 609):
        floor_agent(agent_id)
    for n in range(30):
        lead_in(f"L{n:02d}")
    got, errors = [], []

    def engine(agent_id):
        try:
            with app.app_context():
                db = get_db()
                while True:
                    row = db.run(claims.claim_next, agent_id, NOW)
                    if row is None:
                        return
                    got.append(row["oli_id"])
                    db.run(agents.set_availability, agent_id, ami_idle=True)
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=engine, args=(agent_id,)) for agent_id in range(601, 609)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert sorted(got) == [f"L{n:02d}" for n in range(30)], "every lead claimed exactly once"
    assert sql.one("SELECT COUNT(*) AS n FROM sales_master WHERE dial_status = 'Calling' AND isReserved = 1")["n"] == 30


# --- redial, inbound, reopen ------------------------------------------------------------------------

@pytest.mark.parametrize("status", ["Received", "Rejected", "Disposed"])
def test_redial_reopens_terminal_leads(run, floor_agent, lead_in, sql, status):
    floor_agent()
    lead_in("L", status, disposeRemark="CRM: DND" if status == "Disposed" else None)
    row = run(claims.claim_lead, 501, "L", NOW, "redial")
    assert row["dial_status"] == "Calling" and row["previous_dial_status"] == status
    stored = sql.lead("L")
    assert stored["isReserved"] == 1 and stored["disposeRemark"] is None
    run(dialstate.settle, "L", "answered", NOW, tz=TZ, grace_minutes=10, release_retry_ms=60000, call_type="redial")
    assert sql.lead("L")["dial_status"] == "Received"


def test_inbound_claim_reopens_and_ignores_the_outbound_block(run, floor_agent, lead_in):
    floor_agent(outbound_blocked=1)
    lead_in("L", "Disposed", disposeRemark="Dialer system: max tries reached")
    row = run(claims.claim_lead, 501, "L", NOW, "inbound")
    assert row["dial_status"] == "Calling" and row["disposeRemark"] is None


def test_a_blocked_agent_may_redial_only_their_own_missed_leads(run, floor_agent, lead_in, open_missed_activity):
    floor_agent(outbound_blocked=1)
    lead_in("MINE", "Received")
    lead_in("OTHER", "Received")
    open_missed_activity("MINE", agent_id=501, ended_at=NOW - timedelta(hours=1), due_at=NOW - timedelta(minutes=50))
    assert run(claims.claim_lead, 501, "MINE", NOW, "redial")["oli_id"] == "MINE"
    with pytest.raises(claims.NotClaimable, match="outbound_blocked"):
        run(claims.claim_lead, 501, "OTHER", NOW, "redial")
    with pytest.raises(claims.NotClaimable, match="outbound_blocked"):
        claimed(run)  # and no progressive claim while blocked


def test_named_claims_refuse_live_unknown_and_maintenance(run, floor_agent, lead_in, make_live, sql):
    floor_agent()
    lead_in("LIVE")
    make_live("LIVE")
    with pytest.raises(claims.NotClaimable, match="lead_in_flight"):
        run(claims.claim_lead, 501, "LIVE", NOW, "redial")
    with pytest.raises(vocabulary.UnknownLead):
        run(claims.claim_lead, 501, "GHOST", NOW, "redial")
    lead_in("R", "Received")
    sql("UPDATE sales_dialer_config SET isMaintainance = 1")
    with pytest.raises(claims.NotClaimable, match="maintenance"):
        run(claims.claim_lead, 501, "R", NOW, "redial")
    assert run(claims.claim_lead, 501, "R", NOW, "inbound")["dial_status"] == "Calling"


# --- predictive ---------------------------------------------------------------------------------------

def test_predictive_calls_the_customer_first_then_bridges_a_free_skilled_agent(run, floor_agent, lead_in, sql):
    floor_agent(501, skills=("credit_card",))
    floor_agent(502, skills=("home_loan",), priorities=(1,))
    floor_agent(503, skills=("home_loan",))
    lead_in("HL")
    row = run(claims.claim_predictive, NOW)
    assert row["oli_id"] == "HL" and row["dial_status"] == "Calling"
    assert run(agents.bridge, "HL", NOW) == 503, "skill home_loan and priority 2 allowed"
    assert sql.one("SELECT ami_idle FROM sales_agents WHERE id = 503")["ami_idle"] == 0


def test_predictive_holds_when_nobody_is_free_and_abandons_when_the_customer_hangs_up(run, floor_agent, lead_in, sql):
    floor_agent(501)
    lead_in("A")
    lead_in("B")
    run(claims.claim_predictive, NOW)
    run(claims.claim_predictive, NOW)
    assert run(agents.bridge, "A", NOW) == 501
    assert run(agents.bridge, "B", NOW) is None, "the call holds"
    run(dialstate.settle, "B", "abandoned", NOW, tz=TZ, grace_minutes=10, release_retry_ms=60000)
    row = sql.lead("B")
    assert row["dial_status"] == "Abandoned" and row["next_retry_at"] == NOW + timedelta(seconds=3600)


def test_predictive_claims_nothing_without_a_free_agent_and_says_so(run, floor_agent, lead_in, sql):
    floor_agent(501, ami_idle=0)
    lead_in("A")
    with pytest.raises(claims.NotClaimable, match="^no_free_agent$"):
        run(claims.claim_predictive, NOW)
    assert sql.lead("A")["isReserved"] == 0
    floor_agent(502, skills=("car_loan",))
    assert run(claims.claim_predictive, NOW) is None, "a free agent, but no lead of their skills is due"


def test_a_predictive_claim_of_one_skill_takes_only_that_form_type(run, floor_agent, lead_in):
    """Issue #29: a pacing engine dials each skill on its own free agents."""
    floor_agent(501, skills=("credit_card",))
    lead_in("HL")
    lead_in("CC", form_type="credit_card")
    with pytest.raises(claims.NotClaimable, match="^no_free_agent$"):
        run(claims.claim_predictive, NOW, form_type="home_loan")
    assert run(claims.claim_predictive, NOW, form_type="credit_card")["oli_id"] == "CC"
    assert run(claims.claim_predictive, NOW, form_type="credit_card") is None, "HL is not credit_card"


def test_a_predictive_claim_never_takes_a_priority_no_free_agent_of_that_skill_allows(run, floor_agent, lead_in, sql):
    """Issue #29: priorities were matched only at bridge, so such a lead was dialed and abandoned."""
    floor_agent(501, skills=("home_loan",), priorities=(2,))
    floor_agent(502, skills=("credit_card",))  # allows every priority, but another skill
    lead_in("CB", dial_status="Callback", priority_id=1, callback_scheduled_at=NOW - timedelta(hours=1))
    lead_in("FRESH", priority_id=2)
    assert run(claims.claim_predictive, NOW)["oli_id"] == "FRESH", "the due callback comes first, but nobody free takes priority 1"
    assert run(claims.claim_predictive, NOW, form_type="home_loan") is None
    assert sql.lead("CB")["isReserved"] == 0
    floor_agent(503, skills=("home_loan",), priorities=(1, 3))
    assert run(claims.claim_predictive, NOW, form_type="home_loan")["oli_id"] == "CB"


def test_skills_and_priorities_of_the_free_agents(run, floor_agent, sql):
    floor_agent(501, skills=("home_loan",), priorities=(2,))
    floor_agent(502, skills=("home_loan", "car_loan"), priorities=(1,))
    floor_agent(503, skills=("credit_card",))
    floor_agent(504, skills=("credit_card",), priorities=(2,))
    floor_agent(505, skills=("gold_loan",))
    sql("UPDATE sales_agents SET ami_idle = 0 WHERE id = 505")
    assert run(claims.free_skills, NOW) == [("car_loan", [1]), ("credit_card", []), ("home_loan", [1, 2])]
    assert run(claims.free_skills, NOW, form_type="home_loan") == [("home_loan", [1, 2])]
    assert run(claims.free_skills, NOW, form_type="gold_loan") == []
    assert run(claims.free_skills, NOW, ahead=True, form_type="gold_loan") == [("gold_loan", [])], \
        "dialing ahead: an agent on a call counts"


def test_who_is_free_for_a_predictive_claim_is_unavailable_reason_for_every_agent_state(run, sql):
    """free_skills judges availability in SQL, for one row per skill however many agents: it must
    say what availability.unavailable_reason says (claim rule 1), for every combination of the columns."""
    combinations = list(itertools.product((0, 1), (None, "", "BREAK"), (0, 1),
                                          (None, NOW - timedelta(seconds=1), NOW, NOW + timedelta(seconds=1)), (0, 1)))
    for n, (panel, pause, idle, wrapup, blocked) in enumerate(combinations):
        sql("INSERT INTO sales_agents (id, extension, name, panel_active, pause_code, ami_idle, wrapup_until,"
            " outbound_blocked) VALUES (%s, %s, 'Agent', %s, %s, %s, %s, %s)",
            600 + n, str(6000 + n), panel, pause, idle, wrapup, blocked)
        sql("INSERT INTO sales_agent_skills (agent_id, form_type) VALUES (%s, %s)", 600 + n, f"skill_{n:03d}")
    agents = sql("SELECT * FROM sales_agents ORDER BY id")
    for ahead in (False, True):
        expected = [f"skill_{agent['id'] - 600:03d}" for agent in agents if availability.unavailable_reason(
            {**agent, **({"ami_idle": 1, "wrapup_until": None} if ahead else {})}, NOW) is None]
        assert [skill for skill, _ in run(claims.free_skills, NOW, ahead=ahead)] == expected, ahead
        assert 0 < len(expected) < len(combinations)


def test_a_dial_ahead_claim_counts_agents_on_a_call_or_in_wrap_up_but_never_paused_or_blocked(
        run, floor_agent, lead_in, sql):
    floor_agent(501, ami_idle=0)
    floor_agent(502, skills=("credit_card",), wrapup_until=NOW + timedelta(seconds=30))
    lead_in("HL")
    lead_in("CC", form_type="credit_card")
    with pytest.raises(claims.NotClaimable, match="^no_free_agent$"):
        run(claims.claim_predictive, NOW)
    assert {run(claims.claim_predictive, NOW, ahead=True)["oli_id"] for _ in range(2)} == {"HL", "CC"}
    assert run(agents.bridge, "HL", NOW) is None, "the customer holds until an agent comes free"
    sql("UPDATE sales_agents SET ami_idle = 1 WHERE id = 501")
    assert run(agents.bridge, "HL", NOW) == 501

    lead_in("HL2")
    sql("UPDATE sales_agents SET ami_idle = 0, pause_code = 'tea' WHERE id = 501")
    sql("UPDATE sales_agents SET outbound_blocked = 1 WHERE id = 502")
    with pytest.raises(claims.NotClaimable, match="^no_free_agent$"):
        run(claims.claim_predictive, NOW, ahead=True)
    assert sql.lead("HL2")["isReserved"] == 0


# --- the retry schedule ---------------------------------------------------------------------------------

CONFIG = dialer_config.DialerConfig(
    isMaintainance=False, outbound_obey_work_hours=False, retry_pattern=(4, 4, 3, 2, 1, 1, 1, 1, 1, 1, 1),
    retry_seconds=3600, max_tries=20, work_start=time(9), work_end=time(21), disposed_priority_id=3,
)
DAY0 = datetime(2026, 11, 21)


def at(day, hour, minute=0):
    return DAY0 + timedelta(days=day, hours=hour, minutes=minute)


@pytest.mark.clock
@pytest.mark.parametrize("now, first, call_count, expected", [
    # Day 0 allows 4 attempts, retry_seconds (1 h) apart, inside 09:00-21:00.
    (at(0, 10), at(0, 10), 1, at(0, 11)),
    (at(0, 13), at(0, 10), 3, at(0, 14)),
    (at(0, 14), at(0, 10), 4, at(1, 9)),
    (at(0, 19, 59), at(0, 10), 2, at(0, 20, 59)),
    (at(0, 20, 30), at(0, 10), 2, at(1, 9)),
    (at(0, 7), at(0, 7), 1, at(0, 9)),
    # Day 1: the allowance is cumulative (4 + 4 = 8), so day 0's leftover carries over.
    (at(1, 9), at(0, 20), 1, at(1, 10)),
    (at(1, 15), at(0, 10), 7, at(1, 16)),
    (at(1, 16), at(0, 10), 8, at(2, 9)),
    # Day 2 allows 11 in all, day 3 13, days 4-10 one more each.
    (at(2, 12), at(0, 10), 10, at(2, 13)),
    (at(2, 13), at(0, 10), 11, at(3, 9)),
    (at(4, 9), at(0, 10), 14, at(5, 9)),
    (at(5, 9), at(0, 10), 14, at(5, 10)),
    # Attempts far ahead of the allowance wait for the day that allows one more.
    (at(0, 12), at(0, 10), 9, at(2, 9)),
])
def test_retry_schedule(now, first, call_count, expected):
    assert transitions.retry_after_no_answer(now, first, call_count, CONFIG, TZ) == expected


def test_days_past_the_pattern_allow_its_last_value():
    assert transitions.attempts_allowed(CONFIG, 10) == 20
    assert transitions.attempts_allowed(CONFIG, 12) == 22
    assert transitions.attempts_allowed(dataclasses.replace(CONFIG, retry_pattern=()), 0) == 20, "max_tries on day one"


@pytest.mark.clock
def test_settle_follows_the_schedule_over_days(run, floor_agent, lead_in, sql):
    floor_agent()
    lead_in("L", "Pending")
    moments = []
    now = at(0, 20)
    for _ in range(6):
        row = run(claims.claim_next, 501, now)
        assert row is not None, f"nothing claimable at {now}"
        run(dialstate.settle, "L", "no_answer", now, tz=TZ, grace_minutes=10, release_retry_ms=60000)
        now = sql.lead("L")["next_retry_at"]
        moments.append(now)
    # First attempt at 20:00 on day 0 (1 of 4): the next falls at 21:00, outside; day 0's leftover carries.
    assert moments == [at(1, 9), at(1, 10), at(1, 11), at(1, 12), at(1, 13), at(1, 14)]
    assert sql.lead("L")["call_count"] == 6


@pytest.mark.clock
def test_max_tries_ends_disposed(run, floor_agent, lead_in, sql):
    sql("UPDATE sales_dialer_config SET max_tries = 3, retry_seconds = 60")
    floor_agent()
    lead_in("L")
    now = at(0, 10)
    for _ in range(3):
        assert run(claims.claim_next, 501, now)
        run(dialstate.settle, "L", "busy", now, tz=TZ, grace_minutes=10, release_retry_ms=60000)
        now = sql.lead("L")["next_retry_at"] or now
    row = sql.lead("L")
    assert (row["dial_status"], row["priority_id"], row["disposeRemark"]) == ("Disposed", 3,
                                                                            "Dialer system: max tries reached")
    assert run(claims.claim_next, 501, now + timedelta(days=2)) is None


@pytest.mark.long
@pytest.mark.slow
@pytest.mark.clock
def test_claim_and_bridge_commands(database_url, floor_agent, lead_in, sql):
    def dialerapi(*args):
        return cli(database_url, *args, now=NOW)

    floor_agent(501, ami_idle=0)
    lead_in("A")
    busy = dialerapi("claim", "--agent-id", "501")
    assert busy.returncode == 1 and "cannot claim a lead: ami_busy" in busy.stderr
    assert dialerapi("agents", "state", "501", "--ami-idle", "--wrapup-seconds", "0").returncode == 0
    assert json.loads(dialerapi("claim", "--agent-id", "501").stdout)["oli_id"] == "A"
    lead_in("B")
    lead_in("C", form_type="credit_card")
    other_skill = dialerapi("claim", "--predictive", "--form-type", "credit_card")
    assert other_skill.returncode == 1 and "no_free_agent" in other_skill.stderr
    assert dialerapi("claim", "--agent-id", "501", "--form-type", "home_loan").returncode == 2
    assert json.loads(dialerapi("claim", "--predictive", "--form-type", "home_loan").stdout)["oli_id"] == "B"
    assert json.loads(dialerapi("bridge", "B").stdout) == {"agent_id": 501}
    refused = dialerapi("claim", "--agent-id", "501", "--oli-id", "A")
    assert refused.returncode == 1 and "ami_busy" in refused.stderr, "the bridge took the agent"
    assert dialerapi("claim").returncode == 2
