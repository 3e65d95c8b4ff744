"""Consent in the contact caps' count (issue #68 item 4; docs/compliance/contact-caps.md,
docs/compliance/state-rules.md "Consent").

Regulation F's presumption (12 CFR 1006.14(b)(2)(i): seven calls in seven days) leaves out calls
placed within seven days after the consumer's prior consent ((b)(3)(i), (b)(4)): the
reg-f-7-in-7 preset neither holds nor counts a claim of a lead whose written or express consent
was given in the seven days before it, while a cap without consent_days counts every call.
decisions.md D2: the service's clock; consent `at` is wall-clock DB_TIMEZONE, attempts UTC.
"""

import json
from datetime import datetime, timedelta

import pytest

from conftest import TZ, add_contact_attempts, contact_attempts, progressive_claims_at_once, utc_naive
from dialerapi.rules.dialing import claims
from dialerapi.rules.leads import dialstate

NOW = datetime(2026, 11, 21, 10, 0, 0)
NEW_YORK = "+1 212 202 {:04d}"
REG_F = "reg-f-7-in-7"


@pytest.fixture(autouse=True)
def fixed_now(frozen_clock):
    frozen_clock(NOW)


def number(n):
    return int("1212202" + f"{n:04d}")


def consent(days_ago, kind="written"):
    return {"type": kind, "at": f"{NOW - timedelta(days=days_ago):%Y-%m-%d %H:%M:%S}", "source": "recorded call"}


def claim(run, agent_id=501, now=NOW):
    row = run(claims.claim_next, agent_id, now, tz=TZ)
    return row and row["oli_id"]


def settle(run, oli_id, now=NOW):
    run(dialstate.settle, oli_id, "no_answer", now, tz=TZ, grace_minutes=10, release_retry_ms=60000)


def six_calls_this_week(sql, n=1):
    add_contact_attempts(sql, number(n), [NOW - timedelta(days=6, hours=hour) for hour in range(6)])


def consents(sql, n=1):
    row = sql.one("SELECT consents FROM dialerapi_contact_numbers WHERE phone_e164 = %s", number(n))
    return json.loads(row["consents"] or "{}")


def test_the_preset_leaves_seven_days_of_consent_out_and_the_list_says_so(command, sql):
    assert sql.one("SELECT consent_days FROM dialerapi_contact_caps WHERE name = %s", REG_F)["consent_days"] == 7
    listed = command("caps", "list")
    assert listed.exit_code == 0
    line = next(line for line in listed.output.splitlines() if line.startswith(REG_F))
    assert "7d out" in line
    florida = next(line for line in listed.output.splitlines() if line.startswith("florida-oklahoma"))
    assert "counted" in florida


def test_a_call_within_seven_days_of_consent_is_neither_held_nor_counted_by_regulation_f(
        new_lead, floor_agent, run, sql):
    floor_agent()
    sql("UPDATE dialerapi_contact_caps SET enabled = 1 WHERE name = %s", REG_F)
    six_calls_this_week(sql)
    new_lead("CONSENTED", phone_number=NEW_YORK.format(1), priority_id=1, consent=consent(2))
    new_lead("PLAIN-1", phone_number=NEW_YORK.format(1))
    new_lead("PLAIN-2", phone_number=NEW_YORK.format(1))
    assert claim(run) == "CONSENTED"
    reservation = sql.lead("CONSENTED")["reservation_id"]
    settle(run, "CONSENTED")
    # Seven calls this week, one of them consented: six count, so one more plain call may go.
    assert len(contact_attempts(sql, number(1))) == 7
    consent_epoch = int((utc_naive(NOW - timedelta(days=2)) - datetime(1970, 1, 1)).total_seconds())
    assert consents(sql) == {reservation: consent_epoch}
    assert claim(run) == "PLAIN-1"
    settle(run, "PLAIN-1")
    assert claim(run) is None
    held = sql.one("SELECT contact_cap, contact_cap_until FROM sales_master WHERE oli_id = 'PLAIN-2'")
    assert held["contact_cap"] == REG_F
    # The window frees the number when the first plain call of the week leaves it.
    assert held["contact_cap_until"] == NOW - timedelta(days=6, hours=5) + timedelta(days=7)


