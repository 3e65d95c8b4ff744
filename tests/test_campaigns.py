"""Campaigns (issue #67): each form_type its own calendar, rulebook and switch over the floor's
sales_dialer_config (lead-intake-api.md: a lead's campaign is its form_type; "Claim and retry rules";
decisions.md D1 for the floor's settings, D3 for the answers). A campaign with nothing set behaves
as the floor does (the rest of the suite runs with none).
"""

import json
import threading
from datetime import date, datetime, time, timedelta

import pytest

from conftest import ENGINE_SECRET, SUPERVISOR_SECRET, TZ, set_clock, sixteen_at_once
from dialerapi.plumbing.db import get_db
from dialerapi.rules.campaigns import operations
from dialerapi.rules.config import calendars, campaign_settings
from dialerapi.rules.config import dialer as dialer_config
from dialerapi.rules.dialing import claims
from dialerapi.rules.events import lead_events
from dialerapi.rules.leads import dialstate
from dialerapi.rules.views.floor import floor_state

NOW = datetime(2026, 11, 23, 10, 0)  # a Monday
SUNDAY = datetime(2026, 11, 29, 11, 0)
ENGINE = {"Authorization": f"Bearer {ENGINE_SECRET}"}
SUPERVISOR = {"Authorization": f"Bearer {SUPERVISOR_SECRET}"}
WEEKDAYS = {day: ["09:00-21:00"] for day in ("mon", "tue", "wed", "thu", "fri", "sat")}


@pytest.fixture(autouse=True)
def fixed_now(frozen_clock):
    frozen_clock(NOW)


def set_campaign(run, form_type, now=NOW, **settings):
    return run(operations.update, form_type, settings, now, "test")


def claim(run, agent_id=501, now=NOW):
    row = run(claims.claim_next, agent_id, now, tz=TZ)
    return row and row["oli_id"]


def settle(run, oli_id, outcome="no_answer", now=NOW):
    return run(dialstate.settle, oli_id, outcome, now, tz=TZ, grace_minutes=10, release_retry_ms=60000)


# The calendar, alone ----------------------------------------------------------------------------

def calendar(**settings):
    floor = dialer_config.DialerConfig(isMaintainance=False, outbound_obey_work_hours=True, retry_pattern=(4,),
                                   retry_seconds=3600, max_tries=20, work_start=time(9), work_end=time(21),
                                   disposed_priority_id=3)
    return campaign_settings.calendar_of(campaign_settings.check(settings), floor)


def test_a_calendar_opens_by_day_of_the_week_with_breaks_restricted_dates_and_its_dates():
    cal = calendar(open_hours={"mon": ["09:00-12:00", "14:00-18:00"], "tue": ["10:00-19:00"]},
                   restricted_dates=[{"date": "2026-12-25", "note": "Christmas Day"},
                                     {"date": "2026-12-28", "to": "2026-12-29", "note": "stocktake"}],
                   start_date="2026-12-01", end_date="2026-12-31")
    assert cal.closed_reason(datetime(2026, 11, 30, 10)) == calendars.NOT_STARTED
    assert cal.is_open(datetime(2026, 12, 7, 11, 59)) and not cal.is_open(datetime(2026, 12, 7, 12, 0))
    assert cal.closed_reason(datetime(2026, 12, 7, 13)) == calendars.OUTSIDE_HOURS
    assert cal.next_open(datetime(2026, 12, 7, 13), TZ) == datetime(2026, 12, 7, 14, 0), "after the break"
    assert cal.next_open(datetime(2026, 12, 7, 18, 30), TZ) == datetime(2026, 12, 8, 10, 0)
    assert cal.closed_reason(datetime(2026, 12, 29, 11)) == calendars.RESTRICTED  # a Tuesday in the range
    assert cal.restriction_note(date(2026, 12, 28)) == "stocktake"
    assert cal.next_open(datetime(2026, 12, 19, 9, 0), TZ) == datetime(2026, 12, 21, 9, 0), "Saturday: Monday"
    assert cal.next_open(datetime(2026, 12, 26, 0, 0), TZ) is None, \
        "Monday 28 and Tuesday 29 are restricted; no other day has hours before the end date"
    assert cal.closed_reason(datetime(2027, 1, 4, 10)) == calendars.FINISHED
    assert cal.next_open(datetime(2027, 1, 4, 10), TZ) is None


