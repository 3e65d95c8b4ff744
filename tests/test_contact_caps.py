"""Contact caps per phone number (issue #50, items 1, 2 and 4).

lead-intake-api.md "Claim and retry rules" (the claim itself: "Transitions into Calling: not
shown"); decisions.md D3 (the 409 body), D2 (the service's clock; attempts in UTC). A cap counts
dial attempts to one phone number (E.164) across every lead with it.
"""

import importlib.util
import json
from datetime import datetime, timedelta

import pytest

from conftest import (
    ENGINE_SECRET,
    ROOT,
    TZ,
    add_contact_attempts,
    cli,
    contact_attempts,
    progressive_claims_at_once,
    utc_naive,
)
from dialerapi.rules.compliance import places
from dialerapi.rules.compliance.us_area_codes import AREA_CODES
from dialerapi.rules.dialing import claims
from dialerapi.rules.leads import dialstate
from dialerapi.rules.views import floor
from dialerapi.upkeep import jobs

NOW = datetime(2026, 11, 21, 10, 0, 0)
FLORIDA = "+1 305 202 1234"
FLORIDA_E164 = 13052021234
OKLAHOMA = "+1 405 202 1234"
NEW_YORK = "+1 212 202 1234"
PRESET = "florida-oklahoma-3-per-24h"
ENGINE = {"Authorization": f"Bearer {ENGINE_SECRET}"}


@pytest.fixture(autouse=True)
def fixed_now(frozen_clock):
    frozen_clock(NOW)


def enable(sql, name=PRESET):
    sql("UPDATE dialerapi_contact_caps SET enabled = 1 WHERE name = %s", name)


def settle(run, oli_id, outcome="no_answer", now=NOW):
    return run(dialstate.settle, oli_id, outcome, now, tz=TZ, grace_minutes=10, release_retry_ms=60000)


def claim(run, agent_id=501, now=NOW):
    row = run(claims.claim_next, agent_id, now, tz=TZ)
    return row and row["oli_id"]


def test_regions_come_from_phonenumbers_area_codes():
    """Item 1: a US state by its area codes (phonenumbers' geocoding data), a country by its code."""
    assert places.regions_of(FLORIDA_E164) == {"US", "US-FL"}
    assert places.regions_of(14052021234) == {"US", "US-OK"}
    assert places.regions_of(18132021234) == {"US", "US-FL"}  # Tampa: another Florida area code
    assert places.regions_of(12122021234) == {"US", "US-NY"}
    assert places.regions_of(442079460958) == {"GB"}
    assert places.regions_of(14162021234) == {"CA"}


def test_the_area_code_table_is_phonenumbers_own_data():
    """The service's table of US area codes (generated: phonenumbers' geocoding data takes about
    96 MB once imported, too much for every worker) is exactly what the installed phonenumbers says."""
    spec = importlib.util.spec_from_file_location("us_area_codes", ROOT / "scripts" / "us_area_codes.py")
    generator = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generator)
    assert AREA_CODES == generator.area_codes()
    assert (AREA_CODES[305], AREA_CODES[813], AREA_CODES[405], AREA_CODES[212]) == (("FL",), ("FL",), ("OK",), ("NY",))


def test_area_codes_named_only_by_longer_prefixes_are_in_the_table():
    """Issue #65: 203, 310, 713 and 718 have no 4-digit entry in the geocoding data, only longer ones,
    and were missing: a US-TX cap let calls to +1 713 through. A code whose exchanges lie in two
    states counts for both."""
    assert {code: AREA_CODES.get(code) for code in (203, 310, 713, 718)} == {
        203: ("CT",), 310: ("CA",), 713: ("TX",), 718: ("NY",)}
    assert places.regions_of(17135550123) == {"US", "US-TX"}
    assert places.regions_of(13105550123) == {"US", "US-CA"}
    split = {code: states for code, states in AREA_CODES.items() if len(states) > 1}
    assert split and all(len(states) == 2 for states in split.values())
    code, states = next(iter(split.items()))
    assert places.regions_of(int(f"1{code}5550123")) == {"US", *(f"US-{state}" for state in states)}