@pytest.mark.parametrize("lead_consent", [consent(8), consent(2, "ebr"), consent(-1)],
                         ids=["given-8-days-ago", "ebr", "given-after-the-call"])
def test_consent_older_than_seven_days_or_no_consent_to_calls_is_counted(
        new_lead, floor_agent, run, sql, lead_consent):
    floor_agent()
    sql("UPDATE dialerapi_contact_caps SET enabled = 1 WHERE name = %s", REG_F)
    add_contact_attempts(sql, number(1), [NOW - timedelta(days=6, hours=hour) for hour in range(7)])
    new_lead("LEAD", phone_number=NEW_YORK.format(1), consent=lead_consent)
    assert claim(run) is None
    assert sql.one("SELECT contact_cap FROM sales_master WHERE oli_id = 'LEAD'")["contact_cap"] == REG_F


def test_a_cap_without_consent_days_counts_the_consented_calls(command, new_lead, floor_agent, run, sql):
    floor_agent()
    added = command("caps", "add", "seven-a-week", "--max", "7", "--per", "7d", "--enable")
    assert added.exit_code == 0, added.output
    bad = command("caps", "add", "bad", "--max", "7", "--per", "7d", "--consent-days", "0")
    assert bad.exit_code == 1 and "--consent-days 0" in bad.output
    sql("UPDATE dialerapi_contact_caps SET enabled = 1 WHERE name = %s", REG_F)
    six_calls_this_week(sql)
    new_lead("CONSENTED", phone_number=NEW_YORK.format(1), priority_id=1, consent=consent(2))
    new_lead("PLAIN", phone_number=NEW_YORK.format(1))
    assert claim(run) == "CONSENTED"
    settle(run, "CONSENTED")
    assert claim(run) is None, "reg-f leaves the consented call out, seven-a-week does not"
    assert sql.one("SELECT contact_cap FROM sales_master WHERE oli_id = 'PLAIN'")["contact_cap"] == "seven-a-week"


def test_an_originate_failure_takes_back_the_consented_attempt_and_its_consent(new_lead, floor_agent, run, sql):
    floor_agent()
    new_lead("CONSENTED", phone_number=NEW_YORK.format(1), consent=consent(2))
    assert claim(run) == "CONSENTED"
    assert len(consents(sql)) == 1
    run(dialstate.settle, "CONSENTED", "originate_failed", NOW, tz=TZ, grace_minutes=10, release_retry_ms=60000)
    assert contact_attempts(sql, number(1)) == [] and consents(sql) == {}


def test_sixteen_claimers_at_once_take_the_consented_leads_of_numbers_at_regulation_fs_count(
        app, new_lead, floor_agent, run, sql):
    """16 claimers released at once on 16 numbers, each at seven plain calls this week, each with a
    consented lead and a plain one: every claimer gets a consented lead, no plain one is called,
    and each number keeps exactly its one consented attempt (checked in the database)."""
    agents = range(501, 517)
    for agent_id in agents:
        floor_agent(agent_id)
    sql("UPDATE dialerapi_contact_caps SET enabled = 1 WHERE name = %s", REG_F)
    for n in range(16):
        add_contact_attempts(sql, number(n), [NOW - timedelta(days=6, hours=hour) for hour in range(7)])
        new_lead(f"PLAIN-{n:02d}", phone_number=NEW_YORK.format(n))
        new_lead(f"CONSENTED-{n:02d}", phone_number=NEW_YORK.format(n), consent=consent(1, "express"))
    got, errors = progressive_claims_at_once(app, agents, NOW)
    assert errors == []
    assert sorted(got) == [f"CONSENTED-{n:02d}" for n in range(16)]
    reserved = sql("SELECT oli_id, reservation_id, phone_e164 FROM sales_master WHERE isReserved = 1")
    assert sorted(row["oli_id"] for row in reserved) == sorted(got)
    for row in reserved:
        n = row["phone_e164"] - number(0)
        assert len(contact_attempts(sql, row["phone_e164"])) == 8
        assert list(consents(sql, n)) == [row["reservation_id"]]
