"""Settle (decisions.md D6; the `Calling` rows of lead-intake-api.md "States and transitions"),
the sweep, and the once-per-tick job lock."""

import json
import threading
from datetime import datetime, timedelta

import pytest
import requests

from conftest import TZ, cli, utc_naive
from dialerapi.plumbing.db import get_db
from dialerapi.rules.core import vocabulary
from dialerapi.rules.dialing import crm_actions
from dialerapi.rules.leads import dialstate
from dialerapi.upkeep import jobs

NOW = datetime(2026, 11, 21, 10, 0, 0)


@pytest.fixture(autouse=True)
def fixed_now(frozen_clock):
    frozen_clock(NOW)


@pytest.fixture
def settle(app):
    def settle(oli_id, outcome, now=NOW, **kwargs):
        with app.app_context():
            return get_db().run(dialstate.settle, oli_id, outcome, now, tz=TZ, grace_minutes=10, release_retry_ms=60000,
                                **kwargs)

    return settle


@pytest.fixture
def live_lead(new_lead, make_live, sql):
    """A lead live on a call, and agent 501 on the roster to settle it for."""
    sql("INSERT IGNORE INTO sales_agents (id, extension, name) VALUES (501, '4501', 'Kavya')")

    def make(oli_id="OLI-1", **columns):
        new_lead(oli_id)
        return make_live(oli_id, **columns)

    return make


def test_settle_for_an_agent_not_on_the_roster_stores_nothing(settle, live_lead, sql, open_missed_activity):
    before = live_lead()
    open_missed_activity("OLI-1", agent_id=501)
    with pytest.raises(vocabulary.UnknownAgent):
        settle("OLI-1", "answered", agent_id=999)
    assert sql.lead("OLI-1") == before and sql("SELECT * FROM sales_call_attempts") == []
    assert sql.one("SELECT ended_at FROM sales_missed_activities")["ended_at"] is None


@pytest.mark.clock
def test_answered_becomes_received_and_records_the_attempt(settle, live_lead, sql):
    live_lead()
    result = settle("OLI-1", "answered", agent_id=501, hangup_by="customer", hangup_cause="16",
                    started_at=datetime(2026, 11, 21, 9, 58))
    row = sql.lead("OLI-1")
    assert result["lead"]["dial_status"] == row["dial_status"] == "Received"
    assert row["isReserved"] == 0 and row["next_retry_at"] is None and row["call_count"] == 1
    assert row["last_dial_result"] == "ANSWER" and (row["hangup_by"], row["hangup_cause"]) == ("customer", "16")
    assert row["first_attempt_at"] == row["last_attempt_at"] == datetime(2026, 11, 21, 9, 58)
    attempt = sql.one("SELECT * FROM sales_call_attempts")
    assert (attempt["lead_id"], attempt["oli_id"], attempt["agent_id"], attempt["call_type"]) == (row["id"], "OLI-1", 501, "outbound")
    assert (attempt["started_at"], attempt["ended_at"], attempt["result"]) == (datetime(2026, 11, 21, 9, 58), NOW, "ANSWER")


@pytest.mark.clock
@pytest.mark.parametrize("outcome, result", [("no_answer", "NOANSWER"), ("busy", "BUSY"), ("congestion", "CONGESTION"),
                                             ("machine", "MACHINE")])
def test_unanswered_calls_become_not_connected_and_retry_after_retry_seconds(settle, live_lead, sql, outcome, result):
    live_lead(call_count=2, first_attempt_at="2026-11-20 10:00:00")
    settle("OLI-1", outcome)
    row = sql.lead("OLI-1")
    assert row["dial_status"] == "Not Connected" and row["last_dial_result"] == result
    assert row["call_count"] == 3 and row["next_retry_at"] == NOW + timedelta(seconds=3600)
    assert row["first_attempt_at"] == datetime(2026, 11, 20, 10, 0) and row["last_attempt_at"] == NOW


@pytest.mark.clock
@pytest.mark.parametrize("now, expected", [
    (datetime(2026, 11, 21, 19, 59), datetime(2026, 11, 21, 20, 59)),
    (datetime(2026, 11, 21, 20, 30), datetime(2026, 11, 22, 9, 0)),
    (datetime(2026, 11, 21, 22, 0), datetime(2026, 11, 22, 9, 0)),
    (datetime(2026, 11, 21, 6, 0), datetime(2026, 11, 21, 9, 0)),
])
def test_not_connected_retry_stays_inside_the_work_window(settle, live_lead, sql, now, expected):
    live_lead()
    settle("OLI-1", "no_answer", now=now)
    assert sql.lead("OLI-1")["next_retry_at"] == expected