def test_a_calendar_without_open_hours_keeps_the_floors_window_across_midnight():
    floor = dialer_config.DialerConfig(isMaintainance=False, outbound_obey_work_hours=True, retry_pattern=(4,),
                                   retry_seconds=3600, max_tries=20, work_start=time(21), work_end=time(3),
                                   disposed_priority_id=3)
    cal = campaign_settings.calendar_of(campaign_settings.check(
        {"restricted_dates": [{"date": "2026-12-25", "note": "Christmas Day"}]}), floor)
    assert cal.is_open(datetime(2026, 12, 24, 23)) and cal.is_open(datetime(2026, 12, 24, 2))
    assert not cal.is_open(datetime(2026, 12, 25, 1)), "a restricted date is the whole calendar day"
    assert cal.next_open(datetime(2026, 12, 24, 22), TZ) == datetime(2026, 12, 26, 0, 0), \
        "the hours after midnight are the 26th's: the window opens again then"
    assert cal.next_open(datetime(2026, 12, 26, 1), TZ) == datetime(2026, 12, 26, 21, 0)
    assert cal.next_open(datetime(2026, 12, 23, 4), TZ) == datetime(2026, 12, 23, 21, 0)


def test_an_opening_in_a_spring_forward_gap_moves_forward():
    new_york = __import__("zoneinfo").ZoneInfo("America/New_York")
    cal = calendar(open_hours={"sun": ["02:30-05:00"]})
    assert cal.next_open(datetime(2027, 3, 14, 0, 0), new_york) == datetime(2027, 3, 14, 3, 30), \
        "02:30 does not exist that night: the opening moves by the hour skipped (clock.normalize)"


@pytest.mark.parametrize("settings, field", [
    ({"open_hours": {"mon": ["21:00-09:00"]}}, "open_hours"),
    ({"open_hours": {"mon": ["09:00-12:00", "11:00-13:00"]}}, "open_hours"),
    ({"open_hours": {"funday": ["09:00-12:00"]}}, "open_hours"),
    ({"restricted_dates": [{"date": "2026-12-25", "to": "2026-12-24"}]}, "restricted_dates"),
    ({"start_date": "2026-12-24", "end_date": "2026-12-01"}, "end_date"),
    ({"abandon_limit": 0.5}, "abandon_limit"),
    ({"abandon_period": "7d"}, "abandon_period"),
    ({"retry_pattern": []}, "retry_pattern"),
    ({"max_tries": "20"}, "max_tries"),
    ({"outcome_retries": {"answered": {"delay_seconds": 60}}}, "outcome_retries"),
    ({"calling_window_start": "09:00", "calling_window_end": "09:00"}, "calling_window_end"),
    ({"personal_callback_fallback_minutes": -1}, "personal_callback_fallback_minutes"),
    ({"phone_default_region": "XX"}, "phone_default_region"),
    ({"predictive": "maybe"}, "predictive"),
    ({"work_hours": "09:00-21:00"}, "work_hours"),
])
def test_a_wrong_setting_is_named_and_nothing_is_stored(run, sql, client, auth, settings, field):
    with pytest.raises(campaign_settings.InvalidSettings) as refused:
        set_campaign(run, "credit_card", **settings)
    assert field in refused.value.messages
    answer = client.patch("/api/campaigns/credit_card", json=settings, headers=auth)
    assert answer.status_code == 400 and answer.get_json()["error"] == "validation_failed"
    assert {detail["field"].split(".")[0].split("[")[0] for detail in answer.get_json()["details"]} == {field}
    assert sql("SELECT * FROM dialerapi_campaigns") == [] and sql("SELECT * FROM dialerapi_campaign_changes") == []


