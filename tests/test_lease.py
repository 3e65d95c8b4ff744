"""The reservation lease (issue #16; docs/engine/api.md, "Reservation lease"): a reservation no settle ends is
released by the sweep after RESERVATION_LEASE_SECONDS as an originate failure would be, logged,
counted and shown; an operator releases one by hand; a settle that comes after the release is
refused and counts nothing twice."""

import json
import logging
import threading
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from conftest import DEFAULT_NOW, ENGINE_SECRET, TZ, cli, make_app
from dialerapi.plumbing import clock
from dialerapi.plumbing.db import get_db
from dialerapi.rules.core import vocabulary
from dialerapi.rules.dialing import crm_actions
from dialerapi.rules.leads import dialstate
from dialerapi.upkeep import jobs

NOW = DEFAULT_NOW
LEASE = timedelta(hours=4)


@pytest.fixture
def engine(client):
    """POST /engine/<operation> with the engine key: engine("claim", {...}) -> (status, body)."""

    def post(operation, body):
        response = client.post(f"/engine/{operation}", json=body, headers={"X-API-Key": ENGINE_SECRET})
        return response.status_code, response.get_json()

    return post


@pytest.fixture
def claimed(sql, new_lead, engine):
    """Agent 501 claims lead A (Pending, call_count 2) at NOW, with a missed activity open; returns the claim."""
    sql("INSERT INTO sales_agents (id, extension, name, panel_active, ami_idle) VALUES (501, '4501', 'Kavya', 1, 1)")
    sql("INSERT INTO sales_agent_skills (agent_id, form_type) VALUES (501, 'home_loan')")
    new_lead("A")
    sql("UPDATE sales_master SET call_count = 2, first_attempt_at = %s, last_attempt_at = %s WHERE oli_id = 'A'",
        NOW - timedelta(days=1), NOW - timedelta(days=1))
    status, answer = engine("claim", {"mode": "progressive", "agent_id": 501, "request_id": "c-1"})
    assert status == 200 and answer["lead"]["reserved_at"] == "2026-11-21 10:00:00"
    assert engine("call-connected", {"oli_id": "A", "agent_id": 501, "request_id": "m-1"})[0] == 200
    return answer["lead"]


def sweep(app):
    with app.app_context():
        return crm_actions.sweep(get_db(), clock.now(TZ), TZ, app.config)


def test_a_reservation_is_released_when_its_lease_runs_out_and_not_a_second_before(
        app, sql, claimed, frozen_clock, client, auth, caplog):
    held = client.post("/api/pending-dispositions", json={"oliId": "A", "reason": "DND"}, headers=auth)
    assert held.status_code == 202
    before = sql.lead("A")
    frozen_clock(NOW + LEASE - timedelta(seconds=1))
    assert sweep(app)["released"] == 0 and sql.lead("A") == before
    frozen_clock(NOW + LEASE)
    with caplog.at_level(logging.WARNING, logger="dialerapi.actions"):
        assert sweep(app)["released"] == 1
    lead = sql.lead("A")
    assert (lead["isReserved"], lead["reservation_id"], lead["reserved_at"]) == (0, None, None)
    assert lead["call_count"] == 2 and lead["last_attempt_at"] == NOW - timedelta(days=1), "no attempt counted"
    assert sql("SELECT * FROM sales_call_attempts") == []
    assert (lead["dial_status"], lead["disposeRemark"]) == ("Disposed", "CRM: DND"), "the held action applies"
    assert sql.one("SELECT cleared_by FROM sales_missed_activities")["cleared_by"] == "disposition"
    assert "released the reservation of lead A made at 2026-11-21 10:00:00" in caplog.text


def test_a_released_lead_is_restored_as_an_originate_failure_would_be(app, sql, claimed, frozen_clock):
    frozen_clock(NOW + LEASE)
    sweep(app)
    lead = sql.lead("A")
    assert lead["dial_status"] == "Pending" and lead["previous_dial_status"] is None
    assert lead["next_retry_at"] == NOW + LEASE + timedelta(seconds=60), "retried after RELEASE_RETRY_MS"
    activity = sql.one("SELECT ended_at, due_at FROM sales_missed_activities")
    assert activity == {"ended_at": NOW + LEASE, "due_at": NOW + LEASE + timedelta(minutes=10)}