def test_retry_seconds_comes_from_the_config(settle, live_lead, sql):
    sql("UPDATE sales_dialer_config SET retry_seconds = 600")
    live_lead()
    settle("OLI-1", "busy")
    assert sql.lead("OLI-1")["next_retry_at"] == NOW + timedelta(seconds=600)


def test_reaching_max_tries_disposes_the_lead(settle, live_lead, sql):
    live_lead(call_count=19)
    settle("OLI-1", "no_answer")
    row = sql.lead("OLI-1")
    assert row["call_count"] == 20 and row["dial_status"] == "Disposed"
    assert row["priority_id"] == 3 and row["disposeRemark"] == "Dialer system: max tries reached"
    assert row["next_retry_at"] is None


def test_below_max_tries_is_not_disposed(settle, live_lead, sql):
    sql("UPDATE sales_dialer_config SET max_tries = 5")
    live_lead(call_count=3)
    settle("OLI-1", "no_answer")
    assert sql.lead("OLI-1")["dial_status"] == "Not Connected"
    sql("UPDATE sales_master SET previous_dial_status = dial_status, dial_status = 'Calling', isReserved = 1")
    settle("OLI-1", "no_answer")
    assert sql.lead("OLI-1")["dial_status"] == "Disposed"


def test_redial_ending_not_connected_does_not_count(settle, live_lead, sql):
    live_lead(call_count=4)
    settle("OLI-1", "no_answer", call_type="redial")
    row = sql.lead("OLI-1")
    assert row["dial_status"] == "Not Connected" and row["call_count"] == 4
    assert sql.one("SELECT call_type FROM sales_call_attempts")["call_type"] == "redial"


@pytest.mark.parametrize("outcome, result", [("rejected", "REJECT"), ("cancelled", "CANCEL")])
def test_reject_and_cancel_become_rejected_and_are_never_retried(settle, live_lead, sql, outcome, result):
    live_lead(next_retry_at="2026-11-21 12:00:00")
    settle("OLI-1", outcome)
    row = sql.lead("OLI-1")
    assert (row["dial_status"], row["last_dial_result"], row["next_retry_at"]) == ("Rejected", result, None)


@pytest.mark.clock
def test_abandoned_retries_after_retry_seconds(settle, live_lead, sql):
    live_lead(call_count=19)
    settle("OLI-1", "abandoned")
    row = sql.lead("OLI-1")
    assert row["dial_status"] == "Abandoned" and row["next_retry_at"] == NOW + timedelta(seconds=3600)
    assert row["priority_id"] == 2, "Abandoned is not on the max_tries cycle"


def test_abandoned_keeps_an_existing_next_retry_at(settle, live_lead, sql):
    live_lead(next_retry_at="2026-11-21 10:20:00")
    settle("OLI-1", "abandoned")
    assert sql.lead("OLI-1")["next_retry_at"] == datetime(2026, 11, 21, 10, 20)


@pytest.mark.parametrize("before", ["Pending", "Not Connected", "Callback", "Abandoned"])
def test_originate_failure_restores_the_previous_status(settle, live_lead, sql, before):
    live_lead(previous_dial_status=before, call_count=3, first_attempt_at="2026-11-19 10:00:00",
              last_attempt_at="2026-11-20 10:00:00", last_dial_result="BUSY")
    settle("OLI-1", "originate_failed")
    row = sql.lead("OLI-1")
    assert row["dial_status"] == before and row["isReserved"] == 0
    assert (row["call_count"], row["first_attempt_at"], row["last_attempt_at"], row["last_dial_result"]) == (
        3, datetime(2026, 11, 19, 10), datetime(2026, 11, 20, 10), "BUSY")
    assert row["next_retry_at"] == NOW + timedelta(seconds=60)
    assert row["previous_dial_status"] is None


@pytest.mark.clock
def test_originate_failure_waits_release_retry_ms(app, live_lead, sql):
    live_lead()
    with app.app_context():
        get_db().run(dialstate.settle, "OLI-1", "originate_failed", NOW, tz=TZ, grace_minutes=10, release_retry_ms=1500)
    assert sql.lead("OLI-1")["next_retry_at"] == NOW + timedelta(seconds=2), "rounded up, never early"


