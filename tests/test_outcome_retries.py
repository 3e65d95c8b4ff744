"""Retries per outcome and the answering-machine outcome (issue #50, item 3).

lead-intake-api.md "States and transitions" (the `Calling` rows) and "Claim and retry rules" 4 are
what an outcome with no rule of its own does, exactly; decisions.md D6 (settle).
"""

import json
import random
import threading
from datetime import datetime, timedelta

import pytest

from conftest import TZ, sixteen_at_once
from dialerapi.rules.compliance import abandons
from dialerapi.rules.config import dialer as dialer_config
from dialerapi.rules.core import vocabulary
from dialerapi.rules.dialing import claims
from dialerapi.rules.leads import dialstate, transitions
from dialerapi.rules.views import floor

NOW = datetime(2026, 11, 21, 10, 0, 0)


# The clock at NOW and `settle(oli_id, outcome, now=NOW, **kwargs)`, as tests/test_settle.py has them.
from test_settle import fixed_now, settle  # noqa: E402,F401 - fixtures


@pytest.fixture
def live(new_lead, make_live, sql):
    """A lead live on a call: live("OLI-1"); again live("OLI-1", push=False) for its next call."""

    def make(oli_id="OLI-1", push=True, **columns):
        if push:
            new_lead(oli_id)
        return make_live(oli_id, **columns)

    return make


def rule(sql, outcome, delay=None, most=None):
    sql("INSERT INTO dialerapi_outcome_retries (outcome, delay_seconds, max_attempts) VALUES (%s, %s, %s)",
        outcome, delay, most)


def test_with_no_rule_every_outcome_follows_the_specification_exactly():
    """A floor that sets nothing sees no change: machine is retried as no_answer, and each outcome's
    changes equal those of a config without the issue's fields, over random moments and counts."""
    base = dialer_config.DialerConfig(isMaintainance=False, outbound_obey_work_hours=False, retry_pattern=(4, 4, 3, 2, 1),
                               retry_seconds=3600, max_tries=20, work_start=datetime.min.time().replace(hour=9),
                               work_end=datetime.min.time().replace(hour=21), disposed_priority_id=3)
    rng = random.Random(50)
    for _ in range(500):
        now = datetime(2026, 11, 21) + timedelta(minutes=rng.randrange(0, 3 * 24 * 60))
        row = {"call_count": rng.randrange(0, 20), "first_attempt_at": now - timedelta(hours=rng.randrange(0, 60)),
               "next_retry_at": None, "previous_dial_status": "Pending", "callback_scheduled_at": None}
        no_answer = transitions.hangup_changes(row, "no_answer", now, base, TZ)
        machine = transitions.hangup_changes(row, "machine", now, base, TZ, outcome_attempts=rng.randrange(0, 9))
        assert {**machine, "last_dial_result": "NOANSWER"} == no_answer
        for outcome in vocabulary.RETRY_OUTCOMES:
            assert transitions.hangup_changes(row, outcome, now, base, TZ, outcome_attempts=5) == \
                transitions.hangup_changes(row, outcome, now, base, TZ)


@pytest.mark.clock
@pytest.mark.parametrize("now, expected", [
    (NOW, NOW + timedelta(minutes=10)),
    (datetime(2026, 11, 21, 20, 55), datetime(2026, 11, 22, 9, 0)),  # 21:05 is after work_end
])
def test_a_busy_delay_of_its_own_replaces_the_pattern(settle, live, sql, now, expected):
    rule(sql, "busy", delay=600)
    live(call_count=1, first_attempt_at="2026-11-21 09:00:00")
    settle("OLI-1", "busy", now=now)
    row = sql.lead("OLI-1")
    assert (row["dial_status"], row["last_dial_result"], row["next_retry_at"], row["call_count"]) == (
        "Not Connected", "BUSY", expected, 2)
    # no_answer has no rule: the pattern's retry_seconds.
    live(push=False)
    settle("OLI-1", "no_answer", now=NOW + timedelta(minutes=20))
    assert sql.lead("OLI-1")["next_retry_at"] == NOW + timedelta(minutes=20, seconds=3600)


@pytest.mark.clock
def test_an_outcome_maximum_disposes_the_lead_and_tells_the_crm(settle, live, sql):
    """Two busy attempts of the cycle, a no_answer between them not counted: Disposed, Final
    Disposal, its own remark; lead.disposed with reason max_tries (the dialer gave up)."""
    rule(sql, "busy", most=2)
    live()
    settle("OLI-1", "busy", started_at=NOW)
    live(push=False)
    settle("OLI-1", "no_answer", now=NOW + timedelta(hours=1), started_at=NOW + timedelta(hours=1))
    assert sql.lead("OLI-1")["dial_status"] == "Not Connected"
    live(push=False)
    settle("OLI-1", "busy", now=NOW + timedelta(hours=2), started_at=NOW + timedelta(hours=2))
    row = sql.lead("OLI-1")
    assert (row["dial_status"], row["priority_id"], row["disposeRemark"], row["next_retry_at"]) == (
        "Disposed", 3, "Dialer system: max busy attempts reached", None)
    disposed = sql("SELECT body FROM dialerapi_lead_events WHERE type = 'lead.disposed'")
    assert len(disposed) == 1 and json.loads(disposed[0]["body"])["reason"] == "max_tries"


@pytest.mark.clock
def test_a_push_starts_a_new_cycle_of_outcome_attempts(settle, live, sql):
    rule(sql, "busy", most=2)
    live()
    settle("OLI-1", "busy", started_at=NOW)
    live("OLI-1", push=True)  # the CRM pushes the lead again: a new cycle
    settle("OLI-1", "busy", now=NOW + timedelta(hours=1), started_at=NOW + timedelta(hours=1))
    assert sql.lead("OLI-1")["dial_status"] == "Not Connected"


