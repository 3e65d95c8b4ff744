"""Database access: a connection pool, one transaction() context manager, and the named queries.

Data-layer functions take the connection first and never commit; the caller owns the transaction
(aiosql's model). `Database.run` executes such a function in one transaction and runs it again
when the database says the transaction lost a conflict (deadlock or Galera certification failure,
1213; lock-wait timeout, 1205), when the function raises `Conflict`, or when the node was lost or
refuses work before COMMIT (docs/operations/galera.md "Scale out"): then the connection moves to the next ready node
of DATABASE_URL.
"""

import itertools
import logging
import random
import select
import time
from contextlib import contextmanager, suppress
from datetime import datetime
from pathlib import Path

import aiosql
import pymysql
from dbutils.pooled_db import PooledDB
from flask import current_app
from pymysql.converters import escape_item
from pymysql.cursors import DictCursor

from dialerapi.plumbing.config import database_nodes, database_params

log = logging.getLogger(__name__)

queries = aiosql.from_path(Path(__file__).parent / "sql", "pymysql")

# Lost conflicts: 1213 is InnoDB's deadlock and Galera's certification failure at COMMIT alike.
CONFLICT_ERRORS = {1205, 1213}
# CR_SERVER_GONE_ERROR and CR_SERVER_LOST: what a statement sent on a connection the server closed raises.
CONNECTION_LOST = {2006, 2013}
# The node is gone or refuses work: lost connections, CR_CONN_HOST_ERROR (2003, nothing answers),
# ER_UNKNOWN_COM_ERROR (1047, "WSREP has not yet prepared node for application use": a Galera node
# cut off from the cluster), ER_SERVER_SHUTDOWN (1053), ER_CONNECTION_KILLED (1927).
NODE_ERRORS = CONNECTION_LOST | {2003, 1047, 1053, 1927}
# Conflicts are retried for up to this long (elapsed seconds), each wait a random share of a cap
# that doubles from 5 ms to 0.5 s: two nodes certifying overlapping 500-lead batches can lose
# several rounds in a row, and a short wait is what the client should see, not an error (#19).
CONFLICT_BUDGET_SECONDS = 15
CONFLICT_BACKOFF_SECONDS = (0.005, 0.5)
# A lost or refusing node is retried on the next one for up to this long before the answer is 503
# `database_unavailable`; Galera needs about 3 s to drop a dead node from the cluster.
FAILOVER_BUDGET_SECONDS = 8
FAILOVER_BACKOFF_SECONDS = (0.05, 1.0)
# A connection to a node other than the first of DATABASE_URL is closed after this many seconds of
# use, so the pool drifts back to the preferred node once it is ready again.
FALLBACK_SECONDS = 30


class Conflict(Exception):
    """Raised inside a transaction to have `Database.run` roll back and run the work again."""


class CommitOutcomeUnknown(Exception):
    """The connection was lost after COMMIT was sent and before the server answered: the work may
    or may not be stored. Never retried here (the work would run twice); HTTP answers 503
    `commit_unknown` and the client repeats the request to find out (docs/operations/security.md "Security and limits")."""


class DatabaseUnavailable(Exception):
    """Nothing was stored and the database cannot take the work now: `reason` is `no_ready_node`
    (every node of DATABASE_URL refused or was lost within FAILOVER_BUDGET_SECONDS) or `conflicts`
    (the work lost conflicts for CONFLICT_BUDGET_SECONDS). HTTP answers 503 `database_unavailable`
    with Retry-After (docs/operations/galera.md "Scale out")."""

    def __init__(self, reason, detail=""):
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason


def error_code(exc):
    """The MySQL error number of a PyMySQL error (0 for a closed connection), else None."""
    if isinstance(exc, pymysql.MySQLError):
        return exc.args[0] if exc.args and isinstance(exc.args[0], int) else 0
    return None


def is_node_error(exc):
    """True when `exc` says the connection's node is gone or refuses work (NODE_ERRORS), or the
    connection is closed (InterfaceError): the connection must be replaced, on another node if need be."""
    return isinstance(exc, pymysql.err.InterfaceError) or (
        isinstance(exc, pymysql.err.OperationalError) and error_code(exc) in NODE_ERRORS)