def test_presets_are_shipped_off_and_the_commands_list_enable_and_disable_them(database_url, command, sql):
    """Item 1: `dialerapi caps list|enable|disable`, presets off by default (the installed program once)."""
    listed = cli(database_url, "caps", "list")
    assert listed.returncode == 0, listed.stderr
    assert PRESET in listed.stdout and "reg-f-7-in-7" in listed.stdout
    assert "a US state (US-FL) is the one of its area code" in listed.stdout
    assert {row["name"]: row["enabled"] for row in sql("SELECT name, enabled FROM dialerapi_contact_caps")} == {
        PRESET: 0, "reg-f-7-in-7": 0}
    assert command("caps", "enable", PRESET).exit_code == 0
    assert sql.one("SELECT enabled FROM dialerapi_contact_caps WHERE name = %s", PRESET)["enabled"] == 1
    assert command("caps", "disable", PRESET).exit_code == 0
    assert sql.one("SELECT enabled FROM dialerapi_contact_caps WHERE name = %s", PRESET)["enabled"] == 0
    unknown = command("caps", "enable", "no-such-cap")
    assert unknown.exit_code == 1 and "no cap is named 'no-such-cap'" in unknown.output
    removed = command("caps", "remove", PRESET)
    assert removed.exit_code == 1 and "preset" in removed.output


@pytest.mark.parametrize("args, message", [
    (["--max", "0", "--per", "24h"], "--max 0"),
    (["--max", "3", "--per", "24"], "--per '24'"),
    (["--max", "3", "--per", "40d"], "at most 31d"),
    (["--max", "3", "--per", "24h", "--region", "US-ZZ"], "--region US-ZZ"),
    (["--max", "3", "--per", "24h", "--region", "XX"], "--region XX"),
    (["--max", "3", "--per", "24h", "--form-type", "x" * 65], "--form-type"),
])
def test_a_cap_that_cannot_hold_is_refused_naming_what_is_wrong(command, sql, args, message):
    """Item 1: `dialerapi caps add` validated with a clear error; nothing is stored."""
    result = command("caps", "add", "my-cap", *args)
    assert result.exit_code == 1 and message in result.output, result.output
    assert not sql("SELECT name FROM dialerapi_contact_caps WHERE name = 'my-cap'")


def test_an_added_cap_is_stored_off_and_a_taken_name_is_refused(command, sql):
    result = command("caps", "add", "texas-debt", "--max", "2", "--per", "7d", "--region", "us-tx",
                     "--form-type", "debt")
    assert result.exit_code == 0, result.output
    assert sql.one("SELECT max_attempts, window_seconds, region, form_type, enabled FROM dialerapi_contact_caps "
                   "WHERE name = 'texas-debt'") == {"max_attempts": 2, "window_seconds": 7 * 86400, "region": "US-TX",
                                                    "form_type": "debt", "enabled": 0}
    again = command("caps", "add", "texas-debt", "--max", "2", "--per", "7d")
    assert again.exit_code == 1 and "a cap has it already" in again.output


def test_the_fourth_lead_of_a_florida_number_waits_for_the_window(new_lead, floor_agent, run, sql):
    """Item 2: three attempts in 24 hours across leads of one number; the fourth lead is passed over,
    its next_retry_at set to when the first attempt leaves the window; another number goes on."""
    floor_agent()
    enable(sql)
    for n in range(4):
        new_lead(f"FL-{n}", phone_number=FLORIDA)
    new_lead("NY-0", phone_number=NEW_YORK)
    moments = [NOW, NOW + timedelta(minutes=5), NOW + timedelta(minutes=10)]
    for n, moment in enumerate(moments):
        assert claim(run, now=moment) == f"FL-{n}"
        settle(run, f"FL-{n}", now=moment + timedelta(seconds=30))
    assert claim(run, now=NOW + timedelta(minutes=20)) == "NY-0"
    assert claim(run, now=NOW + timedelta(minutes=20)) is None
    held = sql.one("SELECT dial_status, isReserved, next_retry_at, contact_cap, contact_cap_until FROM sales_master "
                   "WHERE oli_id = 'FL-3'")
    assert held == {"dial_status": "Pending", "isReserved": 0, "next_retry_at": NOW + timedelta(days=1),
                    "contact_cap": PRESET, "contact_cap_until": NOW + timedelta(days=1)}
    assert [at for _, at, _, _ in contact_attempts(sql, FLORIDA_E164)] == [utc_naive(moment) for moment in moments]
    # A second before the window frees the number it is still held; at that moment the lead is due.
    assert claim(run, now=NOW + timedelta(days=1, seconds=-1)) is None
    assert claim(run, now=NOW + timedelta(days=1)) == "FL-3"


