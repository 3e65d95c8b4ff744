"""When may this person be called (issue #68; docs/compliance/state-rules.md): the state rules, where
the customer is, declared emergencies, consent, revocation over HTTP and "why not now", through the
push, the claims, the lead read, the CLI, and 16 claimers at once on a holiday boundary.

Louisiana numbers are area code 504, Texas 214, Alabama 205 (all America/Chicago); New York 212.
2026-12-25 (Christmas) is a Friday, 2026-11-29 a Sunday.
"""

import json
from datetime import datetime, timezone
from zoneinfo import ZoneInfo

import pytest

from conftest import TZ, progressive_claims_at_once
from dialerapi.plumbing import clock
from dialerapi.rules.compliance import claim_checks
from dialerapi.rules.config import dialer as dialer_config
from dialerapi.rules.dialing import claims

CHICAGO = ZoneInfo("America/Chicago")
CHRISTMAS_NOON = datetime(2026, 12, 25, 12, 0, tzinfo=CHICAGO)
SUNDAY_NOON = datetime(2026, 11, 29, 12, 0, tzinfo=CHICAGO)
MONDAY_NOON = datetime(2026, 11, 30, 12, 0, tzinfo=CHICAGO)


def phone(area, n):
    return f"+1 {area} 201 {n:04d}"


def at(moment):
    """Freeze the service clock at aware `moment`; return now as a claim gets it (wall-clock TZ)."""
    clock.set_utc_source(lambda: moment.astimezone(timezone.utc))
    return clock.now(TZ)


def wall(moment):
    """`moment` as the API writes it: 'YYYY-MM-DD HH:MM:SS' in DB_TIMEZONE."""
    return clock.format_wall_clock(moment.astimezone(TZ).replace(tzinfo=None))


@pytest.fixture(autouse=True)
def all_day_work_window(sql):
    """The floor's work window (decisions.md D1, wall-clock DB_TIMEZONE) open all day: these tests
    hold the state rules in the customer's local time, at whatever DB_TIMEZONE make test-clock
    gives (Asia/Kolkata's 23:30 is Chicago's noon, and a lead pushed outside the window is due at its
    next start, not at the moment the test claims it)."""
    sql("UPDATE sales_dialer_config SET work_start = '00:00:00', work_end = '23:59:59'")


@pytest.fixture
def push(client, auth):
    def push(oli_id, phone_number, **fields):
        body = {"oli_id": oli_id, "phone_number": phone_number, "client_name": "Customer", "form_type": "home_loan",
                "priority_id": 2, **fields}
        response = client.post("/api/leads", json=body, headers=auth)
        assert response.status_code == 201, response.get_json()

    return push


@pytest.fixture
def rules_on(command):
    def enable(*names):
        result = command("rules", "enable", *names)
        assert result.exit_code == 0, result.output

    return enable


def read(client, auth, oli_id):
    response = client.get(f"/api/leads/{oli_id}", headers=auth)
    assert response.status_code == 200, response.get_json()
    return response.get_json()["lead"]


def claim_all(run, agent_id, now):
    """Every lead agent `agent_id` claims at `now`, one after another, until none is left."""
    claimed = []
    while (row := run(claims.claim_next, agent_id, now, tz=TZ)) is not None:
        claimed.append(row["oli_id"])
    return sorted(claimed)


def test_the_rules_are_off_until_enabled_and_hold_at_the_next_claim(run, push, floor_agent, rules_on, command):
    at(datetime(2026, 11, 27, 12, 0, tzinfo=CHICAGO))
    floor_agent()
    push("LA-1", phone(504, 1))
    push("TX-1", phone(214, 1))
    now = at(SUNDAY_NOON)
    rules_on("us-la")
    assert claim_all(run, 501, now) == ["TX-1"]
    assert command("rules", "disable", "us-la").exit_code == 0
    assert claim_all(run, 501, now) == ["LA-1"]