def test_a_merge_patch_keeps_what_it_does_not_name_and_a_null_goes_back_to_the_floor(run):
    set_campaign(run, "credit_card", retry_seconds=1800, predictive=False)
    assert set_campaign(run, "credit_card", predictive=None, max_tries=5)["settings"] == {
        "retry_seconds": 1800, "max_tries": 5}


# Claims --------------------------------------------------------------------------------------

def test_a_paused_campaign_is_not_claimed_while_the_others_dial_on(run, new_lead, floor_agent, client, engine_auth):
    floor_agent(501, skills=("home_loan", "credit_card"))
    new_lead("HOME-1", priority_id=1)
    new_lead("CARD-1", form_type="credit_card", priority_id=2)
    run(operations.pause, "home_loan", NOW, "test")
    assert claim(run) == "CARD-1", "home_loan's lead comes first in claim order, but its campaign is paused"
    settle(run, "CARD-1", "answered")
    with pytest.raises(claims.NotClaimable) as refused:
        run(claims.claim_lead, 501, "HOME-1", NOW, tz=TZ)
    assert refused.value.reason == operations.CAMPAIGN_PAUSED
    inbound = run(claims.claim_lead, 501, "HOME-1", NOW, call_type="inbound", tz=TZ)
    assert inbound["oli_id"] == "HOME-1", "the customer calling in is answered"
    settle(run, "HOME-1", "answered")
    run(operations.resume, "home_loan", NOW, "test")
    new_lead("HOME-2")
    assert claim(run) == "HOME-2"


def test_every_campaign_of_an_agent_refused_answers_its_reason_with_each_campaigns_status(
        run, new_lead, floor_agent, client):
    floor_agent(501, skills=("home_loan",))
    new_lead("HOME-1")
    set_campaign(run, "home_loan", open_hours=WEEKDAYS)
    answer = client.post("/engine/claim", headers=ENGINE, json={"mode": "progressive", "agent_id": 501,
                                                                "request_id": "sunday-1"})
    assert answer.status_code == 200, "Monday: open"
    settle(run, "HOME-1", "busy")
    set_clock(SUNDAY)
    answer = client.post("/engine/claim", headers=ENGINE, json={"mode": "progressive", "agent_id": 501,
                                                                "request_id": "sunday-2"})
    assert answer.status_code == 409
    body = answer.get_json()
    assert body["error"] == "not_claimable" and body["reason"] == "campaign_closed"
    assert body["campaigns"] == [{"form_type": "home_loan", "state": "active", "open": False,
                                  "closed_reason": "outside_open_hours", "restriction_note": None,
                                  "next_open_at": "2026-11-30 09:00:00", "predictive": True}]


def test_predictive_off_refuses_predictive_claims_of_its_leads_and_progressive_ones_go_on(
        run, new_lead, floor_agent):
    floor_agent(501, skills=("home_loan",))
    new_lead("HOME-1")
    set_campaign(run, "home_loan", predictive=False)
    with pytest.raises(claims.NotClaimable) as refused:
        run(claims.claim_predictive, NOW, form_type="home_loan", tz=TZ)
    assert refused.value.reason == operations.PREDICTIVE_OFF
    assert claim(run) == "HOME-1"


def test_a_restricted_date_closes_the_campaign_and_its_callbacks_wait_for_the_next_open_moment(
        run, new_lead, floor_agent, sql):
    christmas = datetime(2026, 12, 25, 10, 0)
    floor_agent(501, skills=("home_loan",))
    new_lead("HOME-1", priority_id=1, callback_scheduled_at="2026-12-24 20:30:00")
    set_campaign(run, "home_loan", restricted_dates=[{"date": "2026-12-25", "note": "Christmas Day"}])
    with pytest.raises(claims.NotClaimable) as refused:
        claim(run, now=christmas)
    assert refused.value.reason == operations.CAMPAIGN_CLOSED
    assert refused.value.figures["campaigns"][0]["restriction_note"] == "Christmas Day"
    assert refused.value.figures["campaigns"][0]["next_open_at"] == "2026-12-26 09:00:00"
    assert claim(run, now=datetime(2026, 12, 26, 9, 0)) == "HOME-1"