@pytest.mark.parametrize("columns, expected", [
    ({"previous_dial_status": None, "call_count": 0, "callback_scheduled_at": None}, "Pending"),
    ({"previous_dial_status": None, "call_count": 2, "callback_scheduled_at": None}, "Not Connected"),
    ({"previous_dial_status": None, "call_count": 0, "callback_scheduled_at": "2026-11-21 09:00:00"}, "Callback"),
])
def test_originate_failure_infers_the_status_when_the_engine_did_not_record_it(settle, live_lead, sql, columns, expected):
    live_lead(**columns)
    settle("OLI-1", "originate_failed")
    assert sql.lead("OLI-1")["dial_status"] == expected


def test_settle_requires_a_live_lead(settle, new_lead, sql):
    new_lead("OLI-1")
    before = sql.lead("OLI-1")
    with pytest.raises(vocabulary.NotLive):
        settle("OLI-1", "answered")
    with pytest.raises(vocabulary.UnknownLead):
        settle("ghost", "answered")
    assert sql.lead("OLI-1") == before and sql("SELECT * FROM sales_call_attempts") == []


@pytest.mark.clock
def test_settle_starts_the_grace_window_of_the_agents_missed_activity(settle, live_lead, sql, open_missed_activity):
    live_lead()
    mine = open_missed_activity("OLI-1", agent_id=501)
    cleared = open_missed_activity("OLI-1", agent_id=501)
    sql("UPDATE sales_missed_activities SET cleared_at = '2026-11-21 09:00:00', cleared_by = 'callback' WHERE id = %s", cleared["id"])
    settle("OLI-1", "answered", agent_id=501)
    row = sql.one("SELECT ended_at, due_at, ended_at_utc, due_at_utc FROM sales_missed_activities WHERE id = %s",
                  mine["id"])
    assert row == {"ended_at": NOW, "due_at": NOW + timedelta(minutes=10),
                   "ended_at_utc": utc_naive(NOW), "due_at_utc": utc_naive(NOW) + timedelta(minutes=10)}
    assert sql.one("SELECT ended_at FROM sales_missed_activities WHERE id = %s", cleared["id"])["ended_at"] is None


@pytest.mark.parametrize("outcome", ["answered", "no_answer", "rejected", "abandoned", "originate_failed"])
def test_a_held_callback_wins_over_the_hangup_state(settle, live_lead, client, auth, sql, outcome):
    live_lead(call_count=19)
    held = client.post("/api/pending-callbacks", json={"oliId": "OLI-1", "scheduledAt": "2026-11-21 17:00"}, headers=auth)
    assert held.status_code == 202
    result = settle("OLI-1", outcome)
    row = sql.lead("OLI-1")
    assert row["dial_status"] == "Callback" and row["priority_id"] == 1
    assert row["callback_scheduled_at"] == datetime(2026, 11, 21, 17, 0)
    assert row["call_count"] == 0 and row["next_retry_at"] is None and row["isReserved"] == 0
    assert result["pending"]["id"] == held.get_json()["pending"]["id"]
    stored = sql.one("SELECT status, applied_at FROM sales_pending_actions")
    assert stored == {"status": "applied", "applied_at": NOW}
    assert len(sql("SELECT * FROM sales_call_attempts")) == 1


def test_a_held_disposition_is_applied_at_settle(settle, live_lead, client, auth, sql):
    live_lead()
    client.post("/api/pending-dispositions", json={"oliId": "OLI-1", "reason": "DND"}, headers=auth)
    settle("OLI-1", "answered")
    row = sql.lead("OLI-1")
    assert (row["dial_status"], row["disposeRemark"], row["priority_id"]) == ("Disposed", "CRM: DND", 3)


@pytest.mark.parametrize("first, second, expected", [
    (("pending-callbacks", {"scheduledAt": "2026-11-21 17:00"}), ("pending-dispositions", {"reason": "DND"}), "Disposed"),
    (("pending-dispositions", {"reason": "DND"}), ("pending-callbacks", {"scheduledAt": "2026-11-21 17:00"}), "Callback"),
])
def test_the_last_submitted_action_wins(settle, live_lead, client, auth, sql, first, second, expected):
    live_lead()
    for path, body in (first, second):
        assert client.post(f"/api/{path}", json={"oliId": "OLI-1", **body}, headers=auth).status_code == 202
    settle("OLI-1", "no_answer")
    assert sql.lead("OLI-1")["dial_status"] == expected
    assert sorted(r["status"] for r in sql("SELECT status FROM sales_pending_actions")) == ["applied", "superseded"]