def test_a_redial_of_a_held_lead_is_refused_with_the_rule_its_source_and_next_at(client, engine_auth, push, floor_agent,
                                                                                rules_on, sql):
    at(datetime(2026, 12, 20, 12, 0, tzinfo=CHICAGO))
    floor_agent()
    push("LA-1", phone(504, 1))
    sql("UPDATE sales_master SET dial_status = 'Received' WHERE oli_id = 'LA-1'")
    rules_on("us-federal", "us-la")
    at(CHRISTMAS_NOON)
    response = client.post("/engine/claim", json={"mode": "redial", "agent_id": 501, "oli_id": "LA-1",
                                                    "request_id": "r1"}, headers=engine_auth)
    body = response.get_json()
    assert response.status_code == 409 and body["reason"] == "state_holiday" and body["rule"] == "us-la"
    assert body["note"] == "Christmas Day" and "45:811" in body["source"]
    assert body["next_at"] == wall(datetime(2026, 12, 26, 8, 0, tzinfo=CHICAGO))  # Saturday's first lawful minute


def test_the_lead_read_says_where_the_customer_is_their_consent_and_why_not_now(client, auth, push, rules_on):
    at(datetime(2026, 11, 27, 12, 0, tzinfo=CHICAGO))
    push("BY-AREA", phone(504, 1))
    push("BY-ZIP", "+1 212 555 0100", postal_code="35203")
    push("BY-REGION", "+1 212 555 0101", region="US-LA", postal_code="35203",
         consent={"type": "written", "at": "2026-11-20 10:00:00", "source": "web form 7"})
    rules_on("us-federal", "us-al", "us-la")
    at(SUNDAY_NOON)
    by_area, by_zip, by_region = (read(client, auth, oli_id) for oli_id in ("BY-AREA", "BY-ZIP", "BY-REGION"))
    assert by_area["place"] == {"regions": ["US-LA"], "source": "area_code", "region": None, "postal_code": None}
    assert by_zip["place"]["regions"] == ["US-AL"] and by_zip["place"]["source"] == "postal_code"
    assert by_region["place"] == {"regions": ["US-LA"], "source": "region", "region": "US-LA", "postal_code": "35203"}
    assert by_region["consent"] == {"type": "written", "at": "2026-11-20 10:00:00", "source": "web form 7"}
    assert by_area["consent"] is None and by_area["call_zones"] == ["America/Chicago"]
    assert by_region["call_zones"] == ["America/Chicago"], "a region the CRM gives moves the customer's zone"
    monday_eight = wall(datetime(2026, 11, 30, 8, 0, tzinfo=CHICAGO))
    sunday = {"now": False, "reason": "state_sunday", "rule": "us-la", "source": by_area["callable"]["source"],
              "note": None, "next_at": monday_eight}
    assert by_area["callable"] == {**sunday, "predictive": sunday}
    assert by_zip["callable"]["rule"] == "us-al" and by_zip["callable"]["next_at"] == monday_eight
    at(MONDAY_NOON)
    open_now = {"now": True, "reason": None, "rule": None, "source": None, "note": None, "next_at": None}
    assert read(client, auth, "BY-AREA")["callable"] == {**open_now, "predictive": open_now}


def test_why_not_now_says_not_due_do_not_call_and_the_calling_window(client, auth, push, sql, rules_on, command):
    at(datetime(2026, 11, 30, 12, 0, tzinfo=CHICAGO))
    push("LATER", phone(214, 1))
    push("LISTED", phone(214, 2))
    push("DONE", phone(214, 3))
    later = datetime(2026, 12, 1, 21, 30, tzinfo=CHICAGO)
    sql("UPDATE sales_master SET dial_status = 'Not Connected', next_retry_at = %s WHERE oli_id = 'LATER'",
        later.astimezone(TZ).replace(tzinfo=None))
    sql("UPDATE sales_master SET dial_status = 'Disposed' WHERE oli_id = 'DONE'")
    assert command("dnc", "add", phone(214, 2)).exit_code == 0
    sql("UPDATE sales_dialer_config SET obey_calling_window = 1")
    rules_on("us-tx")
    assert read(client, auth, "LATER")["callable"]["reason"] == "not_due"
    # Due at 21:30, outside Texas's hours and the window: callable the morning after, at 09:00.
    assert read(client, auth, "LATER")["callable"]["next_at"] == wall(datetime(2026, 12, 2, 9, 0, tzinfo=CHICAGO))
    listed = {"now": False, "reason": "do_not_call", "rule": None, "source": None, "note": None, "next_at": None}
    assert read(client, auth, "LISTED")["callable"] == {**listed, "predictive": listed}
    assert read(client, auth, "DONE")["callable"]["reason"] == "not_due"
    assert read(client, auth, "DONE")["callable"]["next_at"] is None
    result = command("leads", "why", "LATER")
    assert result.exit_code == 0 and "not_due" in result.output and "US-TX" in result.output


