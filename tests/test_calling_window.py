"""Calling hours in the customer's own time zone (issue #30): with sales_dialer_config.obey_calling_window
= 1 a lead is claimed only while its customer's local time is inside calling_window_start..end
(default 09:00-21:00), in the zones phonenumbers gives for its phone; a number spanning zones gets
the window all of them share; a number with none falls back to DB_TIMEZONE (decisions.md D2).
Daylight saving as docs/operations/time.md "Time and daylight saving": each zone's own rules.
"""

from datetime import datetime, timezone
from zoneinfo import ZoneInfo

import pytest

from conftest import TZ
from dialerapi.plumbing import clock
from dialerapi.rules.dialing import claims

pytestmark = pytest.mark.clock

NEW_YORK = ZoneInfo("America/New_York")
UTC = timezone.utc


@pytest.fixture
def floor(sql, client, auth, floor_agent):
    """An available agent with skill home_loan, and the calling window obeyed."""
    floor_agent()
    sql("UPDATE sales_dialer_config SET obey_calling_window = 1")

    def push(oli_id, phone, **fields):
        body = {"oli_id": oli_id, "phone_number": phone, "client_name": "Customer", "form_type": "home_loan",
                "priority_id": 2, **fields}
        response = client.post("/api/leads", json=body, headers=auth)
        assert response.status_code == 201, response.get_json()

    return push


def at(moment):
    """Freeze the service clock at the aware instant `moment`; return "now" as the claim gets it."""
    clock.set_utc_source(lambda: moment.astimezone(UTC))
    return clock.now(TZ)


def claim(run, moment, mode="progressive"):
    now = at(moment)
    if mode == "predictive":
        row = run(claims.claim_predictive, now, tz=TZ)
    else:
        row = run(claims.claim_next, 501, now, tz=TZ)
    return row and row["oli_id"]


@pytest.mark.parametrize("local, claimed", [
    (datetime(2026, 11, 23, 8, 59, 59), False),
    (datetime(2026, 11, 23, 9, 0, 0), True),
    (datetime(2026, 11, 23, 20, 59, 0), True),
    (datetime(2026, 11, 23, 21, 0, 0), False),
    (datetime(2026, 11, 23, 3, 0, 0), False),
])
@pytest.mark.parametrize("mode", ["progressive", "predictive"])
def test_a_new_york_lead_is_claimed_only_inside_its_own_window(run, floor, local, claimed, mode):
    at(datetime(2026, 11, 21, 12, 0, tzinfo=UTC))
    floor("NY", "+1 212 555 0100")
    assert claim(run, local.replace(tzinfo=NEW_YORK), mode) == ("NY" if claimed else None)


def test_the_window_is_a_setting_and_off_by_default(run, floor, sql):
    at(datetime(2026, 11, 21, 12, 0, tzinfo=UTC))
    floor("NY", "+1 212 555 0100")
    three_am = datetime(2026, 11, 23, 3, 0, tzinfo=NEW_YORK)
    sql("UPDATE sales_dialer_config SET calling_window_start = '02:30:00', calling_window_end = '03:30:00'")
    assert claim(run, three_am) == "NY"
    sql("UPDATE sales_master SET dial_status = 'Pending', isReserved = 0")
    sql("UPDATE sales_dialer_config SET calling_window_start = '09:00:00', calling_window_end = '21:00:00'")
    assert claim(run, three_am) is None
    sql("UPDATE sales_dialer_config SET obey_calling_window = 0")
    assert claim(run, three_am) == "NY"


NY_PHONE, IDAHO_PHONE = "+1 212 555 0100", "+1 208 555 0100"


@pytest.mark.parametrize("phone, instant, claimed", [
    # Daylight saving: 2027-03-14 02:00 EST springs forward to 03:00 EDT, so 09:00 is 13:00 UTC.
    (NY_PHONE, datetime(2027, 3, 14, 12, 59, tzinfo=UTC), False),
    (NY_PHONE, datetime(2027, 3, 14, 13, 0, tzinfo=UTC), True),
    # 2026-11-01 02:00 EDT falls back to 01:00 EST: 09:00 EST is 14:00 UTC, 21:00 EST is 02:00 UTC.
    (NY_PHONE, datetime(2026, 11, 1, 13, 59, tzinfo=UTC), False),
    (NY_PHONE, datetime(2026, 11, 1, 14, 0, tzinfo=UTC), True),
    (NY_PHONE, datetime(2026, 11, 2, 1, 59, tzinfo=UTC), True),
    (NY_PHONE, datetime(2026, 11, 2, 2, 0, tzinfo=UTC), False),
    # A number spanning zones: +1 208 rings in America/Boise (MST, UTC-7) and America/Los_Angeles
    # (PST, UTC-8); both are inside 09:00-21:00 from 09:00 PST (17:00 UTC) to 21:00 MST (04:00 UTC).
    (IDAHO_PHONE, datetime(2026, 11, 23, 16, 59, tzinfo=UTC), False),
    (IDAHO_PHONE, datetime(2026, 11, 23, 17, 0, tzinfo=UTC), True),
    (IDAHO_PHONE, datetime(2026, 11, 24, 3, 59, tzinfo=UTC), True),
    (IDAHO_PHONE, datetime(2026, 11, 24, 4, 0, tzinfo=UTC), False),
])
def test_the_window_follows_each_zone_s_daylight_saving_and_a_number_spanning_zones_gets_the_shared_one(
        run, floor, phone, instant, claimed):
    at(datetime(2026, 10, 1, 12, 0, tzinfo=UTC))
    floor("LEAD", phone)
    assert claim(run, instant) == ("LEAD" if claimed else None)