def test_every_number_is_counted_whether_or_not_a_cap_applies(new_lead, floor_agent, run, sql):
    """Issue #65 item 1: attempts were recorded only while an enabled cap applied to the number, so a
    cap enabled later forgot the calls already made. Every counted claim is kept, cap or none."""
    floor_agent()
    enable(sql)
    for n in range(5):
        new_lead(f"NY-{n}", phone_number=NEW_YORK)
    for n in range(5):
        assert claim(run) == f"NY-{n}"
        settle(run, f"NY-{n}")
    assert [at for _, at, _, _ in contact_attempts(sql, 12122021234)] == [utc_naive(NOW)] * 5


def test_a_cap_enabled_mid_day_holds_the_calls_already_made(command, new_lead, floor_agent, run, sql, client):
    """Issue #65 item 1: a compliance officer enables a cap at 10:00 for the day; the law counts the
    calls of 08:00. Three calls to a California number with no cap on, then `caps add --enable`:
    the next progressive claim passes the number's lead over (held until the first call leaves the
    window) and a redial answers 409 contact_cap."""
    floor_agent()
    for n in range(4):
        new_lead(f"CA-{n}", phone_number="+1 310 555 0123")
    morning = [NOW - timedelta(hours=2), NOW - timedelta(hours=1, minutes=30), NOW - timedelta(hours=1)]
    for n, moment in enumerate(morning):
        assert claim(run, now=moment) == f"CA-{n}"
        settle(run, f"CA-{n}", now=moment + timedelta(seconds=40))
    assert command("caps", "add", "california-3-per-day", "--max", "3", "--per", "24h", "--region", "US-CA",
                   "--enable").exit_code == 0
    assert claim(run) is None
    held = sql.one("SELECT contact_cap, next_retry_at FROM sales_master WHERE oli_id = 'CA-3'")
    assert held == {"contact_cap": "california-3-per-day", "next_retry_at": morning[0] + timedelta(days=1)}
    redial = client.post("/engine/claim", headers=ENGINE, json={
        "mode": "redial", "request_id": "r-1", "agent_id": 501, "oli_id": "CA-0"})
    assert redial.status_code == 409 and redial.get_json()["reason"] == "contact_cap", redial.get_json()


def test_a_cap_of_one_form_type_counts_only_its_own_attempts(command, new_lead, floor_agent, run, sql):
    """Item 1: per form_type (Regulation F counts per debt)."""
    floor_agent(skills=("home_loan", "debt"))
    assert command("caps", "add", "debt-1-per-day", "--max", "1", "--per", "24h", "--form-type", "debt",
                   "--enable").exit_code == 0
    new_lead("HL-0", phone_number=FLORIDA)
    new_lead("HL-1", phone_number=FLORIDA)
    new_lead("DEBT-0", phone_number=FLORIDA, form_type="debt")
    new_lead("DEBT-1", phone_number=FLORIDA, form_type="debt")
    got = set()
    for _ in range(4):
        got.add(claim(run))
        for oli_id in got - {None}:
            if sql.lead(oli_id)["isReserved"]:
                settle(run, oli_id)
    assert got == {"HL-0", "HL-1", "DEBT-0", None} or got == {"HL-0", "HL-1", "DEBT-1", None}
    assert sorted(form_type for _, _, form_type, _ in contact_attempts(sql)) == ["debt", "home_loan", "home_loan"]