@pytest.mark.clock
def test_abandoned_with_a_rule_of_its_own(settle, live, sql):
    rule(sql, "abandoned", delay=7200, most=2)
    live(next_retry_at="2026-11-21 09:00:00")
    settle("OLI-1", "abandoned", started_at=NOW)
    assert sql.lead("OLI-1")["next_retry_at"] == NOW + timedelta(hours=2), "its delay, not the kept next_retry_at"
    live(push=False)
    settle("OLI-1", "abandoned", now=NOW + timedelta(hours=3), started_at=NOW + timedelta(hours=3))
    assert sql.lead("OLI-1")["disposeRemark"] == "Dialer system: max abandoned attempts reached"


def test_a_machine_is_neither_answered_nor_abandoned_in_the_abandon_rate(settle, live, sql):
    """Item 3: outcome machine is recorded as such (MACHINE) and counted apart, never as answered."""
    live()
    settle("OLI-1", "machine")
    assert sql.one("SELECT result FROM sales_call_attempts")["result"] == "MACHINE"
    assert sql("SELECT grain, calls, answered, abandoned, machines FROM dialerapi_abandon_counts ORDER BY grain") == [
        {"grain": grain, "calls": 1, "answered": 0, "abandoned": 0, "machines": 1} for grain in ("d", "h", "m")]


def test_the_retries_commands_set_list_and_reset(command, sql):
    assert command("retries", "set", "machine", "--delay", "4h", "--max", "3").exit_code == 0
    assert command("retries", "set", "machine", "--max", "2").exit_code == 0
    assert sql("SELECT * FROM dialerapi_outcome_retries") == [
        {"outcome": "machine", "delay_seconds": 4 * 3600, "max_attempts": 2}]
    listed = command("retries", "list").output
    assert "machine     delay 4h     max 2" in listed and "busy        delay spec" in listed
    assert command("retries", "reset", "machine").exit_code == 0
    assert sql("SELECT * FROM dialerapi_outcome_retries") == []


@pytest.mark.parametrize("args, message", [
    (["busy", "--delay", "10"], "--delay '10'"), (["busy", "--max", "0"], "--max 0"), (["busy"], "give --delay"),
    (["answered", "--max", "2"], "Invalid value for '{busy|no_answer|congestion|machine|abandoned}'"),
])
def test_a_bad_retry_rule_is_refused_naming_what_is_wrong(command, sql, args, message):
    result = command("retries", "set", *args)
    assert result.exit_code != 0 and message in result.output, result.output
    assert sql("SELECT * FROM dialerapi_outcome_retries") == []


def test_sixteen_settles_at_once_each_meet_their_own_maximum(app, run, new_lead, make_live, sql):
    """16 settlers released at once, each on a lead at its busy maximum minus one: all 16 Disposed,
    each with its own two attempts, checked against the call records."""
    rule(sql, "busy", most=2)
    for n in range(16):
        new_lead(f"L-{n}")
        make_live(f"L-{n}")
    for n in range(16):
        run(dialstate.settle, f"L-{n}", "busy", NOW, tz=TZ, grace_minutes=10, release_retry_ms=60000, started_at=NOW)
        make_live(f"L-{n}")
    errors = []
    settlers = sixteen_at_once(app, errors)
    later = NOW + timedelta(hours=1)
    threads = [threading.Thread(target=settlers, args=(dialstate.settle, f"L-{n}", "busy", later),
                                kwargs={"tz": TZ, "grace_minutes": 10, "release_retry_ms": 60000, "started_at": later})
               for n in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors
    assert {row["dial_status"] for row in sql("SELECT dial_status FROM sales_master")} == {"Disposed"}
    assert sql("SELECT lead_id, COUNT(*) AS n FROM sales_call_attempts GROUP BY lead_id HAVING n <> 2") == []


@pytest.mark.parametrize("share, rate, held", [(0, 0.01, False), (0.5, 0.0571, True)])
def test_the_amd_false_positive_share_is_added_to_the_abandon_rate(run, sql, floor_agent, new_lead, share, rate, held):
    """Item 3 (Ofcom): with amd_false_positive_share, that share of the machine outcomes counts as
    live answers abandoned, in the floor's windows, in the limit a predictive claim obeys and in
    the compliance report. 100 answered, 1 abandoned, 10 machines: 1/100, or (1 + 5) / (100 + 5)."""
    sql("UPDATE sales_dialer_config SET amd_false_positive_share = %s", share)
    sql("INSERT INTO dialerapi_abandon_counts (grain, form_type, starts_at, node, calls, answered, abandoned, machines)"
        " VALUES ('d', 'home_loan', '2026-11-21', 'n1', 111, 100, 1, 10)")
    floor_agent()
    new_lead("OLI-1")
    today = run(floor.floor_state, NOW, "home_loan", TZ)["form_types"][0]["abandons"]["windows"]["today"]
    assert today == {"answered": 100, "abandoned": 1, "late_connects": 0, "machines": 10, "rate": rate}
    if held:
        with pytest.raises(claims.NotClaimable) as refused:
            run(claims.claim_predictive, NOW, tz=TZ)
        assert refused.value.reason == abandons.ABANDON_LIMIT
    else:
        assert run(claims.claim_predictive, NOW, tz=TZ)["oli_id"] == "OLI-1"
    report = run(lambda conn: abandons.report(conn, NOW, NOW, dialer_config.load_config(conn)))
    assert [(day["form_type"], day["machines"], day["rate"]) for day in report["days"]] == [
        ("home_loan", 10, rate), ("*", 10, rate)]
    assert report["highest"][0]["rate"] == rate and report["highest"][0]["over_limit"] == held