@pytest.mark.parametrize("local, claimed", [
    (datetime(2026, 11, 23, 8, 59), False),
    (datetime(2026, 11, 23, 9, 0), True),
    (datetime(2026, 11, 23, 20, 59), True),
    (datetime(2026, 11, 23, 21, 0), False),
])
def test_a_number_with_no_zone_gets_the_window_in_db_timezone(run, floor, local, claimed):
    """+870 (Inmarsat) has no zone in phonenumbers' data."""
    at(datetime(2026, 11, 21, 12, 0, tzinfo=UTC))
    floor("SHIP", "+870 7712 34567")
    assert claim(run, local.replace(tzinfo=TZ)) == ("SHIP" if claimed else None)


def test_a_callback_asked_for_at_22_local_waits_for_the_next_opening(run, floor):
    at(datetime(2026, 11, 21, 12, 0, tzinfo=UTC))
    floor("CB", "+1 212 555 0100", priority_id=1, callback_scheduled_at="2026-11-23T22:00:00-05:00")
    assert claim(run, datetime(2026, 11, 23, 22, 0, tzinfo=NEW_YORK)) is None
    assert claim(run, datetime(2026, 11, 24, 8, 59, tzinfo=NEW_YORK)) is None
    assert claim(run, datetime(2026, 11, 24, 9, 0, tzinfo=NEW_YORK)) == "CB"


def test_a_closed_lead_due_first_is_passed_for_an_open_one(run, floor, sql):
    """0 empty answers while a lawful lead is due: New York sleeps while Kolkata works."""
    at(datetime(2026, 11, 21, 12, 0, tzinfo=UTC))
    floor("NY-1", "+1 212 555 0100")
    floor("NY-2", "+1 212 555 0101")
    floor("IN", "+91 98765 43210")
    sql("UPDATE sales_master SET dial_status = 'Not Connected', next_retry_at = '2026-01-01 00:00:00'"
        " WHERE oli_id LIKE 'NY-%%'")
    sql("UPDATE sales_master SET dial_status = 'Not Connected', next_retry_at = '2026-06-01 00:00:00'"
        " WHERE oli_id = 'IN'")
    noon_in_kolkata = datetime(2026, 11, 23, 12, 0, tzinfo=ZoneInfo("Asia/Kolkata"))  # 01:30 in New York
    assert claim(run, noon_in_kolkata) == "IN"
    assert claim(run, noon_in_kolkata) is None


def test_a_zone_first_met_after_a_claim_read_the_zones_is_found(run, floor):
    at(datetime(2026, 11, 21, 12, 0, tzinfo=UTC))
    floor("IN", "+91 98765 43210")
    noon_utc = datetime(2026, 11, 23, 15, 0, tzinfo=UTC)  # 20:30 in Kolkata, 10:00 in New York
    assert claim(run, noon_utc) == "IN"
    floor("NY", "+1 212 555 0100")
    assert claim(run, noon_utc) == "NY"


@pytest.mark.parametrize("mode, status, body", [
    ("redial", 409, {"ok": False, "error": "not_claimable", "reason": "outside_calling_window",
                     # issue #68 item 6: when the window opens, 09:00 in New York, wall-clock DB_TIMEZONE
                     "next_at": clock.format_wall_clock(clock.wall(datetime(2026, 11, 23, 9, 0, tzinfo=NEW_YORK), TZ))}),
    ("inbound", 200, None),
])
def test_a_redial_outside_the_window_is_409_and_an_inbound_call_is_answered(client, engine_auth, floor, sql, mode,
                                                                           status, body):
    at(datetime(2026, 11, 21, 12, 0, tzinfo=UTC))
    floor("NY", "+1 212 555 0100")
    sql("UPDATE sales_master SET dial_status = 'Received' WHERE oli_id = 'NY'")
    at(datetime(2026, 11, 23, 3, 0, tzinfo=NEW_YORK))
    response = client.post("/engine/claim", json={"mode": mode, "agent_id": 501, "oli_id": "NY", "request_id": "r"},
                           headers=engine_auth)
    assert response.status_code == status
    if body:
        assert response.get_json() == body
    else:
        assert response.get_json()["lead"]["oli_id"] == "NY"