def test_a_redial_at_the_cap_answers_409_with_the_cap_and_when_it_frees(new_lead, floor_agent, run, sql, client):
    """Item 2: a redial answers 409 not_claimable, reason contact_cap, the cap's name and the moment
    (D3); a redial the customer asked for, and an inbound call, go through and are not counted."""
    floor_agent()
    enable(sql)
    for n in range(4):
        new_lead(f"FL-{n}", phone_number=FLORIDA)
    for n in range(3):
        assert claim(run) == f"FL-{n}"
        settle(run, f"FL-{n}")

    def redial(request_id, **extra):
        return client.post("/engine/claim", headers=ENGINE, json={
            "mode": "redial", "request_id": request_id, "agent_id": 501, "oli_id": "FL-3", **extra})

    refused = redial("r-1")
    assert refused.status_code == 409
    assert refused.get_json() == {"ok": False, "error": "not_claimable", "reason": "contact_cap", "cap": PRESET,
                                  "frees_at": "2026-11-22 10:00:00"}
    assert sql.lead("FL-3")["isReserved"] == 0
    asked = redial("r-2", customer_request=True)
    assert asked.status_code == 200 and asked.get_json()["lead"]["oli_id"] == "FL-3"
    assert len(contact_attempts(sql)) == 3
    settle(run, "FL-3", "answered")
    inbound = client.post("/engine/claim", headers=ENGINE, json={
        "mode": "inbound", "request_id": "i-1", "agent_id": 501, "oli_id": "FL-0"})
    assert inbound.status_code == 200
    assert len(contact_attempts(sql)) == 3


def test_customer_request_is_a_boolean(client, floor_agent):
    floor_agent()
    answer = client.post("/engine/claim", headers=ENGINE, json={
        "mode": "redial", "request_id": "r-1", "agent_id": 501, "oli_id": "X", "customer_request": "yes"})
    assert answer.status_code == 400 and answer.get_json()["details"][0]["field"] == "customer_request"


def test_an_originate_failure_takes_its_attempt_back(new_lead, floor_agent, run, sql):
    """Item 2: a call that rang nobody is no contact; a claim's attempt goes with its originate failure."""
    floor_agent()
    enable(sql)
    new_lead("FL-0", phone_number=FLORIDA)
    assert claim(run) == "FL-0"
    assert len(contact_attempts(sql)) == 1
    settle(run, "FL-0", "originate_failed")
    assert contact_attempts(sql) == []


def florida_at_its_cap(floor_agent, sql):
    """Agent 501 free, the Florida preset on, and FLORIDA called three times in the last three hours."""
    floor_agent()
    enable(sql)
    add_contact_attempts(sql, FLORIDA_E164, [NOW - timedelta(hours=3), NOW - timedelta(hours=2),
                                             NOW - timedelta(hours=1)])


def test_a_hold_is_told_with_its_cap_and_the_lead_read_says_why(new_lead, floor_agent, run, sql, client, auth):
    """Issue #65 item 7: a hold moved next_retry_at (and a CRM-set callback's time) and wrote no
    event, and GET /api/leads/{oli_id} showed the new times but not why. A hold now writes
    lead.held with the cap and frees_at, and the lead read's `contact_cap` says the same."""
    florida_at_its_cap(floor_agent, sql)
    new_lead("FL-0", phone_number=FLORIDA)
    new_lead("FL-CB", phone_number=FLORIDA)
    sql("UPDATE sales_master SET dial_status = 'Callback', callback_scheduled_at = %s WHERE oli_id = 'FL-CB'",
        NOW - timedelta(minutes=10))
    assert claim(run) is None
    frees_at = "2026-11-22 07:00:00"  # the first of the three attempts leaves the 24 hours
    feed = client.get("/api/lead-events", headers=auth).get_json()["events"]
    held = {event["oli_id"]: event["data"] for event in feed if event["type"] == "lead.held"}
    assert set(held) == {"FL-0", "FL-CB"}
    assert (held["FL-0"]["cap"], held["FL-0"]["frees_at"], held["FL-0"]["lead"]["next_retry_at"]) == (
        PRESET, frees_at, frees_at)
    assert held["FL-CB"]["lead"]["callback_scheduled_at"] == frees_at
    for oli_id in ("FL-0", "FL-CB"):
        read = client.get(f"/api/leads/{oli_id}", headers=auth).get_json()["lead"]
        assert read["contact_cap"] == {"cap": PRESET, "frees_at": frees_at}
    # A push moves the lead on: it no longer waits on the cap, and the read says so.
    new_lead("FL-0", phone_number=FLORIDA, priority_id=1)
    assert client.get("/api/leads/FL-0", headers=auth).get_json()["lead"]["contact_cap"] is None