def test_a_restriction_holds_its_region_at_the_next_claim_until_removed(run, push, floor_agent, command):
    at(datetime(2026, 9, 1, 8, 0, tzinfo=CHICAGO))
    floor_agent()
    push("LA-1", phone(504, 1))
    push("TX-1", phone(214, 1))
    added = command("restrictions", "add", "us-la", "--from", "2026-09-01", "--to", "2026-09-03",
                    "--note", "state of emergency (Hurricane)")
    assert added.exit_code == 0, added.output
    listed = command("restrictions", "list", "--json")
    assert '"US-LA"' in listed.output and "Hurricane" in listed.output
    assert claim_all(run, 501, at(datetime(2026, 9, 3, 23, 59, tzinfo=CHICAGO))) == ["TX-1"]
    restriction_id = int(added.output.split()[1])
    assert command("restrictions", "remove", str(restriction_id)).exit_code == 0
    assert claim_all(run, 501, at(datetime(2026, 9, 2, 12, 0, tzinfo=CHICAGO))) == ["LA-1"]
    assert command("restrictions", "remove", str(restriction_id)).exit_code == 1


def test_a_restriction_ends_at_the_end_of_its_last_day_in_the_regions_own_time(run, push, floor_agent, command):
    at(datetime(2026, 9, 1, 8, 0, tzinfo=CHICAGO))
    floor_agent()
    push("LA-1", phone(504, 1))
    assert command("restrictions", "add", "US-LA", "--from", "2026-09-01", "--to", "2026-09-03",
                   "--note", "state of emergency").exit_code == 0
    assert claim_all(run, 501, at(datetime(2026, 9, 3, 23, 59, tzinfo=CHICAGO))) == []
    assert claim_all(run, 501, at(datetime(2026, 9, 4, 0, 0, tzinfo=CHICAGO))) == ["LA-1"]


def test_consent_exempts_louisiana_holidays_and_florida_asks_it_of_automated_claims(run, push, floor_agent, rules_on,
                                                                                    client, engine_auth, sql):
    at(datetime(2026, 12, 20, 12, 0, tzinfo=CHICAGO))
    floor_agent()
    consent = {"type": "express", "at": "2026-12-01 10:00:00"}
    push("LA-CONSENT", phone(504, 1), consent=consent)
    push("LA-NONE", phone(504, 2))
    push("FL-NONE", phone(305, 1))
    push("FL-WRITTEN", phone(305, 2), consent={**consent, "type": "written"})
    rules_on("us-la", "us-fl")
    now = at(CHRISTMAS_NOON)
    assert claim_all(run, 501, now) == ["FL-WRITTEN", "LA-CONSENT"]
    sql("UPDATE sales_master SET dial_status = 'Received' WHERE oli_id = 'FL-NONE'")
    response = client.post("/engine/claim", json={"mode": "redial", "agent_id": 501, "oli_id": "FL-NONE",
                                                    "request_id": "r1"}, headers=engine_auth)
    assert response.status_code == 200, "an agent's manual redial needs no consent"


def test_a_lead_of_the_previous_release_is_worked_out_again_by_the_claim_that_finds_its_profile_stale(
        run, push, floor_agent, rules_on, sql):
    at(datetime(2026, 11, 27, 12, 0, tzinfo=CHICAGO))
    floor_agent()
    push("OLD", phone(504, 1))
    # As the 0024 release wrote it: a call zone of its IANA zones alone, no region.
    zone = run(claim_checks.zone_ids, [("America/Chicago",)])[("America/Chicago",)]
    sql("UPDATE sales_master SET call_zone_id = %s WHERE oli_id = 'OLD'", zone)
    rules_on("us-la")
    assert claim_all(run, 501, at(SUNDAY_NOON)) == []
    names = sql.one("SELECT z.zones FROM sales_master m JOIN dialerapi_call_zones z ON z.id = m.call_zone_id"
                    " WHERE m.oli_id = 'OLD'")["zones"]
    assert names == "America/Chicago;@US-LA"
    assert claim_all(run, 501, at(MONDAY_NOON)) == ["OLD"]