def connect_params(url, connect_timeout=5, io_timeout=60):
    """PyMySQL connect() arguments for the first node of DATABASE_URL: utf8mb4, dict rows, READ COMMITTED.

    READ COMMITTED because REPEATABLE READ takes gap locks on the oli_ids a batch looks up before
    inserting them, which deadlocks concurrent batches (shared/notes/mysql-performance.md).
    `io_timeout` (seconds) bounds every read and write, the server's greeting included, so a hung
    server cannot hold a request forever; the default sits above InnoDB's 50 s lock wait. Over a
    Unix socket, no TLS (`ssl_disabled`): the socket never leaves the host, and PyMySQL's preferred
    TLS loads the system's certificates for every connection, 25 ms of CPU.
    """
    params = database_params(url)
    return {
        **params,
        **({"ssl_disabled": True} if "unix_socket" in params else {}),
        "charset": "utf8mb4",
        "cursorclass": DictCursor,
        "autocommit": False,
        "connect_timeout": connect_timeout,
        "read_timeout": io_timeout,
        "write_timeout": io_timeout,
        "init_command": "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED",
    }


def session_params(url, connect_timeout=5, io_timeout=60):
    """connect_params() without host and port: what connect_ready() adds to each node it tries."""
    params = connect_params(url, connect_timeout, io_timeout)
    del params["host"], params["port"]
    return params


def connect_ready(nodes, causal_reads=True, send_begin=True, **params):
    """A new PyMySQL connection to the first of `nodes` ((host, port) pairs) that is ready for work.

    A Galera node is ready when wsrep_ready is ON (it is in the Primary component and takes
    statements); a node cut off from the cluster still answers `SELECT 1` but refuses every table,
    so it is passed over. On a Galera node with `causal_reads` the session waits, at each BEGIN and
    SELECT, until the node has applied every write the cluster committed before (wsrep_sync_wait = 1),
    so a request reads what another host just wrote. Without `send_begin`, begin() sends nothing
    off Galera (_implicit_begin). `params` are session_params(). Raises pymysql OperationalError 2003 naming why each node was refused.
    """
    refusals = []
    for host, port in nodes:
        try:
            conn = pymysql.connect(host=host, port=port, **params)
        except pymysql.MySQLError as exc:
            refusals.append(f"{host}:{port} {exc.args[-1] if exc.args else exc}")
            continue
        try:
            state = queries.node_state(conn)
            if state["wsrep_on"] and state["wsrep_ready"] != "ON":
                refusals.append(f"{host}:{port} is not ready (wsrep_ready {state['wsrep_ready']}, "
                                f"{state['wsrep_local_state_comment']})")
                conn.close()
                continue
            if state["wsrep_on"] and causal_reads:
                queries.wait_for_causality(conn)
            if not send_begin and not state["wsrep_on"]:
                conn.begin = _implicit_begin
        except pymysql.MySQLError as exc:
            refusals.append(f"{host}:{port} {exc.args[-1] if exc.args else exc}")
            with suppress(Exception):
                conn.close()
            continue
        conn.dialerapi_connected_at = time.monotonic()
        conn.encoders[Literal] = _literal_sql
        return conn
    raise pymysql.err.OperationalError(2003, "no database node is ready: " + "; ".join(refusals))


def _implicit_begin():
    """BEGIN without a round trip, on a plain MariaDB with DB_SEND_BEGIN off (connect_ready): with
    autocommit off the server starts a transaction at its first statement anyway (BEGIN
    was a fifth of a simulated run's round trips). DBUtils still takes begin() as the start of a
    transaction and never replaces the connection inside one. A Galera node gets BEGIN, where
    causal reads wait. Set on the connection, not by a subclass: DBUtils finds the DB-API module
    by the connection's class."""


class Literal:
    """Values escaped once, then written into any number of rows of a statement as they are: a
    500-lead push escapes its `now` and its reset values once, not 500 times. Connections
    made by connect_ready take it (they register `_literal_sql`).

    `Literal(value)` stands for one value; `Literal.joined(values)` for several placeholders' worth
    in a row, comma-separated, so that the statement has one `%s` for all of them (PyMySQL
    escapes each placeholder of each row through three calls, a third of a push's time in Python).

    Only values whose SQL text does not depend on the connection: None, numbers, datetimes and
    plain words (a status such as `Pending`); anything else raises TypeError, since how a quote or
    a backslash is escaped depends on the session's sql_mode.
    """

    __slots__ = ("sql",)

    def __init__(self, value):
        self.sql = _escape_plain(value)

    @classmethod
    def joined(cls, values):
        literal = cls.__new__(cls)
        literal.sql = ",".join(map(_escape_plain, values))
        return literal


