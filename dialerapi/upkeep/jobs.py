"""Background jobs (APScheduler), started with the app under gunicorn when JOBS_ENABLED.

The scheduler is created once here and bound to the app by `init_app`. Jobs that must run in one
process per tick across workers and hosts claim the tick in a row of dialerapi_job_runs (decisions.md
D6; a row, not GET_LOCK, whose lock is local to one Galera node); per-process jobs, such
as the health checks that feed /healthz, run in every worker.
"""

import json
import logging
import os
import socket
import time
from datetime import datetime, timedelta, timezone

import pymysql
from apscheduler.schedulers.background import BackgroundScheduler

from dialerapi.plumbing import clock
from dialerapi.plumbing.db import Conflict, get_db, queries
from dialerapi.rules.agents import roster, state_history
from dialerapi.rules.caller_ids import pools as caller_id_pools
from dialerapi.rules.compliance import abandons, claim_checks, contact_caps
from dialerapi.rules.config import dialer as dialer_config
from dialerapi.rules.dialing import crm_actions, engine
from dialerapi.rules.events import lead_events
from dialerapi.rules.events import webhooks as webhook_rules
from dialerapi.upkeep import health, webhooks
from dialerapi.upkeep.observability import RESERVATIONS_RELEASED, SWEEPS

log = logging.getLogger(__name__)

scheduler = BackgroundScheduler(timezone="UTC", job_defaults={"coalesce": True, "max_instances": 1})

SWEEP_SECONDS = 60
BLOCKING_SECONDS = 10
# Leads no push worked out the phone facts of: a batch every tick until none is left.
PHONE_FACTS_SECONDS = 10
# The leads each rule holds, per campaign: counted this often for /engine/floor and the board.
HELD_COUNTS_SECONDS = 60
# A new day's caller-ID ranks are set this soon after midnight; the claims before read those numbers
# with a sort (rules.caller_ids.pools.start_day).
CALLER_ID_DAY_SECONDS = 60
PRUNE_SECONDS = 3600
# The agent state history is rolled up per agent and day this often, today's too: a
# report or a board reads the roll-ups and at most this long (plus state_history.LATE_COMMIT) of history.
ROLL_UP_SECONDS = 600
# Outbox rows only need to outlive the 0.5 s tailing interval; an hour leaves room to look at them.
OUTBOX_KEEP = timedelta(hours=1)
# The first sweep comes soon after start, so rows held across a restart are not left waiting.
FIRST_SWEEP_SECONDS = 5
# A run counts for the whole tick: another process whose tick comes within this share of the
# interval after it skips, so workers and hosts started at different moments never double up.
TICK_SHARE = 0.9
# Another host's start may lie this far in this host's future and still be this tick's: hosts'
# clocks differ a little, and the row keeps whole seconds (a host a second behind ran a
# job again a second after another host had).
CLOCK_SKEW_SECONDS = 2
# A run that outlasts its interval keeps others off for up to this many intervals; a crashed run's
# claim lapses after as long.
LEASE_INTERVALS = 2


def run_once_per_tick(db, name, interval_seconds, now, work):
    """Run `work()` unless another process, on any host or node, claimed this tick of the job.

    The tick is claimed in one transaction on the job's dialerapi_job_runs row (`claim_tick`); the
    claim lasts while the work runs (a lease of two intervals, cleared when it ends), and the start,
    end and result are recorded there (the end only while the row is still this process's: a run
    that outlived its lease and was overtaken leaves the new claim alone). `now` is wall-clock (DB_TIMEZONE). Returns work()'s result,
    or None when skipped; an error of work() clears the lease and propagates.
    """
    by = run_by()
    if not db.run(claim_tick, name, interval_seconds, now, by):
        return None
    started = time.monotonic()
    try:
        result = work()
    except BaseException:
        db.run(queries.release_job_run, name=name, run_by=by)
        raise
    finished_at = now + timedelta(seconds=round(time.monotonic() - started))
    db.run(queries.end_job_run, name=name, run_by=by, finished_at=finished_at,
           result=json.dumps(result, default=str)[:255])
    return result


