"""A floor simulator: a campaign played on a virtual clock against the real rules, in its own schema.

`dialerapi simulate` (cli.py) loads a Scenario (scenario.py), and `replicate` plays it K times
(seeds seed .. seed+K-1). Each run creates its own schema next to the service's database
(sandbox.py), pushes its leads through POST /api/leads, adds its agents, plays the floor
(floor.py) with a Python or HTTP engine (engines.py), and drops the schema, so runs never see each
other and the live floor never sees them. report.py turns runs into figures with 95% intervals;
theory.py is what the tests hold them to. docs/simulator.md "The floor simulator" defines every input and
figure.
"""

import logging
import multiprocessing
import random
import secrets
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import replace

from dialerapi import create_app
from dialerapi.plumbing import clock
from dialerapi.plumbing.db import queries
from dialerapi.plumbing.limits import limiter
from dialerapi.rules.compliance import abandons, contact_caps
from dialerapi.rules.config import dialer as dialer_config
from dialerapi.rules.leads import transitions
from dialerapi.simulate import caller_ids as sim_caller_ids
from dialerapi.simulate.floor import Floor
from dialerapi.simulate.report import combine, run_result
from dialerapi.simulate.sandbox import SandboxError, sandbox
from dialerapi.simulate.scenario import Scenario, ScenarioSchema, load_scenario, read_file
from dialerapi.upkeep.observability import access_log as ACCESS_LOG

__all__ = ["Scenario", "ScenarioSchema", "SandboxError", "load_scenario", "read_file", "replicate", "run"]


def run(database_url, scenario, *, keep=False):
    """Play one run of `scenario` in a new schema beside `database_url`'s; return its figures
    (report.run_result). Raises
    SandboxError when the schema cannot be created, RuntimeError when the API refuses the floor."""
    # flask-limiter's switch is its one extension object's, not the app's: the run's app turns it
    # off for every app of the process, so the run gives it back as it found it.
    limits_enabled = limiter.enabled
    try:
        return _run(database_url, scenario, keep)
    finally:
        limiter.enabled = limits_enabled


def _run(database_url, scenario, keep):
    with sandbox(database_url, scenario.to_json()["dialer"], keep) as url:
        # Rate limits count real seconds, which a compressed day would trip with ordinary CRM
        # traffic; no request leaves the process, so the keys are the run's own.
        app = create_app({"DATABASE_URL": url, "JOBS_ENABLED": False, "RATELIMIT_ENABLED": False,
                          "DB_SEND_BEGIN": False,
                          "WS_SECRET": secrets.token_urlsafe(24), "ENGINE_SECRET": secrets.token_urlsafe(24),
                          "MISSED_ACTIVITY_GRACE_MINUTES": str(scenario.grace_minutes), "LOG_LEVEL": "WARNING"})
        floor = Floor(app, scenario, random.Random(scenario.seed))
        previous = clock.set_utc_source(lambda: floor.utc)
        access_level = ACCESS_LOG.level
        ACCESS_LOG.setLevel(logging.WARNING)  # a line per simulated request would bury the summary
        try:
            floor.play()
            return run_result(floor, floor.db.run(_database_counts, floor.now, scenario.start_date))
        finally:
            clock.set_utc_source(previous)
            ACCESS_LOG.setLevel(access_level)
            floor.db.close()


def _database_counts(conn, now, first_day):
    state = queries.sim_hour_state(conn, now=now)
    # The service's own abandon figures per day, per form_type and for the floor ("*"): what it
    # counted at settle, the law's count.
    service_days = abandons.report(conn, first_day, now.date(), dialer_config.load_config(conn))["days"]
    return {
        "final_status": {row["status"]: int(row["n"]) for row in
                         queries.sim_status_counts(conn, max_tries_remark=transitions.MAX_TRIES_REMARK)},
        "tries_per_lead": {int(row["tries"]): int(row["n"]) for row in queries.sim_call_counts(conn)},
        "calls_per_lead": {int(row["calls"]): int(row["n"]) for row in queries.sim_calls_per_lead(conn)},
        "dialed": int(state["dialed"]), "leads": int(state["leads"]),
        "abandon_days": service_days,
        # The times a claim held a lead for a contact cap.
        "held_by_caps": sum(row["leads_held"] for row in contact_caps.report(conn, first_day, now.date())),
        "calls_by_area_code": sim_caller_ids.calls_by_area_code(conn),
    }


def replicate(database_url, scenario, *, keep=False, done=None, jobs=1):
    """`scenario.replications` runs of `scenario`, seeds scenario.seed, +1, ...; returns
    report.combine's report. `done(run)` is called with each run's figures as it ends.

    A scenario with contact caps or retries per outcome, calling rules or caller-ID pools, is
    played twice per seed, with them and without, and the report's "caps_cost" says what they
    cost: calls, leads contacted and the contact rate each way, and the calls they prevented; with
    pools, "caller_ids" (simulate.caller_ids.report).

    `jobs`: how many runs play at once, each in a process of its own (and, as always, a
    schema of its own). Each run depends on its seed alone, so the report is the one `jobs=1` gives
    for the same seeds, whatever order the runs end in."""
    seeded = [replace(scenario, seed=scenario.seed + k) for k in range(scenario.replications)]
    plays = seeded + ([replace(play, contact_caps=[], retries={}, calling_rules=[], caller_ids={}) for play in seeded]
                      if scenario.contact_caps or scenario.retries or scenario.calling_rules or scenario.caller_ids
                      else [])
    if min(jobs, len(plays)) <= 1:
        results = []
        for play in plays:
            results.append(run(database_url, play, keep=keep))
            if done and len(results) <= len(seeded):
                done(results[-1])
    else:
        results = _in_processes(database_url, plays, keep, jobs, done, len(seeded))
    return combine(scenario, results[:len(seeded)], results[len(seeded):])


def _in_processes(database_url, plays, keep, jobs, done, reported):
    """run() of each of `plays` in up to `jobs` processes; their results in the order of `plays`.
    `done` is told of each of the first `reported` as it ends. Spawned, not forked: a child starts
    with no connection, thread or clock of this process."""
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=min(jobs, len(plays)), mp_context=context) as pool:
        futures = {pool.submit(run, database_url, play, keep=keep): index for index, play in enumerate(plays)}
        results = [None] * len(plays)
        for future in as_completed(futures):
            index = futures[future]
            results[index] = future.result()
            if done and index < reported:
                done(results[index])
    return results
