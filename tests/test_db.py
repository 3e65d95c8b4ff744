"""db.Database.run: one transaction per call, retried on deadlock (1213), lock-wait timeout (1205)
and Conflict, a bounded number of times (issue: concurrent pushes never fail on deadlocks)."""

import time
from datetime import datetime

import pymysql
import pytest

from dialerapi import jobs
from dialerapi.db import MAX_ATTEMPTS, Conflict, Database


@pytest.fixture
def db(database_url):
    database = Database(database_url, pool_size=2)
    yield database
    database.close()


def insert_priority(conn, priority_id):
    with conn.cursor() as cur:
        cur.execute("INSERT INTO sales_priorities (id, name) VALUES (%s, 'test')", (priority_id,))


@pytest.mark.parametrize("failure", [
    pymysql.err.OperationalError(1213, "Deadlock found when trying to get lock; try restarting transaction"),
    pymysql.err.OperationalError(1205, "Lock wait timeout exceeded; try restarting transaction"),
    Conflict("a concurrent push inserted it first"),
])
def test_retried_failures_roll_back_and_run_again(db, sql, failure):
    attempts = []

    def work(conn):
        attempts.append(1)
        insert_priority(conn, 40 + len(attempts))
        if len(attempts) < 3:
            raise failure
        return "done"

    assert db.run(work) == "done"
    assert len(attempts) == 3
    assert [r["id"] for r in sql("SELECT id FROM sales_priorities WHERE id > 40")] == [43]


def test_gives_up_after_the_last_attempt(db, sql):
    attempts = []

    def work(conn):
        attempts.append(1)
        insert_priority(conn, 50 + len(attempts))
        raise pymysql.err.OperationalError(1213, "Deadlock")

    with pytest.raises(pymysql.err.OperationalError):
        db.run(work)
    assert len(attempts) == MAX_ATTEMPTS
    assert sql("SELECT id FROM sales_priorities WHERE id > 50") == []


def test_other_errors_are_not_retried(db, sql):
    attempts = []

    def work(conn):
        attempts.append(1)
        insert_priority(conn, 60)
        insert_priority(conn, 60)

    with pytest.raises(pymysql.err.IntegrityError):
        db.run(work)
    assert len(attempts) == 1 and sql("SELECT id FROM sales_priorities WHERE id = 60") == []


def test_a_real_deadlock_between_two_transactions_is_retried(db, database_url, sql):
    import threading

    sql("INSERT INTO sales_priorities (id, name) VALUES (71, 'a'), (72, 'b')")
    barrier = threading.Barrier(2)
    attempts = {"first": 0, "second": 0}

    def lock_both(name, first_id, second_id):
        def work(conn):
            attempts[name] += 1
            with conn.cursor() as cur:
                cur.execute("UPDATE sales_priorities SET name = %s WHERE id = %s", (name, first_id))
                if attempts[name] == 1:
                    barrier.wait(timeout=10)
                cur.execute("UPDATE sales_priorities SET name = %s WHERE id = %s", (name, second_id))
        return work

    results = []
    threads = [
        threading.Thread(target=lambda: results.append(db.run(lock_both("first", 71, 72)))),
        threading.Thread(target=lambda: results.append(db.run(lock_both("second", 72, 71)))),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert len(results) == 2, "both transactions finished"
    assert attempts["first"] + attempts["second"] == 3, "exactly one was chosen as the deadlock victim and retried"
    names = {r["name"] for r in sql("SELECT name FROM sales_priorities WHERE id IN (71, 72)")}
    assert len(names) == 1, "each transaction wrote both rows or nothing"


def connection_id(conn):
    with conn.cursor() as cur:
        cur.execute("SELECT CONNECTION_ID() AS id")
        return cur.fetchone()["id"]


def kill(sql, thread_id):
    """Close a connection server-side, as a database restart or wait_timeout does, and wait until it is gone."""
    sql("KILL CONNECTION %s", thread_id)
    deadline = time.monotonic() + 10
    while sql("SELECT id FROM information_schema.processlist WHERE id = %s", thread_id):
        assert time.monotonic() < deadline, "the killed connection stayed"
        time.sleep(0.02)


def test_a_pooled_connection_the_server_dropped_is_reopened_before_the_work_runs(db, sql):
    idle = db.run(connection_id)
    kill(sql, idle)
    attempts = []

    def work(conn):
        attempts.append(1)
        insert_priority(conn, 80)
        return connection_id(conn)

    assert db.run(work) != idle, "a new connection did the work"
    assert len(attempts) == 1, "the work ran once: the dead connection failed before it began"
    assert [r["id"] for r in sql("SELECT id FROM sales_priorities WHERE id = 80")] == [80]


def test_a_connection_lost_during_the_work_is_not_run_again(db, sql):
    attempts = []

    def work(conn):
        attempts.append(1)
        insert_priority(conn, 81)
        kill(sql, connection_id(conn))
        insert_priority(conn, 82)

    with pytest.raises((pymysql.err.OperationalError, pymysql.err.InterfaceError)):
        db.run(work)
    assert len(attempts) == 1, "half-done work is never replayed on another connection"
    assert sql("SELECT id FROM sales_priorities WHERE id IN (81, 82)") == []
    assert db.run(connection_id), "the pool serves again"


def test_a_job_on_a_connection_the_server_dropped_runs_on_a_reopened_one(db, sql):
    # jobs.run_once_per_tick holds its named lock outside a transaction, where DBUtils re-runs a
    # statement that failed on a dead connection on a reopened one.
    tick = datetime(2026, 11, 21, 10, 0, 0)
    kill(sql, db.run(connection_id))
    assert jobs.run_once_per_tick(db, "probe", 60, tick, lambda: "done") == "done"
    assert sql.one("SELECT last_started_at FROM dialerapi_job_runs WHERE name = 'probe'")["last_started_at"] == tick
    assert sql.one("SELECT IS_FREE_LOCK('dialerapi.probe') AS free")["free"] == 1, "the job's lock was released"