def run_by():
    """This process as dialerapi_job_runs.run_by: "hostname:pid" (after gunicorn's fork, the worker's)."""
    return f"{socket.gethostname()}:{os.getpid()}"[:255]


def claim_tick(conn, name, interval_seconds, now, run_by):
    """Claim this tick of job `name` for `run_by`; True when claimed, False when taken.

    Taken: the last run started less than 0.9 interval before `now` (or up to CLOCK_SKEW_SECONDS
    after it: another host's clock a little ahead), or a run's lease is still on. A last start
    later than that, or a lease ending more than two intervals after `now` (the wall clock went back
    an hour on a fall-back night), does not stop this one. Two claimers at once: on one node the second
    waits on the row lock and then sees the first's start; on Galera the second loses certification
    at COMMIT (1213) and `Database.run` runs it again, when it sees the same. Raises Conflict when a
    concurrent first run inserted the row, so the claim runs again and reads it.
    """
    lease_until = now + timedelta(seconds=interval_seconds * LEASE_INTERVALS)
    row = queries.lock_job_run(conn, name=name)
    if row is None:
        try:
            queries.insert_job_run(conn, name=name, started_at=now, lease_until=lease_until, run_by=run_by)
        except pymysql.err.IntegrityError:
            raise Conflict(f"job {name} inserted by another process") from None
        return True
    since_start = (now - row["last_started_at"]).total_seconds()
    if -CLOCK_SKEW_SECONDS <= since_start < interval_seconds * TICK_SHARE:
        return False
    if row["lease_until"] is not None and \
            0 < (row["lease_until"] - now).total_seconds() <= interval_seconds * LEASE_INTERVALS:
        return False
    queries.claim_job_run(conn, name=name, started_at=now, lease_until=lease_until, run_by=run_by)
    return True


def sweep_tick(app):
    """The sweep job (decisions.md D6): at most one process per tick applies held CRM actions and
    releases the reservations whose lease ran out (counted in dialerapi_reservations_released_total)."""
    with app.app_context():
        db = get_db()
        tz = app.config["DB_TIMEZONE"]
        now = clock.now(tz)
        result = run_once_per_tick(db, "sweep", SWEEP_SECONDS, now, lambda: crm_actions.sweep(db, now, tz, app.config))
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
                                 lambda: db.run(roster.refresh_blocking, now, tz))


def phone_facts_tick(app):
    """Work out the phone facts of a batch of leads written before migration 0012 or by an engine's
    own SQL (claim_checks.work_out_leads), in one process per tick; returns how many were read."""
    with app.app_context():
        db = get_db()
        now = clock.now(app.config["DB_TIMEZONE"])

        def work_out(conn):
            return claim_checks.work_out_leads(conn, dialer_config.load_config(conn))

        return run_once_per_tick(db, "phone_facts", PHONE_FACTS_SECONDS, now, lambda: db.run(work_out))


def held_counts_tick(app):
    """Count the leads each rule holds back now, per form_type and reason (claim_checks.count_held),
    in one process per tick; returns how many are held."""
    with app.app_context():
        db = get_db()
        tz = app.config["DB_TIMEZONE"]
        now = clock.now(tz)

        def count(conn):
            held = claim_checks.count_held(conn, now, tz, dialer_config.load_config(conn))
            return sum(sum(counts.values()) for counts in held.values())

        return run_once_per_tick(db, "held_counts", HELD_COUNTS_SECONDS, now, lambda: db.run(count))


def caller_id_day_tick(app):
    """Rank the caller-ID pools' rows not presented yet today as none today (pools.start_day), in
    one process per tick; returns how many rows it ranked (all of them once a day, else none)."""
    with app.app_context():
        db = get_db()
        now = clock.now(app.config["DB_TIMEZONE"])
        return run_once_per_tick(db, "caller_id_day", CALLER_ID_DAY_SECONDS, now,
                                 lambda: db.run(caller_id_pools.start_day, now))