def test_a_campaigns_retry_rules_and_calendar_set_the_next_attempt(run, new_lead, floor_agent, sql):
    floor_agent(501, skills=("home_loan", "credit_card"))
    new_lead("HOME-1")
    new_lead("CARD-1", form_type="credit_card")
    set_campaign(run, "credit_card", retry_seconds=600, open_hours={"mon": ["09:00-10:05"], "wed": ["12:00-13:00"]})
    assert claim(run) == "HOME-1"
    settle(run, "HOME-1")
    assert claim(run) == "CARD-1"
    settle(run, "CARD-1")
    assert sql.lead("HOME-1")["next_retry_at"] == NOW + timedelta(hours=1), "the floor's retry_seconds"
    assert sql.lead("CARD-1")["next_retry_at"] == datetime(2026, 11, 25, 12, 0), \
        "10:10 is past Monday's hours; Tuesday is closed: Wednesday's opening"


def test_a_push_reads_numbers_in_its_campaigns_region_and_waits_for_its_calendar(run, client, auth, sql):
    set_campaign(run, "us_sales", phone_default_region="US", open_hours={"mon": ["12:00-20:00"]})
    answer = client.post("/api/leads", headers=auth, json={"leads": [
        {"oli_id": "US-1", "phone_number": "2125550100", "client_name": "Ann Lee", "form_type": "us_sales",
         "priority_id": 2},
        {"oli_id": "IN-1", "phone_number": "9845011111", "client_name": "Meena S", "form_type": "home_loan",
         "priority_id": 2}]})
    assert answer.status_code == 201, answer.get_json()
    assert sql.lead("US-1")["phone_e164"] == 12125550100 and sql.lead("IN-1")["phone_e164"] == 919845011111
    assert sql.lead("US-1")["next_retry_at"] == datetime(2026, 11, 23, 12, 0)
    assert sql.lead("IN-1")["next_retry_at"] is None


# Managed three ways with one validation, every change kept and told ---------------------------

def test_the_crm_changes_pauses_and_resumes_a_campaign_and_every_change_is_kept_and_told(
        client, auth, sql, floor_agent):
    floor_agent(501, skills=("home_loan", "credit_card"))
    listed = client.get("/api/campaigns", headers=SUPERVISOR)
    assert listed.status_code == 200
    assert [c["form_type"] for c in listed.get_json()["campaigns"]] == ["credit_card", "home_loan"]
    assert listed.get_json()["campaigns"][0]["settings"] == {}
    changed = client.patch("/api/campaigns/credit_card", headers=auth,
                           json={"abandon_period": "24h", "open_hours": WEEKDAYS})
    assert changed.status_code == 200
    campaign = changed.get_json()["campaign"]
    assert campaign["settings"]["abandon_period"] == "24h" and campaign["effective"]["abandon_period"] == "24h"
    assert campaign["effective"]["open_hours"]["sun"] == [] and campaign["effective"]["max_tries"] == 20
    assert client.post("/api/campaigns/credit_card/pause", headers=auth).get_json()["campaign"]["state"] == "paused"
    assert client.post("/api/campaigns/credit_card/pause", headers=SUPERVISOR).status_code == 403, "reads only"
    assert client.patch("/api/campaigns/credit_card", headers=SUPERVISOR, json={}).status_code == 403
    resumed = client.post("/api/campaigns/credit_card/resume", headers=auth).get_json()["campaign"]
    assert resumed["state"] == "active"
    assert [(h["action"], h["changed_by"]) for h in resumed["history"]] == [
        ("resumed", "crm"), ("paused", "crm"), ("updated", "crm")]
    assert resumed["history"][2]["old"] == {"settings": {}, "state": "active"}
    assert resumed["history"][2]["new"]["settings"]["abandon_period"] == "24h"
    assert client.get("/api/campaigns/no_such_campaign", headers=auth).get_json() == {
        "ok": False, "error": "unknown_campaign"}
    feed = client.get("/api/lead-events", headers=auth).get_json()["events"]
    assert [(e["type"], e["oli_id"], e["data"]["form_type"]) for e in feed] == [
        ("campaign.updated", None, "credit_card"), ("campaign.paused", None, "credit_card"),
        ("campaign.resumed", None, "credit_card")]
    assert feed[1]["data"]["old"] == {"state": "active"} and feed[1]["data"]["changed_by"] == "crm"


