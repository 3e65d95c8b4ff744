"""Daylight saving in DB_TIMEZONE, through the service (docs/operations/time.md "Time and daylight saving";
decisions.md D2): callback times that do not exist or exist twice, ISO 8601 offsets across a change,
the 5-minutes-in-the-past rule, the retry schedule and the work window, and missed-activity due_at
and overdue. The service runs in America/New_York, whatever the suite's own zone: clocks spring
forward on 2027-03-14 (02:00 EST -> 03:00 EDT) and fall back on 2026-11-01 (02:00 EDT -> 01:00 EST).
Moments are given as UTC instants, so each test says exactly which 01:30 it means."""

from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest

from conftest import make_app
from dialerapi.plumbing.db import get_db
from dialerapi.rules.agents import roster
from dialerapi.rules.dialing import claims
from dialerapi.rules.leads import dialstate
from dialerapi.upkeep import jobs

pytestmark = pytest.mark.clock

NEW_YORK = ZoneInfo("America/New_York")


def utc(*fields):
    return datetime(*fields, tzinfo=timezone.utc)


def wall(moment):
    """The New York wall-clock reading of an instant, with its fold, as the service clock gives it."""
    return moment.astimezone(NEW_YORK).replace(tzinfo=None)


@pytest.fixture(scope="module")
def ny_app(database_url):
    return make_app(database_url, DB_TIMEZONE="America/New_York")


@pytest.fixture
def ny(ny_app, auth):
    """POST to the New York service and run its functions in a transaction."""

    class Service:
        client = ny_app.test_client()

        def post(self, path, body):
            return self.client.post(path, json=body, headers=auth)

        def run(self, work, *args, **kwargs):
            with ny_app.app_context():
                return get_db().run(work, *args, **kwargs)

        def settle(self, oli_id, outcome, moment, **kwargs):
            return self.run(dialstate.settle, oli_id, outcome, wall(moment), tz=NEW_YORK, grace_minutes=10,
                            release_retry_ms=60000, **kwargs)

        def missed(self, agent_id=501):
            return self.client.get(f"/api/missed-activities?agentId={agent_id}", headers=auth).get_json()

    return Service()


@pytest.fixture
def night_shift(sql):
    """A work window that covers the whole night, so retries are not pushed to the next morning."""
    sql("UPDATE sales_dialer_config SET work_start = '00:00:00', work_end = '23:59:59'")


LEAD = {"phone_number": "9876543210", "client_name": "Maria Lopez", "form_type": "home_loan"}


def push(ny, oli_id, **fields):
    response = ny.post("/api/leads", {"oli_id": oli_id, **LEAD, "priority_id": 2, **fields})
    assert response.status_code == 201, response.get_json()
    return response.get_json()["leads"][0]


# --- callback times that do not exist, or exist twice ------------------------------------------------

def test_a_callback_time_in_the_spring_gap_moves_forward_by_the_gap(ny, sql, frozen_clock):
    frozen_clock(utc(2027, 3, 13, 15, 0))
    push(ny, "GAP-1")
    pending = ny.post("/api/pending-callbacks", {"oliId": "GAP-1", "scheduledAt": "2027-03-14 02:30"}).get_json()
    assert pending["pending"]["scheduled_at"] == "2027-03-14 03:30:00"
    assert sql.lead("GAP-1")["callback_scheduled_at"] == datetime(2027, 3, 14, 3, 30)
    lead = ny.post("/api/send-callback-request", {"oliId": "GAP-1", "scheduledAt": "2027-03-14 02:05:00"}).get_json()
    assert lead["lead"]["callback_scheduled_at"] == "2027-03-14 03:05:00"
    entry = push(ny, "GAP-2", priority_id=1, callback_scheduled_at="2027-03-14 02:30")
    assert entry["callback_scheduled_at"] == "2027-03-14 02:30", "the push echoes the value as sent"
    assert sql.lead("GAP-2")["callback_scheduled_at"] == datetime(2027, 3, 14, 3, 30)


def test_a_repeated_callback_time_is_its_first_occurrence(ny, sql, frozen_clock):
    frozen_clock(utc(2026, 10, 31, 15, 0))
    push(ny, "TWICE")
    response = ny.post("/api/pending-callbacks", {"oliId": "TWICE", "scheduledAt": "2026-11-01 01:30"})
    assert response.get_json()["pending"]["scheduled_at"] == "2026-11-01 01:30:00"
    ny.run(roster.save_agent, 501, "4501", "Agent", ["home_loan"], [])
    ny.run(roster.set_availability, 501, panel_active=True, ami_idle=True)
    # Due at the first 01:30 (05:30 UTC), not a second earlier.
    assert ny.run(claims.claim_next, 501, wall(utc(2026, 11, 1, 5, 29, 59))) is None
    assert ny.run(claims.claim_next, 501, wall(utc(2026, 11, 1, 5, 30)))["oli_id"] == "TWICE"