@pytest.mark.parametrize("field, value", [
    ("region", "US-XX"), ("region", "Louisiana"), ("region", "us-la"), ("postal_code", "70112!"),
    ("postal_code", "1" * 11),
    ("consent", {"type": "verbal", "at": "2026-11-20 10:00:00"}), ("consent", {"type": "written"}),
    ("consent", {"type": "written", "at": "2026-11-20 10:00:00", "source": "x" * 256}),
])
def test_a_bad_place_or_consent_is_a_clear_400_and_the_batch_writes_nothing(client, auth, sql, field, value):
    good = {"oli_id": "GOOD", "phone_number": phone(504, 1), "client_name": "C", "form_type": "home_loan",
            "priority_id": 2}
    response = client.post("/api/leads", json={"leads": [good, {**good, "oli_id": "BAD", field: value}]},
                           headers=auth)
    body = response.get_json()
    assert response.status_code == 400 and body["error"] == "validation_failed"
    assert body["details"][0]["field"].startswith(f"leads[1].{field}")
    assert list(sql("SELECT oli_id FROM sales_master")) == []


def test_the_crm_lists_and_unlists_a_number_over_http_honoured_at_the_next_claim(client, auth, run, push, floor_agent,
                                                                                sql):
    at(datetime(2026, 11, 30, 12, 0, tzinfo=CHICAGO))
    floor_agent()
    push("A", phone(214, 1))
    push("B", phone(214, 1))
    listed = client.post("/api/dnc", json={"phone_number": phone(214, 1), "reason": "revoked", "oli_id": "A"},
                         headers=auth)
    assert listed.status_code == 201 and listed.get_json() == {
        "ok": True, "phone_number": "+12142010001", "phone": "+12142010001", "added": True}
    again = client.post("/api/dnc", json={"phone": "+1 (214) 201-0001", "reason": "request"}, headers=auth)
    assert again.status_code == 200 and again.get_json()["added"] is False
    events = sql("SELECT oli_id, body FROM dialerapi_lead_events WHERE type = 'lead.do_not_call' ORDER BY oli_id")
    events = [{"oli_id": row["oli_id"], "source": json.loads(row["body"])["source"]} for row in events]
    assert [(row["oli_id"], row["source"]) for row in events] == [("A", "revoked"), ("B", "revoked")]
    assert run(claims.claim_next, 501, clock.now(TZ), tz=TZ) is None
    removed = client.delete("/api/dnc/+12142010001", headers=auth)
    assert removed.status_code == 200 and removed.get_json() == {
        "ok": True, "phone_number": "+12142010001", "phone": "+12142010001", "removed": True}
    assert client.delete("/api/dnc/+12142010001", headers=auth).get_json()["removed"] is False
    assert run(claims.claim_next, 501, clock.now(TZ), tz=TZ)["oli_id"] in ("A", "B")


@pytest.mark.parametrize("body, field", [
    ({"phone_number": "12", "reason": "revoked"}, "phone_number"),
    ({"phone": "12", "reason": "revoked"}, "phone"),
    ({"phone_number": phone(214, 1), "reason": "angry"}, "reason"),
    ({"phone_number": phone(214, 1)}, "reason"),
    ({"phone_number": phone(214, 1), "reason": "revoked", "x": 1}, "x"),
    ({"reason": "revoked"}, "phone_number"),
    ({"phone_number": phone(214, 1), "phone": phone(214, 1), "reason": "revoked"}, "phone"),
])
def test_a_bad_dnc_request_is_a_clear_400_naming_its_field_and_lists_nothing(client, auth, sql, body, field):
    response = client.post("/api/dnc", json=body, headers=auth)
    assert response.status_code == 400 and response.get_json()["error"] == "validation_failed"
    assert field in [detail["field"] for detail in response.get_json()["details"]], response.get_json()
    assert list(sql("SELECT phone FROM dialerapi_dnc")) == []


def test_the_dnc_request_takes_phone_as_the_alias_of_phone_number(client, auth, sql):
    """The push's name for a lead's number, phone_number, and the request's first name for it, phone."""
    listed = client.post("/api/dnc", json={"phone": phone(214, 2), "reason": "request"}, headers=auth)
    assert listed.status_code == 201 and listed.get_json() == {
        "ok": True, "phone_number": "+12142010002", "phone": "+12142010002", "added": True}
    assert [row["phone"] for row in sql("SELECT phone FROM dialerapi_dnc")] == [12142010002]