def test_the_command_line_sets_with_the_same_validation(command, sql):
    refused = command("campaigns", "set", "credit_card", "abandon_limit=0.5", "max_tries=5")
    assert refused.exit_code == 2 and "abandon_limit" in refused.output
    assert sql("SELECT * FROM dialerapi_campaigns") == []
    done = command("campaigns", "set", "credit_card", "abandon_period=24h", 'open_hours={"mon": ["09:00-17:00"]}',
                   "retry_pattern=[3,2,1]", "state=paused")
    assert done.exit_code == 0, done.output
    assert json.loads(done.output)["settings"] == {"abandon_period": "24h", "open_hours": {"mon": ["09:00-17:00"]},
                                                   "retry_pattern": [3, 2, 1]}
    assert "credit_card  [paused]" in command("campaigns", "list").output
    assert command("campaigns", "resume", "credit_card").output.strip() == "credit_card: paused -> active"
    shown = json.loads(command("campaigns", "show", "credit_card").output)
    assert shown["state"] == "active" and [h["changed_by"] for h in shown["history"]] == ["cli", "cli"]
    assert command("campaigns", "show", "nothing_here").exit_code == 1


def test_a_change_holds_at_the_next_claim_of_another_process_without_a_restart(app, new_lead, floor_agent, sql, run):
    """Every host reads the campaigns' generation with the config: a change through SQL from
    elsewhere (another host) is seen by this process's next claim."""
    floor_agent(501, skills=("home_loan",))
    new_lead("HOME-1")
    new_lead("HOME-2")
    assert claim(run) == "HOME-1"
    sql("INSERT INTO dialerapi_campaigns (form_type, state, settings, updated_at, updated_by)"
        " VALUES ('home_loan', 'paused', '{}', %s, 'other-host')", NOW)
    sql("INSERT INTO dialerapi_campaign_changes (form_type, action, changed_at, changed_at_utc, changed_by,"
        " old_values, new_values) VALUES ('home_loan', 'paused', %s, %s, 'other-host', '{}', '{}')", NOW, NOW)
    with pytest.raises(claims.NotClaimable) as refused:
        claim(run)
    assert refused.value.reason == operations.CAMPAIGN_PAUSED


def test_the_sweep_tells_of_each_personal_callback_past_its_own_campaigns_fallback(new_lead, floor_agent, sql, run):
    """Issue #67 item 3 (sweeps): credit_card falls back after 5 minutes, seasonal never; home_loan
    keeps the floor's 30. The sweep's lead.callback_fell_back goes to each callback past its own
    campaign's fallback, once."""
    floor_agent(501, skills=("home_loan", "credit_card", "seasonal"))
    set_campaign(run, "credit_card", personal_callback_fallback_minutes=5)
    set_campaign(run, "seasonal", personal_callback_fallback_minutes="never")
    due = {"HOME-EARLY": ("home_loan", 31), "HOME-LATE": ("home_loan", 10), "CARD-1": ("credit_card", 10),
           "CARD-2": ("credit_card", 4), "SEASON-1": ("seasonal", 60 * 24)}
    for oli_id, (form_type, minutes_ago) in due.items():
        new_lead(oli_id, form_type=form_type)
        sql("UPDATE sales_master SET dial_status = 'Callback', next_retry_at = NULL, callback_scheduled_at = %s,"
            " callback_agent_id = 501 WHERE oli_id = %s", NOW - timedelta(minutes=minutes_ago), oli_id)

    def tell(conn):
        return lead_events.fallen_back(conn, NOW, dialer_config.load_config(conn), TZ)

    assert run(tell) == 2
    assert run(tell) == 0
    told = sql("SELECT oli_id FROM dialerapi_lead_events WHERE type = 'lead.callback_fell_back' ORDER BY oli_id")
    assert [row["oli_id"] for row in told] == ["CARD-1", "HOME-EARLY"]