@pytest.mark.parametrize("sent, stored, claimable_from", [
    ("2026-11-01T01:30:00-04:00", datetime(2026, 11, 1, 1, 30), utc(2026, 11, 1, 5, 30)),
    # The second 01:30 cannot be stored as itself: it is stored as 02:00, called 30 minutes late, never early.
    ("2026-11-01T01:30:00-05:00", datetime(2026, 11, 1, 2, 0), utc(2026, 11, 1, 7, 0)),
    ("2026-11-01T06:30:00Z", datetime(2026, 11, 1, 2, 0), utc(2026, 11, 1, 7, 0)),
    ("2027-03-14T07:30:00Z", datetime(2027, 3, 14, 3, 30), utc(2027, 3, 14, 7, 30)),
    ("2027-03-14T01:30:00-05:00", datetime(2027, 3, 14, 1, 30), utc(2027, 3, 14, 6, 30)),
])
def test_iso_times_with_an_offset_across_a_change(ny, sql, frozen_clock, sent, stored, claimable_from):
    frozen_clock(utc(2026, 10, 31, 15, 0))
    push(ny, "ISO")
    ny.post("/api/send-callback-request", {"oliId": "ISO", "scheduledAt": sent})
    assert sql.lead("ISO")["callback_scheduled_at"] == stored
    ny.run(roster.save_agent, 501, "4501", "Agent", ["home_loan"], [])
    ny.run(roster.set_availability, 501, panel_active=True, ami_idle=True)
    assert ny.run(claims.claim_next, 501, wall(claimable_from - timedelta(seconds=1))) is None
    assert ny.run(claims.claim_next, 501, wall(claimable_from))["oli_id"] == "ISO"


# --- "not more than 5 minutes in the past" ---------------------------------------------------------

@pytest.mark.parametrize("now, scheduled, accepted", [
    # 03:02 EDT is 07:02 UTC; 01:58 EST was 4 minutes before, although the wall clock says 64.
    (utc(2027, 3, 14, 7, 2), "2027-03-14 01:58", True),
    (utc(2027, 3, 14, 7, 2), "2027-03-14 01:56", False),
    (utc(2027, 3, 14, 7, 2), "2027-03-14T06:57:00Z", True),
    # 01:02 EST (second pass) is 06:02 UTC; 00:58 EDT was 64 minutes before, although the wall clock says 4.
    (utc(2026, 11, 1, 6, 2), "2026-11-01 00:58", False),
    (utc(2026, 11, 1, 6, 2), "2026-11-01T01:58:00-04:00", True),
    (utc(2026, 11, 1, 6, 2), "2026-11-01T00:58:00-05:00", True),
])
def test_the_five_minutes_in_the_past_rule_counts_elapsed_time(ny, frozen_clock, now, scheduled, accepted):
    frozen_clock(utc(2026, 10, 1, 12, 0))
    push(ny, "PAST")
    frozen_clock(now)
    response = ny.post("/api/pending-callbacks", {"oliId": "PAST", "scheduledAt": scheduled})
    assert response.status_code == (200 if accepted else 400), response.get_json()


# --- the retry schedule and the work window ------------------------------------------------------

@pytest.mark.parametrize("hangup, outcome, expected", [
    # retry_seconds (3600) is an hour of elapsed time, not of wall clock.
    (utc(2027, 3, 14, 6, 30), "no_answer", datetime(2027, 3, 14, 3, 30)),
    (utc(2026, 11, 1, 4, 30), "busy", datetime(2026, 11, 1, 1, 30)),
    # From the first 01:30, an hour later is the second 01:30: stored as 02:00, late rather than early.
    (utc(2026, 11, 1, 5, 30), "no_answer", datetime(2026, 11, 1, 2, 0)),
    (utc(2026, 11, 1, 6, 30), "no_answer", datetime(2026, 11, 1, 2, 30)),
    (utc(2027, 3, 14, 6, 30), "abandoned", datetime(2027, 3, 14, 3, 30)),
    # RELEASE_RETRY_MS (60 s) across the gap.
    (utc(2027, 3, 14, 6, 59, 30), "originate_failed", datetime(2027, 3, 14, 3, 0, 30)),
])
def test_retries_are_elapsed_time_across_a_change(ny, sql, make_live, frozen_clock, night_shift, hangup, outcome,
                                                 expected):
    frozen_clock(utc(2026, 10, 1, 12, 0))
    push(ny, "RETRY")
    make_live("RETRY")
    ny.settle("RETRY", outcome, hangup)
    assert sql.lead("RETRY")["next_retry_at"] == expected


def test_retries_stay_inside_the_work_window_across_a_change(ny, sql, make_live, frozen_clock):
    frozen_clock(utc(2026, 10, 1, 12, 0))
    push(ny, "W")
    make_live("W", call_count=1, first_attempt_at="2027-03-13 20:00:00")
    # 20:30 EST on the eve of the change: the next attempt is 09:00 EDT the next morning (13:00 UTC).
    ny.settle("W", "no_answer", utc(2027, 3, 14, 1, 30))
    assert sql.lead("W")["next_retry_at"] == datetime(2027, 3, 14, 9, 0)


