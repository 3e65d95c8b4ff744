"""Campaign calendars at whatever moment the clock says (issue #67 item 6; decisions.md D1, D2).

`make test-clock` runs these at every moment of its matrix, and at moments of their own: a
campaign's weekday open (London's first Monday of summer time, 09:00) and close (Chicago, a Friday
19:00), a restricted date's midnight (Sydney, Christmas Day 00:00) and a daylight-saving night
(London's second 01:30). Each test reads the service's clock once (its now, wall-clock DB_TIMEZONE),
freezes it there, and gives campaigns calendars whose edges fall on that minute: one that opens at
it, one that closes at it, one whose restricted date is today, one whose restricted date was
yesterday. The claims of their leads, and each campaign's status (what /engine/floor and the board
show), must agree with the calendars as written here.
"""

from datetime import datetime, time, timedelta

import pytest

from conftest import TZ, own_number
from dialerapi.rules.campaigns import operations
from dialerapi.rules.config import calendars
from dialerapi.rules.config import dialer as dialer_config
from dialerapi.rules.dialing import claims

pytestmark = pytest.mark.clock

ALL_DAY = {day: ["00:00-24:00"] for day in calendars.DAYS}


def hhmm(minutes):
    return "24:00" if minutes == calendars.DAY_END else f"{minutes // 60:02d}:{minutes % 60:02d}"


@pytest.fixture
def leads(sql, floor_agent, now):
    """`leads(form_type, ...)`: one due Pending lead and one free agent (with that skill alone) per
    form_type; {form_type: agent_id}."""

    def add(*form_types):
        agents = {}
        for n, form_type in enumerate(form_types):
            oli_id = f"{form_type.upper()}-1"
            sql("INSERT INTO sales_master (oli_id, data_id, phone_number, client_name, form_type, priority_id,"
                " dial_status, call_count, isReserved, created_at, updated_at) VALUES"
                " (%s, UUID(), %s, 'Meena Sundaram', %s, 2, 'Pending', 0, 0, %s, %s)",
                oli_id, own_number(oli_id), form_type, now - timedelta(days=1), now - timedelta(days=1))
            agents[form_type] = floor_agent(601 + n, skills=(form_type,))
        return agents

    return add


def claim_or_refusal(run, agent_id, now):
    """(the claimed oli_id or None, the refusal's reason or None, the refused campaign's status or None)."""
    try:
        row = run(claims.claim_next, agent_id, now, tz=TZ)
        return (row and row["oli_id"]), None, None
    except claims.NotClaimable as refused:
        return None, refused.reason, refused.figures["campaigns"][0]


def status(run, form_type, now):
    return run(lambda conn: operations.status(dialer_config.load_config(conn), form_type, now, TZ))


def test_a_campaign_opens_and_closes_on_its_weekday_hours_at_this_minute(run, leads, now):
    """`opening` is open today from this minute, `closing` until this minute: at this moment the
    first's lead is claimed, the second's refused campaign_closed, next open on this weekday a
    week on (at midnight, `closing` closed at the end of yesterday instead)."""
    minute = now.hour * 60 + now.minute
    today, yesterday = calendars.DAYS[now.weekday()], calendars.DAYS[(now.weekday() - 1) % 7]
    agents = leads("opening", "closing")
    run(operations.update, "opening", {"open_hours": {today: [f"{hhmm(minute)}-{hhmm(min(minute + 60, 1440))}"]}},
        now, "test")
    if minute:
        closing_hours, opens_again = {today: [f"{hhmm(max(minute - 60, 0))}-{hhmm(minute)}"]}, (7, max(minute - 60, 0))
    else:
        closing_hours, opens_again = {yesterday: ["23:00-24:00"]}, (6, 23 * 60)
    run(operations.update, "closing", {"open_hours": closing_hours}, now, "test")

    assert claim_or_refusal(run, agents["opening"], now) == ("OPENING-1", None, None)
    oli_id, reason, refused = claim_or_refusal(run, agents["closing"], now)
    expected_open = datetime.combine(now.date() + timedelta(days=opens_again[0]), time()) + timedelta(minutes=opens_again[1])
    assert (oli_id, reason, refused["closed_reason"]) == (None, operations.CAMPAIGN_CLOSED, calendars.OUTSIDE_HOURS)
    assert refused["next_open_at"] == f"{expected_open:%Y-%m-%d %H:%M:%S}"
    assert status(run, "opening", now)["open"] is True and status(run, "closing", now)["open"] is False


def test_a_restricted_date_closes_from_its_midnight_and_yesterdays_no_longer_does(run, leads, now):
    """Open all week; `holiday` restricts today, `lifted` restricted yesterday: the first is closed
    (restricted_date, its note, next open at tomorrow's midnight), the second's lead is claimed."""
    agents = leads("holiday", "lifted")
    run(operations.update, "holiday", {"open_hours": ALL_DAY, "restricted_dates": [
        {"date": f"{now:%Y-%m-%d}", "note": "Christmas Day"}]}, now, "test")
    run(operations.update, "lifted", {"open_hours": ALL_DAY, "restricted_dates": [
        {"date": f"{now - timedelta(days=1):%Y-%m-%d}", "note": "yesterday"}]}, now, "test")

    oli_id, reason, refused = claim_or_refusal(run, agents["holiday"], now)
    assert (oli_id, reason) == (None, operations.CAMPAIGN_CLOSED)
    assert (refused["closed_reason"], refused["restriction_note"]) == (calendars.RESTRICTED, "Christmas Day")
    assert refused["next_open_at"] == f"{now.date() + timedelta(days=1):%Y-%m-%d} 00:00:00"
    assert claim_or_refusal(run, agents["lifted"], now) == ("LIFTED-1", None, None)
