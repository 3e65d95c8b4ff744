"""Background jobs (APScheduler), started with the app under gunicorn when JOBS_ENABLED.

The scheduler is created once here and bound to the app by `init_app`. Jobs that must run in one
process per tick across workers and hosts take a MySQL GET_LOCK (decisions.md D6); per-process
jobs, such as the health checks that feed /healthz, run in every worker.
"""

import json
import logging
import time
from datetime import datetime, timedelta, timezone

from apscheduler.schedulers.background import BackgroundScheduler

from . import actions, agents, clock, engine, health
from .db import get_db, queries
from .observability import RESERVATIONS_RELEASED, SWEEPS

log = logging.getLogger(__name__)

scheduler = BackgroundScheduler(timezone="UTC", job_defaults={"coalesce": True, "max_instances": 1})

SWEEP_SECONDS = 60
BLOCKING_SECONDS = 10
PRUNE_SECONDS = 3600
# Outbox rows only need to outlive the 0.5 s tailing interval; an hour leaves room to look at them.
OUTBOX_KEEP = timedelta(hours=1)
# The first sweep comes soon after start, so rows held across a restart are not left waiting.
FIRST_SWEEP_SECONDS = 5
# A run counts for the whole tick: another process whose tick comes within this share of the
# interval after it skips, so workers and hosts started at different moments never double up.
TICK_SHARE = 0.9


def run_once_per_tick(db, name, interval_seconds, now, work):
    """Run `work()` unless another process holds the job or ran it less than 0.9 interval ago.

    Holds the MySQL named lock `dialerapi.<name>` (GET_LOCK, no wait) for the run, and records the
    start, end and result in dialerapi_job_runs. `now` is wall-clock (DB_TIMEZONE); a last run
    later than `now` (the wall clock went back an hour on a fall-back night) does not stop this
    one. Returns work()'s result, or None when skipped.
    """
    conn = db.pool.connection()
    lock_name = f"dialerapi.{name}"
    try:
        if not queries.try_job_lock(conn, name=lock_name):
            return None
        try:
            last = queries.job_last_started(conn, name=name)
            if last is not None and 0 <= (now - last).total_seconds() < interval_seconds * TICK_SHARE:
                conn.rollback()
                return None
            queries.record_job_start(conn, name=name, started_at=now)
            conn.commit()
            started = time.monotonic()
            result = work()
            finished_at = now + timedelta(seconds=round(time.monotonic() - started))
            queries.record_job_end(conn, name=name, finished_at=finished_at, result=json.dumps(result, default=str)[:255])
            conn.commit()
            return result
        finally:
            queries.release_job_lock(conn, name=lock_name)
    finally:
        conn.close()


def sweep_tick(app):
    """The sweep job (decisions.md D6): at most one process per tick applies held CRM actions and
    releases the reservations whose lease ran out (counted in dialerapi_reservations_released_total)."""
    with app.app_context():
        db = get_db()
        tz = app.config["DB_TIMEZONE"]
        now = clock.now(tz)
        result = run_once_per_tick(db, "sweep", SWEEP_SECONDS, now, lambda: actions.sweep(db, now, tz, app.config))
        if result is not None:
            SWEEPS.inc()
            RESERVATIONS_RELEASED.inc(result["released"])
        if result and (result["applied"] or result["failed"] or result["released"]):
            log.info("sweep: %s", result)
        return result


def blocking_tick(app):
    """Keep sales_agents.outbound_blocked equal to "has an uncleared overdue activity" (D7), at least every 15 s."""
    with app.app_context():
        db = get_db()
        tz = app.config["DB_TIMEZONE"]
        now = clock.now(tz)
        return run_once_per_tick(db, "blocking", BLOCKING_SECONDS, now,
                                 lambda: db.run(agents.refresh_blocking, now, tz))


def prune_tick(app):
    """Delete outbox rows older than an hour and engine replies older than a day; returns how many went."""
    with app.app_context():
        db = get_db()
        tz = app.config["DB_TIMEZONE"]
        now = clock.now(tz)

        def prune(conn):
            return {"outbox": queries.prune_outbox(conn, before=clock.after(now, -OUTBOX_KEEP, tz)),
                    "engine_replies": engine.prune_replies(conn, now, tz)}

        return run_once_per_tick(db, "prune", PRUNE_SECONDS, now, lambda: db.run(prune))


def init_app(app):
    """Add this app's jobs and start the scheduler, unless JOBS_ENABLED is false (CLI, tests)."""
    if not app.config["JOBS_ENABLED"]:
        return
    scheduler.add_job(
        health.check_database, "interval", seconds=health.DB_CHECK_SECONDS, args=[app],
        id="health.database", replace_existing=True, next_run_time=datetime.now(timezone.utc),
    )
    scheduler.add_job(
        health.check_ami, "interval", seconds=health.AMI_CHECK_SECONDS, args=[app],
        id="health.ami", replace_existing=True, next_run_time=datetime.now(timezone.utc),
    )
    scheduler.add_job(
        sweep_tick, "interval", seconds=SWEEP_SECONDS, args=[app], id="sweep", replace_existing=True,
        next_run_time=datetime.now(timezone.utc) + timedelta(seconds=FIRST_SWEEP_SECONDS),
    )
    scheduler.add_job(
        blocking_tick, "interval", seconds=BLOCKING_SECONDS, args=[app], id="blocking", replace_existing=True,
    )
    scheduler.add_job(
        prune_tick, "interval", seconds=PRUNE_SECONDS, args=[app], id="prune", replace_existing=True,
    )
    if not scheduler.running:
        scheduler.start()