def test_an_originate_failure_at_the_cap_frees_the_leads_held_meanwhile(app, new_lead, floor_agent, run, sql):
    """Issue #65 item 4: an originate failure gave its attempt back (3 to 2) but the leads held
    meanwhile kept next_retry_at +24 h. 16 claimers released at once on 16 leads of a number with 2
    of its 3 attempts used, twice, the served call failing to originate each time: each round serves
    one (the others pass the number over while it is live, issue #65 item 6, instead of holding it
    for a day). A lead held while the call was live (as the release before this one held it) is due
    again once the attempt is given back."""
    for agent_id in range(501, 517):
        floor_agent(agent_id)
    enable(sql)
    add_contact_attempts(sql, FLORIDA_E164, [NOW - timedelta(hours=2), NOW - timedelta(hours=1)])
    for n in range(16):
        new_lead(f"FL-{n:02d}", phone_number=FLORIDA)
    for round_ in range(2):
        got, errors = progressive_claims_at_once(app, range(501, 517), NOW)
        served = [oli_id for oli_id in got if oli_id]
        assert not errors and len(served) == 1, (round_, served, errors)
        assert len(contact_attempts(sql, FLORIDA_E164)) == 3
        held = "FL-15" if served[0] != "FL-15" else "FL-14"
        sql("UPDATE sales_master SET next_retry_at = %s, contact_cap = %s, contact_cap_until = %s WHERE oli_id = %s",
            NOW + timedelta(days=1), PRESET, NOW + timedelta(days=1), held)
        settle(run, served[0], "originate_failed")
        assert len(contact_attempts(sql, FLORIDA_E164)) == 2
        freed = sql.one("SELECT next_retry_at, contact_cap, contact_cap_until FROM sales_master WHERE oli_id = %s", held)
        assert freed == {"next_retry_at": NOW, "contact_cap": None, "contact_cap_until": None}, freed
        told = json.loads(sql.one("SELECT body FROM dialerapi_lead_events WHERE type = 'lead.hold_ended'"
                                  " AND oli_id = %s ORDER BY id DESC LIMIT 1", held)["body"])
        assert (told["reason"], told["cap"], told["lead"]["next_retry_at"]) == (
            "attempt_given_back", PRESET, "2026-11-21 10:00:00"), "never a change without its event"
    assert sql("SELECT oli_id FROM sales_master WHERE contact_cap_until IS NOT NULL") == []


def test_the_floor_counts_leads_waiting_on_a_cap_and_the_report_lists_the_numbers(
        command, new_lead, floor_agent, run, sql):
    """Items 3 and 4: /engine/floor's leads_waiting_on_caps per form_type; `dialerapi report caps`."""
    floor_agent()
    enable(sql)
    for n in range(5):
        new_lead(f"FL-{n}", phone_number=FLORIDA)
    for n in range(3):
        assert claim(run) == f"FL-{n}"
        settle(run, f"FL-{n}")
    assert claim(run) is None
    state = run(floor.floor_state, NOW, None, TZ)
    assert [(row["form_type"], row["leads_waiting_on_caps"]) for row in state["form_types"]] == [("home_loan", 2)]
    report = command("report", "caps", "--from", "2026-11-21", "--to", "2026-11-21", "--json")
    assert report.exit_code == 0, report.output
    assert json.loads(report.output) == [{"day": "2026-11-21", "cap": PRESET, "form_type": "home_loan",
                                          "numbers": 1, "leads_held": 2}]
    # A push moves a held lead on: it is due again and no longer counted as waiting.
    new_lead("FL-3", phone_number=FLORIDA)
    state = run(floor.floor_state, NOW, None, TZ)
    assert state["form_types"][0]["leads_waiting_on_caps"] == 1


def test_the_report_splits_a_numbers_holds_by_form_type(command, new_lead, floor_agent, run, sql):
    """Issue #65 item 5: `report caps` kept one row per day, cap and number with the first held
    lead's form_type (16 credit_card and 15 home_loan holds shown as 31 of one; migration 0022).
    Its rows equal the leads the claims held, form_type by form_type."""
    floor_agent(skills=("credit_card", "home_loan"))
    enable(sql)
    add_contact_attempts(sql, FLORIDA_E164, [NOW - timedelta(hours=3), NOW - timedelta(hours=2),
                                             NOW - timedelta(hours=1)])
    for n in range(4):
        new_lead(f"CC-{n}", phone_number=FLORIDA, form_type="credit_card")
    for n in range(3):
        new_lead(f"HL-{n}", phone_number=FLORIDA)
    assert claim(run) is None
    held = sql("SELECT form_type, COUNT(*) AS n FROM sales_master WHERE contact_cap = %s GROUP BY form_type"
               " ORDER BY form_type", PRESET)
    assert [(row["form_type"], row["n"]) for row in held] == [("credit_card", 4), ("home_loan", 3)]
    report = command("report", "caps", "--from", "2026-11-21", "--to", "2026-11-21", "--json")
    assert report.exit_code == 0, report.output
    assert json.loads(report.output) == [
        {"day": "2026-11-21", "cap": PRESET, "form_type": "credit_card", "numbers": 1, "leads_held": 4},
        {"day": "2026-11-21", "cap": PRESET, "form_type": "home_loan", "numbers": 1, "leads_held": 3}]