def test_the_engines_key_opens_no_dnc_request(client, engine_auth):
    response = client.post("/api/dnc", json={"phone_number": phone(214, 1), "reason": "revoked"}, headers=engine_auth)
    assert response.status_code in (401, 403)


def test_sixteen_claimers_at_once_on_christmas_take_no_unconsented_louisiana_lead(app, run, push, floor_agent,
                                                                                  rules_on, sql):
    """Issue #68 "Done when": 16 claimers released at once on a holiday's boundary. On Christmas Day
    they take the Texas leads and the consented Louisiana ones and nothing else, each once; at the
    first lawful minute after it (Saturday 08:00 in Louisiana) they take the rest."""
    at(datetime(2026, 12, 20, 12, 0, tzinfo=CHICAGO))
    agents = [floor_agent(600 + n) for n in range(16)]
    consent = {"type": "written", "at": "2026-12-01 10:00:00"}
    for n in range(8):
        push(f"TX-{n}", phone(214, n))
        push(f"LA-C-{n}", phone(504, n), consent=consent)
        push(f"LA-{n}", phone(504, 100 + n))
    rules_on("us-federal", "us-la", "us-tx")
    got, errors = progressive_claims_at_once(app, agents, at(datetime(2026, 12, 25, 23, 59, tzinfo=CHICAGO)))
    assert errors == []
    assert sorted(oli_id for oli_id in got if oli_id) == []  # 23:59: past every state's hours
    got, errors = progressive_claims_at_once(app, agents, at(datetime(2026, 12, 25, 10, 0, tzinfo=CHICAGO)))
    assert errors == [] and None not in got
    reserved = [row["oli_id"] for row in sql("SELECT oli_id FROM sales_master WHERE isReserved = 1 ORDER BY oli_id")]
    assert reserved == sorted(got) == sorted([f"LA-C-{n}" for n in range(8)] + [f"TX-{n}" for n in range(8)])
    sql("UPDATE sales_master SET dial_status = 'Disposed', isReserved = 0 WHERE isReserved = 1")
    sql("UPDATE sales_agents SET panel_active = 1, ami_idle = 1")
    got, errors = progressive_claims_at_once(app, agents, at(datetime(2026, 12, 26, 7, 59, tzinfo=CHICAGO)))
    assert errors == [] and got == [None] * 16
    got, errors = progressive_claims_at_once(app, agents, at(datetime(2026, 12, 26, 8, 0, tzinfo=CHICAGO)))
    assert errors == [] and sorted(oli_id for oli_id in got if oli_id) == [f"LA-{n}" for n in range(8)]
    assert sql.one("SELECT COUNT(*) AS n FROM sales_master WHERE isReserved = 1")["n"] == 8


def test_open_call_zones_are_worked_out_once_a_minute(run, push, rules_on, sql):
    at(datetime(2026, 11, 27, 12, 0, tzinfo=CHICAGO))
    push("LA-1", phone(504, 1))
    rules_on("us-la")

    def open_ids(moment):
        now = at(moment)
        return run(lambda conn: claim_checks.open_zone_ids(conn, now, TZ, dialer_config.load_config(conn), reload=True))

    zone = sql.one("SELECT call_zone_id FROM sales_master WHERE oli_id = 'LA-1'")["call_zone_id"]
    assert zone not in open_ids(datetime(2026, 11, 30, 7, 59, 59, tzinfo=CHICAGO))
    assert zone in open_ids(datetime(2026, 11, 30, 8, 0, 0, tzinfo=CHICAGO))
    assert zone not in open_ids(datetime(2026, 11, 30, 20, 0, 0, tzinfo=CHICAGO))


def two_states_and_a_listed_number(push, rules_on, command):
    """Louisiana's and Texas's rules on; two Louisiana leads (one of credit_card), two Texas leads
    of home_loan, one of whose numbers is listed."""
    at(datetime(2026, 11, 27, 12, 0, tzinfo=CHICAGO))
    push("LA-1", phone(504, 1))
    push("LA-2", phone(504, 2), form_type="credit_card")
    push("TX-1", phone(214, 1))
    push("TX-2", phone(214, 2))
    rules_on("us-la", "us-tx")
    assert command("dnc", "add", phone(214, 2)).exit_code == 0