def prune_tick(app):
    """Delete outbox rows older than an hour, engine replies older than a day, abandon counts past
    their use (abandons.prune), contact cap numbers with no attempt in 31 days (contact_caps.prune),
    lead events, webhook deliveries and their log older than LEAD_EVENTS_RETENTION_DAYS, and agent
    state history older than AGENT_STATE_RETENTION_DAYS (in batches); returns how many went."""
    with app.app_context():
        db = get_db()
        tz = app.config["DB_TIMEZONE"]
        now = clock.now(tz)

        def prune(conn):
            return {"outbox": queries.prune_outbox(conn, before=clock.after(now, -OUTBOX_KEEP, tz)),
                    "engine_replies": engine.prune_replies(conn, now, tz),
                    "socket_hosts": queries.prune_socket_hosts(conn, before=clock.after(now, -OUTBOX_KEEP, tz)),
                    "abandon_counts": abandons.prune(conn, now),
                    "contact_numbers": contact_caps.prune(conn, now, tz)}

        def prune_all():
            pruned = db.run(prune)
            cutoff = webhooks.retention_cutoff(app)
            for name, work in (("lead_events", lead_events.prune), ("webhook_deliveries", webhook_rules.prune_deliveries),
                               ("webhook_attempts", webhook_rules.prune_attempts)):
                pruned[name] = in_batches(db, work, cutoff)
            pruned["agent_states"] = in_batches(db, state_history.prune, clock.to_utc(now, tz) - timedelta(
                days=app.config["AGENT_STATE_RETENTION_DAYS"]))
            return pruned

        return run_once_per_tick(db, "prune", PRUNE_SECONDS, now, prune_all)


def roll_up_tick(app):
    """Bring the roll-up of today and of each day not rolled up to its end up to date
    (state_history.roll_up), one transaction per day, once per tick across workers and
    hosts; returns {day: rows written}."""
    with app.app_context():
        db = get_db()
        tz = app.config["DB_TIMEZONE"]
        now = clock.now(tz)

        def roll_up_all():
            days = db.run(state_history.days_to_roll_up, now, tz, app.config["AGENT_STATE_RETENTION_DAYS"])
            return {day.isoformat(): db.run(state_history.roll_up, day, now, tz) for day in days}

        return run_once_per_tick(db, "agent_days", ROLL_UP_SECONDS, now, roll_up_all)


def in_batches(db, work, *args):
    """Run `work(conn, *args)` (returns how many rows it deleted, at most lead_events.PRUNE_BATCH),
    one transaction each, until a batch deletes fewer; returns the total. Short transactions keep
    the deletes of a busy week from holding locks for long."""
    total = 0
    while True:
        deleted = db.run(work, *args)
        total += deleted
        if deleted < lead_events.PRUNE_BATCH:
            return total


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
        phone_facts_tick, "interval", seconds=PHONE_FACTS_SECONDS, args=[app], id="phone_facts",
        replace_existing=True,
    )
    scheduler.add_job(
        held_counts_tick, "interval", seconds=HELD_COUNTS_SECONDS, args=[app], id="held_counts",
        replace_existing=True, next_run_time=datetime.now(timezone.utc) + timedelta(seconds=FIRST_SWEEP_SECONDS),
    )
    scheduler.add_job(
        caller_id_day_tick, "interval", seconds=CALLER_ID_DAY_SECONDS, args=[app], id="caller_id_day",
        replace_existing=True, next_run_time=datetime.now(timezone.utc) + timedelta(seconds=FIRST_SWEEP_SECONDS),
    )
    scheduler.add_job(
        roll_up_tick, "interval", seconds=ROLL_UP_SECONDS, args=[app], id="agent_days", replace_existing=True,
    )
    scheduler.add_job(
        prune_tick, "interval", seconds=PRUNE_SECONDS, args=[app], id="prune", replace_existing=True,
    )
    if not scheduler.running:
        scheduler.start()
