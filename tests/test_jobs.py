"""Scheduled jobs run once per tick across processes and hosts (decisions.md D6, issue #19): the tick
is claimed by committing an update of the job's dialerapi_job_runs row, which works across Galera
nodes where GET_LOCK did not (tests/galera repeats the race through two nodes)."""

import threading
from datetime import datetime, timedelta

import pytest

from dialerapi.upkeep import jobs
from dialerapi.plumbing.db import Database

TICK = datetime(2026, 11, 23, 10, 0, 0)  # wall-clock DB_TIMEZONE, as jobs get it from clock.now


def race_ticks(databases, name, ticks, interval=60):
    """For each tick, every database (a host) calls run_once_per_tick at once; returns the runs per tick."""
    runs = {tick: [] for tick in ticks}
    for tick in ticks:
        barrier = threading.Barrier(len(databases))
        errors = []

        def host(index, db, tick=tick):
            try:
                barrier.wait(timeout=30)
                jobs.run_once_per_tick(db, name, interval, tick, lambda: runs[tick].append(index))
            except Exception as exc:  # counted below: a host that failed is a wrong answer
                errors.append(exc)

        threads = [threading.Thread(target=host, args=(i, db)) for i, db in enumerate(databases)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        assert errors == []
    return runs


@pytest.fixture
def hosts(database_url):
    databases = [Database(database_url, pool_size=1) for _ in range(16)]
    yield databases
    for db in databases:
        db.close()


@pytest.fixture
def db(database_url):
    database = Database(database_url, pool_size=2)
    yield database
    database.close()


def test_sixteen_hosts_at_once_run_each_tick_once(hosts, sql):
    ticks = [TICK + timedelta(seconds=60 * i) for i in range(20)]
    runs = race_ticks(hosts, "sweep", ticks)
    assert {tick: len(ran) for tick, ran in runs.items()} == {tick: 1 for tick in ticks}
    row = sql.one("SELECT last_started_at, lease_until, run_by FROM dialerapi_job_runs WHERE name = 'sweep'")
    assert row["last_started_at"] == ticks[-1] and row["lease_until"] is None and row["run_by"] == jobs.run_by()


def test_a_run_that_outlasts_its_interval_keeps_the_next_tick_off(db, sql):
    inner = []

    def long_run():
        # The next tick comes while this run is still on: its claim is refused by the lease.
        inner.append(jobs.run_once_per_tick(db, "prune", 60, TICK + timedelta(seconds=60), lambda: "second"))
        return "first"

    assert jobs.run_once_per_tick(db, "prune", 60, TICK, long_run) == "first"
    assert inner == [None]
    assert jobs.run_once_per_tick(db, "prune", 60, TICK + timedelta(seconds=60), lambda: "next") == "next"


def test_a_start_a_second_ahead_on_another_hosts_clock_keeps_this_tick_off(db, sql):
    """Issue #63: a host whose clock is a second behind saw another host's start in its future and ran
    the job again; only a start more than CLOCK_SKEW_SECONDS ahead (a fall-back night) lets it run."""
    ahead = TICK + timedelta(seconds=1)
    assert jobs.run_once_per_tick(db, "blocking", 10, ahead, lambda: "ran") == "ran"
    assert jobs.run_once_per_tick(db, "blocking", 10, TICK, lambda: "again") is None
    assert jobs.run_once_per_tick(db, "blocking", 10, ahead - timedelta(seconds=jobs.CLOCK_SKEW_SECONDS + 1),
                                  lambda: "clock went back") == "clock went back"


def test_a_crashed_run_lapses_after_two_intervals(db, sql):
    assert db.run(jobs.claim_tick, "blocking", 10, TICK, "crashed-host:1") is True  # never ended
    assert jobs.run_once_per_tick(db, "blocking", 10, TICK + timedelta(seconds=15), lambda: "ran") is None
    assert jobs.run_once_per_tick(db, "blocking", 10, TICK + timedelta(seconds=21), lambda: "ran") == "ran"


def test_a_run_overtaken_after_its_lease_leaves_the_new_claim_alone(db, sql):
    def outlived():
        # Two intervals later another host claims the tick; this run then ends.
        assert db.run(jobs.claim_tick, "blocking", 10, TICK + timedelta(seconds=21), "other-host:2") is True
        return "late"

    assert jobs.run_once_per_tick(db, "blocking", 10, TICK, outlived) == "late"
    row = sql.one("SELECT last_finished_at, lease_until, run_by FROM dialerapi_job_runs WHERE name = 'blocking'")
    assert row == {"last_finished_at": None, "lease_until": TICK + timedelta(seconds=41), "run_by": "other-host:2"}


def test_an_error_in_the_work_clears_the_lease(db, sql):
    def fails():
        raise RuntimeError("the sweep failed")

    with pytest.raises(RuntimeError):
        jobs.run_once_per_tick(db, "sweep", 60, TICK, fails)
    assert sql.one("SELECT lease_until FROM dialerapi_job_runs WHERE name = 'sweep'")["lease_until"] is None
    assert jobs.run_once_per_tick(db, "sweep", 60, TICK + timedelta(seconds=60), lambda: "ran") == "ran"
