"""The clock's wall-clock rules (decisions.md D2; docs/operations/time.md "Time and daylight saving"), on the nights
the clocks change in America/New_York (spring forward 2027-03-14 02:00 EST -> 03:00 EDT; fall back
2026-11-01 02:00 EDT -> 01:00 EST), in Asia/Kolkata (+05:30, no daylight saving) and on Lord Howe
Island (a 30-minute shift)."""

from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest

from dialerapi.plumbing import clock

pytestmark = pytest.mark.clock

NEW_YORK = ZoneInfo("America/New_York")
KOLKATA = ZoneInfo("Asia/Kolkata")
LORD_HOWE = ZoneInfo("Australia/Lord_Howe")


def utc(*fields):
    return datetime(*fields, tzinfo=timezone.utc)


@pytest.mark.parametrize("sent, stored", [
    # Rule 1: a time that does not exist moves forward by the gap.
    ("2027-03-14 02:30", datetime(2027, 3, 14, 3, 30)),
    ("2027-03-14 02:00:00", datetime(2027, 3, 14, 3, 0)),
    ("2027-03-14T02:59:59", datetime(2027, 3, 14, 3, 59, 59)),
    # Around the gap nothing moves.
    ("2027-03-14 01:59:59", datetime(2027, 3, 14, 1, 59, 59)),
    ("2027-03-14 03:00", datetime(2027, 3, 14, 3, 0)),
    # Rule 2: a time that exists twice is its first occurrence, stored as sent.
    ("2026-11-01 01:30", datetime(2026, 11, 1, 1, 30)),
    # With an offset: converted; the first 01:30 stays, the second cannot be stored as itself (rule 3).
    ("2026-11-01T01:30:00-04:00", datetime(2026, 11, 1, 1, 30)),
    ("2026-11-01T01:30:00-05:00", datetime(2026, 11, 1, 2, 0)),
    ("2026-11-01T06:30:00Z", datetime(2026, 11, 1, 2, 0)),
    ("2026-11-01T07:00:00Z", datetime(2026, 11, 1, 2, 0)),
    ("2026-11-01T07:00:01Z", datetime(2026, 11, 1, 2, 0, 1)),
    ("2027-03-14T07:30:00Z", datetime(2027, 3, 14, 3, 30)),
    ("2027-03-14T06:30:00Z", datetime(2027, 3, 14, 1, 30)),
])
def test_new_york_input_times(sent, stored):
    assert clock.parse_wall_clock(sent, NEW_YORK) == stored


def test_a_stored_repeated_time_reads_as_its_first_occurrence():
    assert clock.instant(datetime(2026, 11, 1, 1, 30), NEW_YORK) == utc(2026, 11, 1, 5, 30)
    assert clock.format_utc(datetime(2026, 11, 1, 1, 30), NEW_YORK) == "2026-11-01T05:30:00Z"


def test_the_end_of_the_repeated_hour_is_never_earlier_than_the_moment():
    for minute in range(0, 60, 7):
        moment = utc(2026, 11, 1, 6, minute)  # 01:mm EST, the second pass
        stored = clock.wall(moment, NEW_YORK)
        assert stored == datetime(2026, 11, 1, 2, 0)
        assert clock.instant(stored, NEW_YORK) >= moment


@pytest.mark.parametrize("start, delta, expected", [
    # Rule 4: durations are elapsed time.
    (datetime(2027, 3, 14, 1, 30), timedelta(hours=1), datetime(2027, 3, 14, 3, 30)),
    (datetime(2027, 3, 14, 1, 55), timedelta(minutes=10), datetime(2027, 3, 14, 3, 5)),
    (datetime(2027, 3, 14, 1, 59, 30), timedelta(seconds=60), datetime(2027, 3, 14, 3, 0, 30)),
    (datetime(2026, 11, 1, 0, 30), timedelta(hours=1), datetime(2026, 11, 1, 1, 30)),
    # From the first 01:30 an hour later is the second 01:30: stored at the end of the repeated hour.
    (datetime(2026, 11, 1, 1, 30), timedelta(hours=1), datetime(2026, 11, 1, 2, 0)),
    (datetime(2026, 11, 1, 1, 30), timedelta(hours=2), datetime(2026, 11, 1, 2, 30)),
    # From the second pass (fold=1, as `now` reads then) ten minutes later is 02:05 EST.
    (datetime(2026, 11, 1, 1, 55, fold=1), timedelta(minutes=10), datetime(2026, 11, 1, 2, 5)),
    (datetime(2026, 11, 1, 2, 0), timedelta(seconds=-30), datetime(2026, 11, 1, 2, 0)),
    (datetime(2026, 11, 1, 3, 0), timedelta(hours=-1), datetime(2026, 11, 1, 2, 0)),
])
def test_elapsed_time_across_a_change(start, delta, expected):
    assert clock.after(start, delta, NEW_YORK) == expected


def test_now_reads_the_wall_clock_and_keeps_the_fold(frozen_clock):
    frozen_clock(utc(2026, 11, 1, 5, 10))
    first = clock.now(NEW_YORK)
    frozen_clock(utc(2026, 11, 1, 6, 10))
    second = clock.now(NEW_YORK)
    assert first == second == datetime(2026, 11, 1, 1, 10)
    assert (first.fold, second.fold) == (0, 1)
    assert clock.instant(second, NEW_YORK) == utc(2026, 11, 1, 6, 10)
    frozen_clock(utc(2027, 3, 14, 7, 0))
    assert clock.now(NEW_YORK) == datetime(2027, 3, 14, 3, 0)


def test_a_zone_without_daylight_saving():
    assert clock.parse_wall_clock("2026-11-25T10:00:00Z", KOLKATA) == datetime(2026, 11, 25, 15, 30)
    assert clock.after(datetime(2028, 2, 29, 23, 59, 59), timedelta(seconds=1), KOLKATA) == datetime(2028, 3, 1)
    assert clock.format_utc(datetime(2029, 1, 1, 5, 29, 59), KOLKATA) == "2028-12-31T23:59:59Z"


def test_a_half_hour_shift():
    # Lord Howe falls back from 02:00 (+11:00) to 01:30 (+10:30).
    assert clock.wall(utc(2027, 4, 3, 15, 10), LORD_HOWE) == datetime(2027, 4, 4, 2, 0)
    assert clock.parse_wall_clock("2027-10-03 02:15", LORD_HOWE) == datetime(2027, 10, 3, 2, 45)