def test_settle_is_one_transaction(app, live_lead, client, auth, sql, monkeypatch):
    before = live_lead()
    client.post("/api/pending-callbacks", json={"oliId": "OLI-1", "scheduledAt": "2026-11-21 17:00"}, headers=auth)

    def crash(*args, **kwargs):
        raise RuntimeError("engine host lost power")

    monkeypatch.setattr(dialstate, "apply_latest_pending", crash)
    with app.app_context(), pytest.raises(RuntimeError):
        get_db().run(dialstate.settle, "OLI-1", "answered", NOW, tz=TZ, grace_minutes=10, release_retry_ms=60000)
    assert sql.lead("OLI-1") == before
    assert sql("SELECT * FROM sales_call_attempts") == []
    assert sql.one("SELECT status FROM sales_pending_actions")["status"] == "pending"


# --- the CLI --------------------------------------------------------------------------------------

@pytest.mark.clock
def test_settle_command(database_url, live_lead, client, auth, sql):
    live_lead()
    client.post("/api/pending-callbacks", json={"oliId": "OLI-1", "scheduledAt": "2030-01-02 11:00"}, headers=auth)
    result = cli(database_url, "settle", "OLI-1", "no_answer", "--agent-id", "501", "--hangup-by", "customer")
    assert result.returncode == 0, result.stderr
    output = json.loads(result.stdout)
    assert output["lead"]["dial_status"] == "Callback" and output["lead"]["callback_scheduled_at"] == "2030-01-02 11:00:00"
    assert output["applied"]["action"] == "callback"
    assert sql.lead("OLI-1")["dial_status"] == "Callback"
    assert sql.one("SELECT agent_id, hangup_by FROM sales_call_attempts") == {"agent_id": 501, "hangup_by": "customer"}


@pytest.mark.long
def test_settle_command_explains_refusals(database_url, live_lead, new_lead, sql):
    before = live_lead("LIVE")
    unknown_agent = cli(database_url, "settle", "LIVE", "answered", "--agent-id", "999")
    assert unknown_agent.returncode == 1 and "no agent has id 999" in unknown_agent.stderr
    assert sql.lead("LIVE") == before and sql("SELECT * FROM sales_call_attempts") == []
    new_lead("OLI-1")
    not_live = cli(database_url, "settle", "OLI-1", "answered")
    assert not_live.returncode == 1 and "is not live" in not_live.stderr
    unknown = cli(database_url, "settle", "ghost", "answered")
    assert unknown.returncode == 1 and "no lead has oli_id 'ghost'" in unknown.stderr
    bad = cli(database_url, "settle", "OLI-1", "hung_up")
    assert bad.returncode == 2 and "answered" in bad.stderr


# --- the sweep ------------------------------------------------------------------------------------

@pytest.fixture
def held_callback(live_lead, client, auth, frozen_clock):
    """A callback held on a live lead, submitted at NOW."""
    live_lead()
    response = client.post("/api/pending-callbacks", json={"oliId": "OLI-1", "scheduledAt": "2026-11-21 17:00"}, headers=auth)
    assert response.status_code == 202
    return response.get_json()["pending"]


def engine_settles_without_telling_us(sql, oli_id="OLI-1"):
    sql("UPDATE sales_master SET dial_status = 'Not Connected', isReserved = 0, call_count = call_count + 1"
        " WHERE oli_id = %s", oli_id)


def sweep_at(app, now):
    with app.app_context():
        return crm_actions.sweep(get_db(), now, TZ)


@pytest.mark.clock
def test_sweep_applies_a_held_row_whose_lead_was_settled_elsewhere(app, held_callback, sql):
    engine_settles_without_telling_us(sql)
    assert sweep_at(app, NOW + timedelta(seconds=31)) == {"applied": 1, "live": 0, "failed": 0, "fell_back": 0}
    row = sql.lead("OLI-1")
    assert row["dial_status"] == "Callback" and row["callback_scheduled_at"] == datetime(2026, 11, 21, 17, 0)
    assert sql.one("SELECT status FROM sales_pending_actions")["status"] == "applied"