def test_a_settle_after_the_release_is_refused_and_counts_nothing(app, sql, claimed, frozen_clock, engine):
    frozen_clock(NOW + LEASE)
    sweep(app)
    settle = {"oli_id": "A", "outcome": "answered", "agent_id": 501, "started_at": "2026-11-21 10:00:05",
              "call_id": "late-1", "reservation_id": claimed["reservation_id"]}
    assert engine("settle", settle) == (409, {"ok": False, "error": "stale_reservation"})
    without = {key: value for key, value in settle.items() if key != "reservation_id"}
    assert engine("settle", {**without, "call_id": "late-2"}) == (409, {"ok": False, "error": "lead_not_live"})
    # Claimed again by another call: the late settle of the first reservation must not settle this one.
    frozen_clock(NOW + LEASE + timedelta(minutes=2))
    status, again = engine("claim", {"mode": "progressive", "agent_id": 501, "request_id": "c-2"})
    assert again["lead"]["oli_id"] == "A" and again["lead"]["reservation_id"] != claimed["reservation_id"]
    assert engine("settle", {**settle, "call_id": "late-3"}) == (409, {"ok": False, "error": "stale_reservation"})
    assert sql.lead("A")["isReserved"] == 1 and sql.lead("A")["call_count"] == 2
    assert sql("SELECT * FROM sales_call_attempts") == []
    status, settled = engine("settle", {**settle, "call_id": "c-2", "reservation_id": again["lead"]["reservation_id"]})
    assert status == 200 and settled["lead"]["call_count"] == 3


def test_the_sweep_job_counts_releases_in_metrics_and_health_shows_the_oldest(app, sql, claimed, frozen_clock, client,
                                                                           auth):
    frozen_clock(NOW + timedelta(hours=1, seconds=30))
    health = client.get("/health", headers=auth).get_json()["metrics"]
    assert (health["live_reservations"], health["oldest_reservation_seconds"]) == (1, 3630)
    metrics = client.get("/metrics", headers=auth).get_data(as_text=True)
    assert "dialerapi_oldest_reservation_seconds 3630.0" in metrics and "dialerapi_live_reservations 1.0" in metrics
    released_before = _released_total(metrics)
    frozen_clock(NOW + LEASE + timedelta(seconds=5))
    assert jobs.sweep_tick(app) == {"released": 1, "applied": 0, "live": 0, "failed": 0, "fell_back": 0}
    metrics = client.get("/metrics", headers=auth).get_data(as_text=True)
    assert _released_total(metrics) == released_before + 1
    health = client.get("/health", headers=auth).get_json()
    assert health["metrics"]["live_reservations"] == 0 and health["metrics"]["oldest_reservation_seconds"] is None
    assert any("released the reservation of lead A" in line for line in health["logs"])


def _released_total(metrics):
    line = next(line for line in metrics.splitlines() if line.startswith("dialerapi_reservations_released_total "))
    return float(line.split()[1])


def test_the_lease_is_a_setting(database_url, sql, claimed, frozen_clock):
    short = make_app(database_url, RESERVATION_LEASE_SECONDS="600")
    frozen_clock(NOW + timedelta(minutes=10))
    assert sweep(short)["released"] == 1


def test_a_row_reserved_in_sql_without_reserved_at_has_no_lease(app, sql, new_lead, make_live, frozen_clock, client,
                                                                auth):
    new_lead("SQL")
    make_live("SQL")
    frozen_clock(NOW + timedelta(days=3))
    assert sweep(app)["released"] == 0 and sql.lead("SQL")["isReserved"] == 1
    assert client.get("/health", headers=auth).get_json()["metrics"]["unleased_reservations"] == 1


NEW_YORK = ZoneInfo("America/New_York")