def _escape_plain(value):
    plain_word = isinstance(value, str) and value.isalnum()
    if not (value is None or plain_word or isinstance(value, (int, float, datetime))):
        raise TypeError(f"db.Literal takes None, numbers, datetimes and plain words, not {value!r}")
    return escape_item(value, "utf8mb4")


def _literal_sql(value, mapping=None):
    """PyMySQL's encoder of a Literal: the text it was escaped to."""
    return value.sql


def inserted_id(conn):
    """The AUTO_INCREMENT id the last INSERT on `conn` (pooled or raw) took: PyMySQL keeps it from
    the server's answer, so it costs no round trip as SELECT LAST_INSERT_ID() does."""
    return getattr(conn, "dbapi_connection", conn).insert_id()


def connect(url, timeout=5, io_timeout=60, causal_reads=True):
    """One unpooled connection (migrations, health probes, tests) to the first ready node of `url`;
    `timeout` bounds connecting to each node, in seconds. Raises pymysql OperationalError 2003."""
    return connect_ready(database_nodes(url), causal_reads, **session_params(url, timeout, io_timeout))


class Database:
    """A pool of PyMySQL connections to DATABASE_URL; one per app (`app.extensions["dialerapi.db"]`).

    `nodes` are the (host, port) pairs of the URL in order of preference; `host` is the first's.
    """

    def __init__(self, url, pool_size=16, causal_reads=True, max_connections=0, send_begin=True):
        self.url = url
        self.nodes = database_nodes(url)
        self.host = self.nodes[0][0]
        # ping=0: no COM_PING when a connection leaves the pool, a round trip on every request;
        # transaction() reopens a connection the server dropped instead (_begin). reset=False:
        # transaction() always commits or rolls back what it began, so a ROLLBACK on every return
        # would only cost a round trip too. isfatal: DBUtils reopens a connection (on the next
        # ready node) only when its node is gone or refuses work, not after every deadlock.
        # max_connections (0: none): past it a transaction waits for a connection to come back.
        self.pool = PooledDB(
            creator=connect_ready, mincached=0, maxcached=pool_size, maxconnections=max_connections,
            blocking=True, ping=0, reset=False, isfatal=is_node_error,
            nodes=self.nodes, causal_reads=causal_reads, send_begin=send_begin,
            **session_params(url, connect_timeout=2 if len(self.nodes) > 1 else 5),
        )

    @contextmanager
    def transaction(self, snapshot=False):
        """Yield a connection inside BEGIN; commit when the block ends, roll back if it raises.

        `snapshot`: the transaction is REPEATABLE READ instead of the session's READ COMMITTED, so
        every statement in it reads the one snapshot its first read took (a report made of several
        reads, such as the floor state). Raises CommitOutcomeUnknown when the connection is lost
        while the COMMIT is under way.
        """
        conn = self.pool.connection()
        try:
            _begin(conn, snapshot)
            try:
                yield conn
            except BaseException as exc:
                if is_node_error(exc):
                    _discard(conn)
                else:
                    _rollback(conn)
                raise
            _commit(conn)
            self._drift_back(conn)
        finally:
            conn.close()

    def _drift_back(self, conn):
        raw = conn.dbapi_connection
        if (raw.host, raw.port) != self.nodes[0] and \
                time.monotonic() - getattr(raw, "dialerapi_connected_at", 0) > FALLBACK_SECONDS:
            _discard(conn)

    def run(self, work, *args, **kwargs):
        """Return `work(conn, *args, **kwargs)` run in one transaction (see _run for the retries)."""
        return self._run(work, args, kwargs, snapshot=False)

    def run_snapshot(self, work, *args, **kwargs):
        """`run`, with every read of `work` from one consistent snapshot (transaction(snapshot=True))."""
        return self._run(work, args, kwargs, snapshot=True)

    def _run(self, work, args, kwargs, snapshot):
        """Return `work(conn, *args, **kwargs)` run in one transaction.

        Runs the whole transaction again, after a random backoff that doubles each attempt, on
        MySQL errors 1213 (deadlock, Galera certification failure) and 1205 (lock wait timeout) and
        on `Conflict` for up to CONFLICT_BUDGET_SECONDS, and on a lost or refusing node (NODE_ERRORS:
        nothing was committed) on the next ready node for up to FAILOVER_BUDGET_SECONDS. Raises
        DatabaseUnavailable when a budget runs out, CommitOutcomeUnknown as transaction() does, and
        any other error after the rollback.
        """
        started = time.monotonic()
        for attempt in itertools.count(1):
            try:
                with self.transaction(snapshot) as conn:
                    return work(conn, *args, **kwargs)
            except (pymysql.err.OperationalError, pymysql.err.InternalError, pymysql.err.InterfaceError,
                    Conflict) as exc:
                if is_node_error(exc):
                    reason, budget, (first, cap) = "no_ready_node", FAILOVER_BUDGET_SECONDS, FAILOVER_BACKOFF_SECONDS
                elif isinstance(exc, Conflict) or error_code(exc) in CONFLICT_ERRORS:
                    reason, budget, (first, cap) = "conflicts", CONFLICT_BUDGET_SECONDS, CONFLICT_BACKOFF_SECONDS
                else:
                    raise
                if time.monotonic() - started >= budget:
                    log.warning("giving up %s after %d attempts: %r", work.__name__, attempt, exc)
                    raise DatabaseUnavailable(reason, str(exc)) from exc
                log.info("retrying %s after %r (attempt %d)", work.__name__, exc, attempt)
                time.sleep(random.uniform(0, min(cap, first * 2 ** min(attempt - 1, 16))))

    def close(self):
        self.pool.close()