def test_health_counts_the_leads_each_rule_holds_per_campaign(client, push, rules_on, command, sql):
    from conftest import MONITOR_SECRET

    two_states_and_a_listed_number(push, rules_on, command)
    at(datetime(2026, 11, 29, 10, 0, tzinfo=CHICAGO))  # Sunday 10:00: Louisiana banned, Texas from noon
    body = client.get("/health", headers={"Authorization": f"Bearer {MONITOR_SECRET}"}).get_json()
    rules = body["metrics"]["calling_rules"]
    assert rules["enabled"] == ["us-la", "us-tx"] and rules["restrictions_active"] == []
    assert rules["leads_held"] == {"emergency": 0, "state_holiday": 0, "state_sunday": 2, "state_hours": 1,
                                   "consent_required": 0}
    assert rules["by_form_type"] == {"home_loan": {"state_sunday": 1, "state_hours": 1, "do_not_call": 1},
                                     "credit_card": {"state_sunday": 1}}


def test_the_floor_counts_the_leads_each_rule_holds_per_campaign_once_a_minute(
        app, client, push, rules_on, command, floor_agent, engine_auth):
    """Issue #68 item 6: /engine/floor (and the board's tiles, which are its answer) says per
    campaign how many leads each rule holds, as the minute's count (upkeep.jobs) left them."""
    from conftest import MONITOR_SECRET
    from dialerapi.upkeep import jobs

    floor_agent(501, skills=("home_loan", "credit_card"))
    two_states_and_a_listed_number(push, rules_on, command)

    def floor():
        response = client.post("/engine/floor", json={}, headers=engine_auth)
        assert response.status_code == 200, response.get_json()
        body = response.get_json()
        return body["leads_held_counted_at"], {group["form_type"]: group["leads_held"] for group in body["form_types"]}

    counted_at, held = floor()
    assert counted_at is None and set(held["home_loan"].values()) == {0}, "nothing counted yet"
    sunday = datetime(2026, 11, 29, 10, 0, tzinfo=CHICAGO)  # Louisiana banned, Texas from noon
    at(sunday)
    assert jobs.held_counts_tick(app) == 4
    assert jobs.held_counts_tick(app) is None, "one count a minute, whichever process comes first"
    zero = dict.fromkeys(claim_checks.HELD_REASONS, 0)
    counted_at, held = floor()
    assert counted_at == sunday.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert held == {"home_loan": {**zero, "state_sunday": 1, "state_hours": 1, "do_not_call": 1},
                    "credit_card": {**zero, "state_sunday": 1}}
    live = client.get("/health", headers={"Authorization": f"Bearer {MONITOR_SECRET}"}).get_json()
    assert live["metrics"]["calling_rules"]["by_form_type"] == {
        form_type: {reason: n for reason, n in counts.items() if n} for form_type, counts in held.items()}, \
        "/health counts at each read what the floor shows from the minute's count"
    at(datetime(2026, 11, 30, 12, 0, tzinfo=CHICAGO))
    assert jobs.held_counts_tick(app) == 1
    assert floor()[1] == {"home_loan": {**zero, "do_not_call": 1}, "credit_card": zero}


def test_a_campaign_marked_consent_required_leaves_its_unconsented_leads_to_a_manual_redial(
        run, push, floor_agent, sql, client, engine_auth, auth):
    from dialerapi.rules.campaigns import operations
    at(datetime(2026, 11, 30, 12, 0, tzinfo=CHICAGO))
    floor_agent(501, skills=("home_loan", "credit_card"))
    push("EXPRESS", phone(214, 1), consent={"type": "express", "at": "2026-11-01 10:00:00"})
    push("EBR", phone(214, 2), consent={"type": "ebr", "at": "2026-11-01 10:00:00"})
    push("NONE", phone(214, 3))
    push("OTHER", phone(214, 4), form_type="credit_card")
    now = at(datetime(2026, 11, 30, 13, 0, tzinfo=CHICAGO))
    run(operations.update, "home_loan", {"consent_required": "automated"}, now, "test")
    assert claim_all(run, 501, now) == ["EXPRESS", "OTHER"]
    why = read(client, auth, "NONE")["callable"]
    assert (why["now"], why["reason"], why["rule"]) == (False, "consent_required", "campaign")
    sql("UPDATE sales_master SET dial_status = 'Received' WHERE oli_id = 'NONE'")
    sql("UPDATE sales_agents SET panel_active = 1, ami_idle = 1")
    response = client.post("/engine/claim", json={"mode": "redial", "agent_id": 501, "oli_id": "NONE",
                                                    "request_id": "r1"}, headers=engine_auth)
    assert response.status_code == 200, "an agent's manual redial is the way to call it"
    with pytest.raises(Exception, match="predictive, automated or all"):
        run(operations.update, "home_loan", {"consent_required": "always"}, now, "test")