@pytest.mark.clock
def test_sweep_leaves_rows_younger_than_30_seconds(app, held_callback, sql):
    engine_settles_without_telling_us(sql)
    assert sweep_at(app, NOW + timedelta(seconds=29)) == {"applied": 0, "live": 0, "failed": 0, "fell_back": 0}
    assert sql.one("SELECT status FROM sales_pending_actions")["status"] == "pending"


def test_sweep_leaves_rows_whose_lead_is_still_live(app, held_callback, sql):
    assert sweep_at(app, NOW + timedelta(minutes=5)) == {"applied": 0, "live": 1, "failed": 0, "fell_back": 0}
    assert sql.one("SELECT status FROM sales_pending_actions")["status"] == "pending"


def test_sweep_fails_rows_whose_oli_id_no_longer_exists(app, held_callback, sql):
    sql("DELETE FROM sales_master WHERE oli_id = 'OLI-1'")
    assert sweep_at(app, NOW + timedelta(minutes=1)) == {"applied": 0, "live": 0, "failed": 1, "fell_back": 0}
    assert sql.one("SELECT status FROM sales_pending_actions")["status"] == "failed"


@pytest.mark.clock
def test_sweep_command(database_url, held_callback, sql, frozen_clock):
    engine_settles_without_telling_us(sql)
    sql("UPDATE sales_pending_actions SET created_at = created_at - INTERVAL 1 MINUTE")
    result = cli(database_url, "sweep")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["applied"] == 1
    assert sql.lead("OLI-1")["dial_status"] == "Callback"


@pytest.mark.clock
def test_the_sweep_job_runs_once_per_tick_across_processes(app, database_url):
    from conftest import make_app

    other = make_app(database_url)  # a second worker: its own pool
    runs = []
    barrier = threading.Barrier(2)

    def work():
        runs.append(threading.current_thread().name)
        return "done"

    def tick(application):
        with application.app_context():
            barrier.wait()
            jobs.run_once_per_tick(get_db(), "sweep", 60, NOW, work)

    threads = [threading.Thread(target=tick, args=(a,), name=n) for a, n in ((app, "a"), (other, "b"))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(runs) == 1
    with other.app_context():
        db = get_db()
        assert jobs.run_once_per_tick(db, "sweep", 60, NOW + timedelta(seconds=30), work) is None
        assert jobs.run_once_per_tick(db, "sweep", 60, NOW + timedelta(seconds=55), work) == "done"
    assert len(runs) == 2


@pytest.mark.clock
def test_the_sweep_tick_records_its_run(app, held_callback, sql, frozen_clock):
    engine_settles_without_telling_us(sql)
    frozen_clock(NOW + timedelta(minutes=1))
    assert jobs.sweep_tick(app) == {"released": 0, "applied": 1, "live": 0, "failed": 0, "fell_back": 0}
    run = sql.one("SELECT * FROM dialerapi_job_runs WHERE name = 'sweep'")
    assert run["last_started_at"] == NOW + timedelta(minutes=1) and "applied" in run["last_result"]
    assert jobs.sweep_tick(app) is None


@pytest.mark.clock
def test_the_scheduler_runs_the_jobs_under_gunicorn(database_url, held_callback, sql, tmp_path):
    import time

    from conftest import start_gunicorn

    engine_settles_without_telling_us(sql)
    sql("UPDATE sales_pending_actions SET created_at = %s", NOW - timedelta(minutes=2))
    server = start_gunicorn(database_url, tmp_path / "gunicorn.log", workers=2, now=NOW, JOBS_ENABLED="true")
    try:
        deadline = time.monotonic() + 20
        while sql.one("SELECT status FROM sales_pending_actions")["status"] != "applied":
            assert time.monotonic() < deadline, "the sweep did not run under gunicorn:\n" + server.log.read_text()
            time.sleep(0.2)
        assert sql.lead("OLI-1")["dial_status"] == "Callback"
        assert requests.get(server.url("/healthz"), timeout=2).json() == {"ok": True, "ami": False, "db": True}
        assert len(sql("SELECT * FROM dialerapi_job_runs WHERE name = 'sweep'")) == 1
    finally:
        server.stop()
