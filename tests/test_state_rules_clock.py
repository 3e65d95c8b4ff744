"""The state calling rules at whatever moment the clock says (issue #68 item 7; decisions.md D2).

`make test-clock` runs this at every moment of its matrix, and at moments of its own, each in two
DB_TIMEZONEs (America/Chicago and Asia/Kolkata): a Sunday morning in Alabama, Christmas Day in
Louisiana, the Monday that Mississippi keeps for a Sunday's Independence Day, and New Year's night.
At the moment the clock reads, one lead of each state with a rule (and New York, held by the
federal hours alone) is pushed with every rule on; a progressive claimer takes every lead it may.
What it takes must be what the statutes, restated here on their own (hours per day, Sunday bans,
the `holidays` package's holidays with each state's weekend rule), allow at this instant; and each
held lead's `callable.next_at` must be a moment at which its read says callable, the minute before
it one at which it does not.
"""

from datetime import date, datetime, time, timedelta
from zoneinfo import ZoneInfo

import holidays
import pytest

from conftest import TZ
from dialerapi.plumbing import clock
from dialerapi.rules.dialing import claims

pytestmark = pytest.mark.clock

# state: (area code, zone, weekday hours, Saturday's, Sunday's (None: no calls), holiday weekend moves or None)
STATES = {
    "AL": (205, "America/Chicago", (8, 20), (8, 20), None, {5: -1, 6: 1}),
    "LA": (504, "America/Chicago", (8, 20), (8, 20), None, {}),
    "MS": (601, "America/Chicago", (8, 20), (8, 20), None, {6: 1}),
    "RI": (401, "America/New_York", (9, 18), (10, 17), None, {6: 1}),
    "UT": (801, "America/Denver", (8, 21), (8, 21), (8, 21), {5: -1, 6: 1}),
    "TX": (214, "America/Chicago", (9, 21), (9, 21), (12, 21), None),
    "FL": (305, "America/New_York", (8, 20), (8, 20), (8, 20), None),
    "KY": (502, "America/New_York", (10, 21), (10, 21), (10, 21), None),
    "CT": (203, "America/New_York", (9, 21), (9, 21), (9, 21), None),
    "OK": (405, "America/Chicago", (8, 20), (8, 20), (8, 20), None),
    "MA": (617, "America/New_York", (8, 20), (8, 20), (8, 20), None),
    "NY": (212, "America/New_York", (8, 21), (8, 21), (8, 21), None),
}


def barred_holiday(state, day):
    moves = STATES[state][5]
    if moves is None:
        return False
    found = holidays.US(subdiv=state, years=(day.year - 1, day.year, day.year + 1), observed=False)
    return any(day in (holiday, holiday + timedelta(days=moves.get(holiday.weekday(), 0))) for holiday in found)


def lawful(state, instant):
    """Whether the statutes (and the federal 08:00-21:00) let a customer of `state` be called at `instant`."""
    _, zone, weekdays, saturday, sunday, _ = STATES[state]
    local = instant.astimezone(ZoneInfo(zone))
    hours = (weekdays, weekdays, weekdays, weekdays, weekdays, saturday, sunday)[local.weekday()]
    if hours is None or barred_holiday(state, local.date()):
        return False
    start, end = max(hours[0], 8), min(hours[1], 21)
    return time(start) <= local.time() < time(end)


@pytest.fixture
def floor(client, auth, floor_agent, command, sql, now):
    floor_agent()
    for state, (area, *_) in STATES.items():
        body = {"oli_id": state, "phone_number": f"+1 {area} 201 0001", "client_name": "Customer",
                "form_type": "home_loan", "priority_id": 2}
        if state == "FL":  # Florida's automated-call rule met; no other lead has consent (it lifts holiday bans)
            body["consent"] = {"type": "written", "at": "2026-01-01 00:00:00"}
        response = client.post("/api/leads", json=body, headers=auth)
        assert response.status_code == 201, response.get_json()
    sql("UPDATE sales_master SET next_retry_at = NULL")  # due now, whatever the floor's work window says
    assert command("rules", "enable", "--all").exit_code == 0


def test_the_claims_take_exactly_the_leads_the_statutes_allow_at_this_moment(run, floor, now):
    instant = clock.instant(now, TZ)
    expected = sorted(state for state in STATES if lawful(state, instant))
    claimed = []
    while (row := run(claims.claim_next, 501, now, tz=TZ)) is not None:
        claimed.append(row["oli_id"])
    assert sorted(claimed) == expected, f"at {instant.isoformat()}"


def test_each_held_leads_next_at_is_its_first_callable_minute(client, auth, floor, now, frozen_clock):
    instant = clock.instant(now, TZ)
    held = {}
    for state in STATES:
        callable_ = client.get(f"/api/leads/{state}", headers=auth).get_json()["lead"]["callable"]
        assert callable_["now"] == lawful(state, instant), (state, callable_)
        if not callable_["now"]:
            held[state] = clock.instant(datetime.fromisoformat(callable_["next_at"]), TZ)
    for state, next_at in held.items():
        assert lawful(state, next_at) and not lawful(state, next_at - timedelta(minutes=1)), (state, next_at)
        frozen_clock(next_at)
        assert client.get(f"/api/leads/{state}", headers=auth).get_json()["lead"]["callable"]["now"], state
        frozen_clock(next_at - timedelta(minutes=1))
        if next_at - timedelta(minutes=1) >= instant:
            assert not client.get(f"/api/leads/{state}", headers=auth).get_json()["lead"]["callable"]["now"], state


def test_the_oracle_knows_the_matrix_moments():
    """The restated rules themselves, at the matrix's moments (so a wrong oracle cannot pass them)."""
    chicago = ZoneInfo("America/Chicago")
    sunday_morning = datetime(2027, 1, 10, 10, 0, tzinfo=chicago)
    assert [s for s in ("AL", "LA", "MS", "TX") if lawful(s, sunday_morning)] == []
    christmas = datetime(2026, 12, 25, 12, 0, tzinfo=chicago)
    assert not lawful("LA", christmas) and lawful("TX", christmas)
    kept_monday = datetime(2027, 7, 5, 10, 0, tzinfo=chicago)
    assert not lawful("MS", kept_monday) and lawful("LA", kept_monday) and date(2027, 7, 4).weekday() == 6
    new_years_night = datetime(2027, 1, 1, 0, 30, tzinfo=chicago)
    assert [s for s in STATES if lawful(s, new_years_night)] == []