def _begin(conn, snapshot=False):
    """BEGIN on a pooled connection, reopened first if the server dropped it while it sat in the pool;
    with `snapshot`, REPEATABLE READ for this transaction only.

    A restart, wait_timeout or KILL closes idle connections server-side. BEGIN is the first statement
    a connection carries in a transaction, so one the server closed fails there (CONNECTION_LOST),
    before anything was done, and is safe to replace: DBUtils reopens a connection whose rollback
    fails, on the first ready node. Raises the second failure when no node is ready. A connection
    that sends no BEGIN (_implicit_begin, the simulator) is looked at instead: a closed one has
    something to read though nothing was asked (the server's error packet, the end of the stream),
    and is replaced before the work runs, without a round trip (_dropped); a drop nothing showed
    yet fails the work's first statement, and Database.run runs the work again.
    """
    if vars(conn.dbapi_connection).get("begin") is _implicit_begin and _dropped(conn):
        _discard(conn)
    try:
        _start(conn, snapshot)
    except (pymysql.err.OperationalError, pymysql.err.InterfaceError) as exc:
        if not is_node_error(exc):
            raise
        _discard(conn)
        _start(conn, snapshot)


def _dropped(conn):
    """True when the server has sent something on this idle connection, or it has no socket. poll(),
    not select(): select() refuses a descriptor past 1,024, which a host holding agent sockets has."""
    sock = getattr(conn.dbapi_connection, "_sock", None)
    if sock is None:
        return True
    poller = select.poll()
    poller.register(sock, select.POLLIN)
    return bool(poller.poll(0))


def _start(conn, snapshot):
    if snapshot:
        queries.next_transaction_repeatable_read(conn)
    conn.begin()


def _discard(conn):
    """Close the pooled connection's socket and have DBUtils open a new one (on the first ready node)."""
    with suppress(Exception):
        conn.dbapi_connection.close()
    with suppress(pymysql.MySQLError):
        conn.rollback()


def _rollback(conn):
    try:
        conn.rollback()
    except pymysql.MySQLError:
        log.warning("rollback failed; the connection is dropped", exc_info=True)


def _commit(conn):
    """COMMIT; a connection lost before the reply arrived leaves the outcome unknown."""
    try:
        conn.commit()
    except (pymysql.err.OperationalError, pymysql.err.InterfaceError) as exc:
        if isinstance(exc, pymysql.err.InterfaceError) or exc.args[0] in CONNECTION_LOST:
            log.error("the connection was lost during COMMIT: the transaction may or may not be stored",
                      exc_info=True)
            raise CommitOutcomeUnknown() from exc
        _rollback(conn)
        raise


def union_all(conn, parts):
    """The rows of several reads in one statement, one round trip: `parts` is a list of (query,
    params), each an aiosql query selecting the same columns, its params escaped by the driver
    (cursor.mogrify), the parts joined with UNION ALL. For what MariaDB cannot say in one query,
    such as the first rows of each of several index ranges (it has no LATERAL join). [] for no part.
    """
    if not parts:
        return []
    with conn.cursor() as cur:
        statement = " UNION ALL ".join(
            "(" + cur.mogrify(query.sql.rstrip().rstrip(";"), params) + ")" for query, params in parts)
        cur.execute(statement)
        return list(cur.fetchall())


def get_db():
    """The current app's Database."""
    return current_app.extensions["dialerapi.db"]