def test_the_agents_list_and_the_lead_show_each_callbacks_own_campaigns_fallback(
        client, auth, new_lead, floor_agent, sql, run):
    """Issue #67 item 1 (the personal-callback fallback): in GET /api/callbacks (the socket's
    `dialer.callbacks`) and GET /api/leads/{oli_id}, credit_card's callback falls back after its
    campaign's 5 minutes, seasonal's never, home_loan's after the floor's 30."""
    floor_agent(501, skills=("home_loan", "credit_card", "seasonal"))
    set_campaign(run, "credit_card", personal_callback_fallback_minutes=5)
    set_campaign(run, "seasonal", personal_callback_fallback_minutes="never")
    due_at = NOW + timedelta(minutes=20)
    for oli_id, form_type in (("HOME-1", "home_loan"), ("CARD-1", "credit_card"), ("SEASON-1", "seasonal")):
        new_lead(oli_id, form_type=form_type)
        sql("UPDATE sales_master SET dial_status = 'Callback', next_retry_at = NULL, callback_scheduled_at = %s,"
            " callback_agent_id = 501 WHERE oli_id = %s", due_at, oli_id)
    set_clock(NOW)
    listed = client.get("/api/callbacks?agentId=501", headers=auth).get_json()
    assert listed["fallback_minutes"] == 30, "the floor's"
    assert {item["oli_id"]: (item["fallback_minutes"], item["fallback_at"], item["minutes_until_fallback"])
            for item in listed["items"]} == {
        "HOME-1": (30, "2026-11-23 10:50:00", 50), "CARD-1": (5, "2026-11-23 10:25:00", 25),
        "SEASON-1": (None, None, None)}
    shown = {oli_id: client.get(f"/api/leads/{oli_id}", headers=auth).get_json()["lead"]["callback_fallback_at"]
             for oli_id in ("HOME-1", "CARD-1", "SEASON-1")}
    assert shown == {"HOME-1": "2026-11-23 10:50:00", "CARD-1": "2026-11-23 10:25:00", "SEASON-1": None}


# Concurrency --------------------------------------------------------------------------------

def test_no_claim_of_a_campaign_commits_after_its_pause_commits(app, client, auth, floor_agent, sql):
    """16 claimers and a pause released at once, three rounds, checked against the leads: the pause,
    holding the campaign's row before it commits, has the reserved leads counted from another
    connection; no claim commits after (the count never grows), and every claimer is then refused
    campaign_paused."""
    agents = [floor_agent(600 + n, skills=("seasonal",)) for n in range(16)]
    pushed = client.post("/api/leads", headers=auth, json={"leads": [
        {"oli_id": f"SEASON-{n}", "phone_number": f"+9198450{n:05d}", "client_name": "Ravi K",
         "form_type": "seasonal", "priority_id": 2} for n in range(400)]})
    assert pushed.status_code == 201
    count = "SELECT COUNT(*) AS n FROM sales_master WHERE form_type = 'seasonal' AND isReserved = 1"

    def pause_and_count(conn):
        operations.pause(conn, "seasonal", NOW, "test")
        return sql.one(count)["n"]

    for _ in range(3):
        errors, seen_at_pause, refusals, claimed = [], [], [], []
        at_once = sixteen_at_once(app, errors, parties=17)

        def claimer(agent_id):
            runner = at_once
            while True:
                answer = runner(_claim_or_refusal, agent_id)
                if answer is None or isinstance(answer, str):
                    refusals.append(answer)
                    return
                claimed.append(answer["oli_id"])
                runner = _plain(app, errors)

        threads = [threading.Thread(target=claimer, args=(agent_id,)) for agent_id in agents]
        threads.append(threading.Thread(target=lambda: seen_at_pause.append(at_once(pause_and_count))))
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
        assert errors == []
        assert seen_at_pause == [sql.one(count)["n"]] == [len(claimed)], f"no claim committed after the pause ({_}, {refusals})"
        assert len(set(claimed)) == len(claimed)
        assert refusals == [operations.CAMPAIGN_PAUSED] * 16
        sql("UPDATE sales_master SET isReserved = 0, dial_status = 'Pending', reservation_id = NULL,"
            " previous_dial_status = NULL")
        with app.app_context():
            get_db().run(operations.resume, "seasonal", NOW, "test")