def test_a_work_start_in_the_gap_moves_forward(ny, sql, frozen_clock):
    sql("UPDATE sales_dialer_config SET work_start = '02:30:00', work_end = '21:00:00'")
    frozen_clock(utc(2027, 3, 14, 5, 0))  # 00:00 EST, before the window
    push(ny, "EARLY")
    assert sql.lead("EARLY")["next_retry_at"] == datetime(2027, 3, 14, 3, 30)
    frozen_clock(utc(2026, 11, 1, 4, 0))  # 00:00 EDT on the fall-back day: 02:30 happens once
    push(ny, "EARLY")
    assert sql.lead("EARLY")["next_retry_at"] == datetime(2026, 11, 1, 2, 30)


# --- missed activities: due_at and overdue -----------------------------------------------------------

@pytest.fixture
def bridged(ny, sql, make_live, frozen_clock):
    """Agent 501 on a live call to OLI-1 that connected at `connected` (a UTC instant)."""

    def connect(connected):
        frozen_clock(utc(2026, 10, 1, 12, 0))
        push(ny, "OLI-1")
        ny.run(roster.save_agent, 501, "4501", "Agent", ["home_loan"], [])
        make_live("OLI-1")
        ny.run(roster.open_missed_activity, "OLI-1", 501, wall(connected), NEW_YORK)

    return connect


def overdue_at(ny, frozen_clock, moment):
    frozen_clock(moment)
    body = ny.missed()
    blocked_flags = ny.run(roster.refresh_blocking, wall(moment), NEW_YORK)
    return body["items"][0]["overdue"], body["blocked"], blocked_flags


@pytest.mark.parametrize("connected, hangup, times", [
    # Spring forward: hangup 01:55 EST, due ten minutes later at 03:05 EDT.
    (utc(2027, 3, 14, 6, 50), utc(2027, 3, 14, 6, 55),
     ("2027-03-14T06:50:00Z", "2027-03-14T06:55:00Z", "2027-03-14T07:05:00Z")),
    # Fall back: hangup at the first 01:55 (EDT), due at the second 01:05 (EST).
    (utc(2026, 11, 1, 5, 50), utc(2026, 11, 1, 5, 55),
     ("2026-11-01T05:50:00Z", "2026-11-01T05:55:00Z", "2026-11-01T06:05:00Z")),
    # Fall back: the whole call inside the second pass.
    (utc(2026, 11, 1, 6, 5), utc(2026, 11, 1, 6, 10),
     ("2026-11-01T06:05:00Z", "2026-11-01T06:10:00Z", "2026-11-01T06:20:00Z")),
    # Across the fall-back transition itself.
    (utc(2026, 11, 1, 5, 58), utc(2026, 11, 1, 6, 1),
     ("2026-11-01T05:58:00Z", "2026-11-01T06:01:00Z", "2026-11-01T06:11:00Z")),
])
def test_missed_activity_times_are_exact_in_utc_across_a_change(ny, bridged, frozen_clock, connected, hangup, times):
    bridged(connected)
    ny.settle("OLI-1", "answered", hangup, agent_id=501)
    due = datetime.fromisoformat(times[2])
    frozen_clock(hangup)
    item = ny.missed()["items"][0]
    assert (item["connected_at"], item["ended_at"], item["due_at"]) == times
    assert overdue_at(ny, frozen_clock, due - timedelta(seconds=1)) == (False, False, {})
    assert overdue_at(ny, frozen_clock, due + timedelta(seconds=1)) == (True, True, {501: True})


def test_the_wall_clock_columns_keep_the_storage_rules(ny, bridged, sql):
    bridged(utc(2026, 11, 1, 5, 50))
    ny.settle("OLI-1", "answered", utc(2026, 11, 1, 5, 55), agent_id=501)
    row = sql.one("SELECT ended_at, due_at, ended_at_utc, due_at_utc FROM sales_missed_activities")
    # due_at's instant is in the second pass: its wall-clock column says 02:00, late rather than early.
    assert row == {"ended_at": datetime(2026, 11, 1, 1, 55), "due_at": datetime(2026, 11, 1, 2, 0),
                   "ended_at_utc": datetime(2026, 11, 1, 5, 55), "due_at_utc": datetime(2026, 11, 1, 6, 5)}


# --- jobs on the fall-back night -----------------------------------------------------------------------

def test_a_job_still_runs_when_the_wall_clock_goes_back(ny_app):
    runs = []
    with ny_app.app_context():
        db = get_db()
        first_pass = wall(utc(2026, 11, 1, 5, 59, 50))   # 01:59:50 EDT
        second_pass = wall(utc(2026, 11, 1, 6, 0, 50))   # 01:00:50 EST, a minute later
        assert jobs.run_once_per_tick(db, "sweep", 60, first_pass, lambda: runs.append(1)) is None
        jobs.run_once_per_tick(db, "sweep", 60, second_pass, lambda: runs.append(2))
        assert jobs.run_once_per_tick(db, "sweep", 60, second_pass + timedelta(seconds=20), lambda: runs.append(3)) \
            is None
    assert runs == [1, 2], "the job ran after the clock went back, and then once per tick again"