def test_a_campaign_marked_consent_required_all_refuses_the_redial_of_an_unconsented_lead(
        run, push, floor_agent, sql, client, engine_auth, auth):
    """Issue #68 item 4: a campaign marked so calls no lead without written or express consent,
    by any claim: claims pass the lead over, its redial answers 409 not_claimable consent_required
    (D3's shape, with the rule and next_at); a consented lead's redial and an inbound call go on."""
    from dialerapi.rules.campaigns import operations
    at(datetime(2026, 11, 30, 12, 0, tzinfo=CHICAGO))
    floor_agent(501, skills=("home_loan",))
    push("WRITTEN", phone(214, 1), consent={"type": "written", "at": "2026-11-01 10:00:00"})
    push("EBR", phone(214, 2), consent={"type": "ebr", "at": "2026-11-01 10:00:00"})
    now = at(datetime(2026, 11, 30, 13, 0, tzinfo=CHICAGO))
    run(operations.update, "home_loan", {"consent_required": "all"}, now, "test")
    assert claim_all(run, 501, now) == ["WRITTEN"]
    sql("UPDATE sales_master SET dial_status = 'Received', isReserved = 0")
    sql("UPDATE sales_agents SET panel_active = 1, ami_idle = 1")

    def redial(oli_id, mode="redial"):
        return client.post("/engine/claim", json={"mode": mode, "agent_id": 501, "oli_id": oli_id,
                                                  "request_id": f"{mode}-{oli_id}"}, headers=engine_auth)

    refused = redial("EBR")
    assert refused.status_code == 409
    body = refused.get_json()
    assert (body["error"], body["reason"], body["rule"], body["next_at"]) == (
        "not_claimable", "consent_required", "campaign", None)
    assert sql.one("SELECT isReserved FROM sales_master WHERE oli_id = 'EBR'")["isReserved"] == 0
    assert redial("WRITTEN").status_code == 200
    sql("UPDATE sales_master SET dial_status = 'Received', isReserved = 0")
    sql("UPDATE sales_agents SET panel_active = 1, ami_idle = 1")
    assert redial("EBR", mode="inbound").status_code == 200, "the customer's own call is never held"


def test_a_number_phonenumbers_cannot_read_is_listed_and_removed_by_its_digits(client, auth, sql):
    """As a push stores such a phone (D4: 10-15 digits), the list takes it as its digits: the
    OpenAPI document's phone is the push's, and every phone it allows is answered 2xx."""
    unreadable = "0000000000"
    listed = client.post("/api/dnc", json={"phone_number": unreadable, "reason": "registry"}, headers=auth)
    assert listed.status_code == 201 and listed.get_json()["added"] is True
    assert client.delete(f"/api/dnc/{unreadable}", headers=auth).get_json()["removed"] is True
    assert client.delete(f"/api/dnc/{unreadable}", headers=auth).get_json()["removed"] is False


def test_a_call_ended_event_carries_the_consent_the_call_was_made_under(run, push, floor_agent, client, auth):
    """Issue #68 item 4: the consent is shown in the events, as the CRM pushed it (docs/crm/results.md)."""
    from dialerapi.rules.leads import dialstate

    at(datetime(2026, 11, 30, 12, 0, tzinfo=CHICAGO))
    floor_agent(501)
    consent = {"type": "written", "at": "2026-11-01 10:00:00", "source": "https://crm.example.com/forms/77"}
    push("WRITTEN", phone(214, 1), consent=consent)
    push("NONE", phone(214, 2))
    now = at(datetime(2026, 11, 30, 13, 0, tzinfo=CHICAGO))
    for _ in range(2):
        oli_id = run(claims.claim_next, 501, now, tz=TZ)["oli_id"]
        run(dialstate.settle, oli_id, "no_answer", now, tz=TZ, grace_minutes=10, release_retry_ms=60000)
    events = client.get("/api/lead-events?limit=100", headers=auth).get_json()["events"]
    ended = {event["oli_id"]: event["data"]["consent"] for event in events if event["type"] == "lead.call_ended"}
    assert ended == {"WRITTEN": consent, "NONE": None}