def _claim_or_refusal(conn, agent_id):
    try:
        return claims.claim_next(conn, agent_id, NOW, tz=TZ)
    except claims.NotClaimable as exc:
        return exc.reason


def _plain(app, errors):
    def run(work, *args):
        try:
            with app.app_context():
                return get_db().run(work, *args)
        except Exception as exc:  # noqa: BLE001 - counted, not lost with the thread
            errors.append(repr(exc))
            return "error"
    return run


def test_a_campaigns_config_asked_for_another_campaign_answers_that_ones_over_the_floor(run, sql):
    """config.of is the same from the floor and from a campaign's config: settings never compound."""
    set_campaign(run, "credit_card", retry_seconds=600, max_tries=5)
    set_campaign(run, "home_loan", retry_seconds=1200)
    config = run(dialer_config.load_config)
    card = config.of("credit_card")
    assert (card.retry_seconds, card.max_tries) == (600, 5)
    assert card.of("home_loan") is config.of("home_loan")
    assert (card.of("home_loan").retry_seconds, card.of("home_loan").max_tries) == (1200, 20)
    assert card.of("gold_loan") is config and config.of("credit_card") is card
    assert run(dialer_config.load_config) is config, "the same floor and generation: the same object"


def test_each_campaign_holds_predictive_claims_by_its_own_abandon_period_and_limit(run, new_lead, floor_agent, sql):
    """A UK campaign under Ofcom's 24 hours beside the floor's 30 days (issue #67): the same counts
    (3 abandoned of 60 answered last evening, a clean month) hold the UK campaign's predictive
    claims and not the floor's; a campaign with a limit of its own is held by that limit."""
    floor_agent(501, skills=("uk_collections",))
    floor_agent(502, skills=("home_loan",))
    floor_agent(503, skills=("credit_card",))
    for form_type in ("uk_collections", "home_loan", "credit_card"):
        new_lead(f"{form_type}-1", form_type=form_type)
        sql("INSERT INTO dialerapi_abandon_counts (grain, form_type, starts_at, node, calls, answered, abandoned)"
            " VALUES ('h', %s, %s, 'db:3306', 80, 60, 3)", form_type, datetime(2026, 11, 22, 20, 0))
        for day in range(1, 20):
            sql("INSERT INTO dialerapi_abandon_counts (grain, form_type, starts_at, node, calls, answered, abandoned)"
                " VALUES ('d', %s, %s, 'db:3306', 1200, 1000, %s)", form_type, datetime(2026, 11, 23 - day), 3 if day == 1 else 0)
    set_campaign(run, "uk_collections", abandon_period="24h")
    set_campaign(run, "credit_card", abandon_limit=0.0001)
    with pytest.raises(claims.NotClaimable) as refused:
        run(claims.claim_predictive, NOW, form_type="uk_collections", tz=TZ)
    assert refused.value.reason == "abandon_limit"
    (held,) = refused.value.figures["abandons"]
    assert (held["form_type"], held["period"], held["windows"]["period"]["rate"]) == ("uk_collections", "24h", 0.05)
    assert run(claims.claim_predictive, NOW, form_type="home_loan", tz=TZ)["oli_id"] == "home_loan-1", \
        "3 of 19,000 over the floor's 30 days"
    with pytest.raises(claims.NotClaimable) as refused:
        run(claims.claim_predictive, NOW, form_type="credit_card", tz=TZ)
    assert refused.value.figures["abandons"][0]["limit"] == 0.0001
    floor = run(lambda conn: floor_state(conn, NOW, None, TZ))
    periods = {row["form_type"]: (row["abandons"]["period"], row["abandons"]["windows"]["period"]["answered"])
               for row in floor["form_types"]}
    assert periods == {"credit_card": ("30d", 19000), "home_loan": ("30d", 19000), "uk_collections": ("24h", 60)}