@pytest.mark.parametrize("reserved_at, now, expired", [
    # Spring forward (2027-03-14 02:00 EST -> 03:00 EDT): four wall-clock hours are three elapsed.
    (datetime(2027, 3, 14, 1, 30), datetime(2027, 3, 14, 5, 30), False),
    (datetime(2027, 3, 14, 1, 30), datetime(2027, 3, 14, 6, 29, 59), False),
    (datetime(2027, 3, 14, 1, 30), datetime(2027, 3, 14, 6, 30), True),
    # Fall back (2026-11-01 02:00 EDT -> 01:00 EST): four wall-clock hours are five elapsed.
    (datetime(2026, 11, 1, 0, 30), datetime(2026, 11, 1, 3, 30), True),
    (datetime(2026, 11, 1, 0, 30), datetime(2026, 11, 1, 3, 29, 59), False),
])
def test_the_lease_is_elapsed_time_never_early_across_daylight_saving(app, sql, new_lead, reserved_at, now, expired):
    new_lead("DST")
    sql("UPDATE sales_master SET dial_status = 'Calling', isReserved = 1, reservation_id = 'r', reserved_at = %s"
        " WHERE oli_id = 'DST'", reserved_at)
    with app.app_context():
        found = get_db().run(dialstate.expired_reservations, now, NEW_YORK, 4 * 3600)
    assert [row["oli_id"] for row in found] == (["DST"] if expired else [])


@pytest.mark.long
def test_release_command(database_url, sql, claimed, new_lead):
    result = cli(database_url, "release", "A")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["lead"]["dial_status"] == "Pending"
    assert sql.lead("A")["isReserved"] == 0 and sql("SELECT * FROM sales_call_attempts") == []
    assert "released by hand" in result.stderr
    again = cli(database_url, "release", "A")
    assert again.returncode == 1 and "is not live" in again.stderr
    assert cli(database_url, "release", "ghost").returncode == 1


ACTORS = 16


def test_settles_and_sweeps_racing_on_expired_reservations_end_each_call_once(app, sql, new_lead, frozen_clock):
    """16 engines settle their expired reservations while 4 sweeps release them, all at once: each
    lead ends exactly once, by a settle (one attempt counted) or by a release (none)."""
    names = [f"E{n:02d}" for n in range(ACTORS)]
    sql("INSERT INTO sales_agents (id, extension, name) VALUES (501, '4501', 'Kavya')")
    for name in names:
        new_lead(name)
        sql("UPDATE sales_master SET previous_dial_status = 'Pending', dial_status = 'Calling', isReserved = 1,"
            " reservation_id = %s, reserved_at = %s WHERE oli_id = %s", f"res-{name}", NOW, name)
    later = NOW + LEASE + timedelta(minutes=1)
    frozen_clock(later)
    barrier = threading.Barrier(ACTORS + 4)
    outcomes, released, errors = {}, [], []

    def settle(name):
        barrier.wait()
        try:
            with app.app_context():
                get_db().run(dialstate.settle, name, "answered", later, tz=TZ, grace_minutes=10,
                             release_retry_ms=60000, agent_id=501, reservation_id=f"res-{name}")
            outcomes[name] = "settled"
        except vocabulary.StaleReservation:
            outcomes[name] = "refused"
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    def sweeper():
        barrier.wait()
        try:
            with app.app_context():
                released.extend(crm_actions.release_expired(get_db(), later, TZ, lease_seconds=int(LEASE.total_seconds()),
                                                        grace_minutes=10, release_retry_ms=60000))
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=settle, args=(name,)) for name in names]
    threads += [threading.Thread(target=sweeper) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    settled = sorted(name for name, outcome in outcomes.items() if outcome == "settled")
    assert sorted(settled + released) == names, "every lead ended once: settled or released, never both"
    assert sorted(name for name, outcome in outcomes.items() if outcome == "refused") == sorted(released)
    attempts = sorted(row["oli_id"] for row in sql("SELECT oli_id FROM sales_call_attempts"))
    assert attempts == settled
    rows = {row["oli_id"]: row for row in sql("SELECT * FROM sales_master")}
    assert all(rows[name]["isReserved"] == 0 for name in names)
    assert all(rows[name]["call_count"] == (1 if name in settled else 0) for name in names)