def test_sixteen_claimers_at_once_on_a_number_at_its_cap_minus_one_serve_exactly_one(
        app, new_lead, floor_agent, run, sql):
    """Item 2: 16 claimers released at once on 16 leads sharing a number with 2 of its 3 attempts
    used: exactly one is served, checked against the attempts and the leads afterwards."""
    for agent_id in range(501, 517):
        floor_agent(agent_id)
    enable(sql)
    for n in range(2):
        new_lead(f"USED-{n}", phone_number=FLORIDA)
        assert claim(run) == f"USED-{n}"
        settle(run, f"USED-{n}")
    for n in range(16):
        new_lead(f"FL-{n}", phone_number=FLORIDA)
    got, errors = progressive_claims_at_once(app, range(501, 517), NOW)
    assert not errors
    served = [oli_id for oli_id in got if oli_id]
    assert len(served) == 1 and len(got) == 16
    attempts = contact_attempts(sql, FLORIDA_E164)
    assert len(attempts) == 3 and attempts[-1][3] == sql.lead(served[0])["reservation_id"]
    assert [row["oli_id"] for row in sql("SELECT oli_id FROM sales_master WHERE isReserved = 1")] == served
    # The others passed the number over while it was live (one live call per number, issue #65), not held.
    waiting = sql("SELECT contact_cap FROM sales_master WHERE oli_id LIKE 'FL-%%' AND isReserved = 0")
    assert len(waiting) == 15 and all(row["contact_cap"] is None for row in waiting)
    # And the call records: the served call ends; the number has 3 calls, every one in the window.
    settle(run, served[0])
    assert claim(run) is None
    held = sql("SELECT contact_cap FROM sales_master WHERE oli_id LIKE 'FL-%%' AND isReserved = 0"
               " AND oli_id <> %s", served[0])
    assert len(held) == 15 and all(row["contact_cap"] == PRESET for row in held)
    calls = sql("SELECT a.ended_at FROM sales_call_attempts AS a JOIN sales_master AS m ON m.id = a.lead_id"
                " WHERE m.phone_e164 = %s", FLORIDA_E164)
    assert len(calls) == 3


def test_numbers_with_no_attempt_in_31_days_are_pruned(app, sql):
    """The prune job keeps a number while a cap of the longest window (31 days) could count its attempts."""
    add_contact_attempts(sql, 442079460958, [NOW - timedelta(days=31, minutes=1)])
    add_contact_attempts(sql, FLORIDA_E164, [NOW - timedelta(days=40), NOW - timedelta(days=30)])
    assert jobs.prune_tick(app)["contact_numbers"] == 1
    assert [row["phone_e164"] for row in sql("SELECT phone_e164 FROM dialerapi_contact_numbers")] == [FLORIDA_E164]


def test_a_predictive_claim_passes_over_a_capped_number_too(new_lead, floor_agent, run, sql):
    """Item 2: predictive claims pass a lead at its cap over, as progressive ones do."""
    florida_at_its_cap(floor_agent, sql)
    new_lead("FL-0", phone_number=FLORIDA)
    new_lead("NY-0", phone_number=NEW_YORK)
    assert run(claims.claim_predictive, NOW, tz=TZ)["oli_id"] == "NY-0"
    assert run(claims.claim_predictive, NOW, tz=TZ) is None
    assert sql.one("SELECT next_retry_at, contact_cap FROM sales_master WHERE oli_id = 'FL-0'") == {
        "next_retry_at": NOW + timedelta(hours=21), "contact_cap": PRESET}
