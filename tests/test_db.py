"""db.Database.run: one transaction per call, retried on deadlock or certification failure (1213),
lock-wait timeout (1205) and Conflict within a time budget (issue #19: a conflict is a short wait,
not a 500), and on a lost or refusing node on the next node of DATABASE_URL (docs/operations/galera.md "Scale out")."""

import socket
import time
from datetime import datetime

import pymysql
import pytest

from dialerapi.upkeep import jobs
from dialerapi.plumbing import db as db_module
from dialerapi.plumbing.config import database_nodes, url_with_nodes
from dialerapi.plumbing.db import Conflict, Database, DatabaseUnavailable


@pytest.fixture(params=[True, False], ids=["begin", "implicit_begin"])
def db(database_url, request):
    """A pool that sends BEGIN (the service's default) or not (DB_SEND_BEGIN off: the simulator)."""
    database = Database(database_url, pool_size=2, send_begin=request.param)
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


class SleepOnlyClock:
    """Stands in for db.py's `time`: time passes only in its backoff sleeps, so how many attempts
    fit the budget depends on the backoff alone, not on how slowly a loaded machine runs an insert
    (CI's test-clock run once gave up after one attempt that took the whole 0.3 s)."""

    def __init__(self):
        self.now = 0.0

    def monotonic(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds


def test_gives_up_when_the_conflict_budget_runs_out(db, sql, monkeypatch):
    monkeypatch.setattr(db_module, "CONFLICT_BUDGET_SECONDS", 0.3)
    monkeypatch.setattr(db_module, "time", SleepOnlyClock())
    attempts = []

    def work(conn):
        attempts.append(1)
        insert_priority(conn, 50 + len(attempts) % 40)
        raise pymysql.err.OperationalError(1213, "Deadlock")

    with pytest.raises(DatabaseUnavailable) as raised:
        db.run(work)
    assert raised.value.reason == "conflicts"
    assert len(attempts) > 3, "retried until the budget ran out"
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


def test_a_connection_lost_during_the_work_runs_it_again_on_a_new_one(db, sql):
    # Nothing was committed (the server rolls back a transaction whose connection is gone), so the
    # work runs again whole, as after a deadlock: how a host survives its node's death (#19).
    attempts = []

    def work(conn):
        attempts.append(connection_id(conn))
        insert_priority(conn, 81)
        if len(attempts) == 1:
            kill(sql, attempts[0])
        insert_priority(conn, 82)

    db.run(work)
    assert len(attempts) == 2 and attempts[0] != attempts[1], "run again once, on another connection"
    assert [r["id"] for r in sql("SELECT id FROM sales_priorities WHERE id IN (81, 82) ORDER BY id")] == [81, 82]


def test_a_job_on_a_connection_the_server_dropped_runs_on_a_reopened_one(db, sql):
    tick = datetime(2026, 11, 21, 10, 0, 0)
    kill(sql, db.run(connection_id))
    assert jobs.run_once_per_tick(db, "probe", 60, tick, lambda: "done") == "done"
    assert sql.one("SELECT last_started_at FROM dialerapi_job_runs WHERE name = 'probe'")["last_started_at"] == tick
    assert sql.one("SELECT lease_until FROM dialerapi_job_runs WHERE name = 'probe'")["lease_until"] is None, \
        "the job's lease was cleared"


def refused_node():
    """A loopback (host, port) where nothing listens: connecting is refused at once."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()


def node_of(conn):
    return conn.dbapi_connection.host, conn.dbapi_connection.port


def test_a_node_that_refuses_connections_is_passed_over(database_url, sql):
    (live,) = database_nodes(database_url)
    db = Database(url_with_nodes(database_url, [refused_node(), live]), pool_size=2)
    try:
        assert db.run(node_of) == live
        db.run(insert_priority, 83)
    finally:
        db.close()
    assert sql.one("SELECT COUNT(*) AS n FROM sales_priorities WHERE id = 83")["n"] == 1


def test_no_ready_node_is_database_unavailable_within_the_failover_budget(database_url, monkeypatch):
    monkeypatch.setattr(db_module, "FAILOVER_BUDGET_SECONDS", 0.5)
    db = Database(url_with_nodes(database_url, [refused_node(), refused_node()]), pool_size=2)
    try:
        with pytest.raises(DatabaseUnavailable) as raised:
            db.run(node_of)
    finally:
        db.close()
    assert raised.value.reason == "no_ready_node" and "no database node is ready" in str(raised.value)


def test_a_connection_on_a_fallback_node_goes_back_to_the_first_node(database_url, monkeypatch):
    # After FALLBACK_SECONDS of use a connection on a fallback node is closed, so the next
    # transaction connects anew, trying the first node first (here still refusing).
    (live,) = database_nodes(database_url)
    db = Database(url_with_nodes(database_url, [refused_node(), live]), pool_size=1)
    try:
        assert db.run(node_of) == live
        monkeypatch.setattr(db_module, "FALLBACK_SECONDS", -1)
        fallback_id = db.run(connection_id)
        assert db.run(connection_id) != fallback_id, "the fallback connection was closed after use"
        monkeypatch.setattr(db_module, "FALLBACK_SECONDS", 3600)
        kept_id = db.run(connection_id)
        assert db.run(connection_id) == kept_id, "kept while younger than FALLBACK_SECONDS"
    finally:
        db.close()


def test_a_literal_is_escaped_once_and_written_into_every_row_as_it_is(db, sql):
    """db.Literal (issue #33): the push's `now` and reset values, escaped once per batch, reach the
    table exactly as the same values bound per row would."""
    moment = datetime(2026, 11, 21, 10, 0, 5)
    with db.transaction() as conn:
        with conn.cursor() as cur:
            cur.executemany("INSERT INTO sales_agents (id, extension, name, wrapup_until) VALUES (%s, %s, %s, %s)",
                            [(id_, f"4{id_}", "Agent", db_module.Literal(moment)) for id_ in (701, 702)])
    assert [row["wrapup_until"] for row in sql("SELECT wrapup_until FROM sales_agents ORDER BY id")] == [moment] * 2
    assert db_module.Literal(None).sql == "NULL" and db_module.Literal(0).sql == "0"
    assert db_module.Literal("Pending").sql == "'Pending'"


def test_joined_literals_fill_several_columns_through_one_placeholder(db, sql):
    """db.Literal.joined (issue #51): a push's 13 reset values and stamps are one placeholder of its
    statement; each row gets them exactly as the values bound one by one would."""
    moment = datetime(2026, 11, 21, 10, 0, 5)
    tail = db_module.Literal.joined(("Agent", None, moment))
    assert tail.sql == "'Agent',NULL,'2026-11-21 10:00:05'"
    with db.transaction() as conn:
        with conn.cursor() as cur:
            cur.executemany("INSERT INTO sales_agents (id, extension, name, pause_code, wrapup_until)"
                            " VALUES (%s, %s, %s)", [(id_, f"4{id_}", tail) for id_ in (703, 704)])
    assert sql("SELECT id, name, pause_code, wrapup_until FROM sales_agents ORDER BY id") == [
        {"id": id_, "name": "Agent", "pause_code": None, "wrapup_until": moment} for id_ in (703, 704)]


@pytest.mark.parametrize("value", ["O'Brien", "back\\slash", b"bytes", ["a"]])
def test_a_literal_refuses_what_the_session_might_escape_otherwise(value):
    with pytest.raises(TypeError):
        db_module.Literal(value)
    with pytest.raises(TypeError):
        db_module.Literal.joined(("Pending", value))


def test_a_transaction_without_begin_costs_one_round_trip_less(db, monkeypatch, request):
    """Issue #52: with DB_SEND_BEGIN off, on a plain MariaDB, BEGIN is not sent (db._implicit_begin):
    with autocommit off the server starts the transaction at its first statement anyway, so the
    work and its COMMIT are all that travel. The tests above hold the transactions whole both ways."""
    sent = []
    original = pymysql.connections.Connection._execute_command

    def recording(self, command, sql):
        sent.append(sql.decode() if isinstance(sql, bytes) else sql)
        return original(self, command, sql)

    db.run(connection_id)
    monkeypatch.setattr(pymysql.connections.Connection, "_execute_command", recording)
    db.run(connection_id)
    begin = ["BEGIN"] if request.node.callspec.params["db"] else []
    assert sent == begin + ["SELECT CONNECTION_ID() AS id", "COMMIT"]
