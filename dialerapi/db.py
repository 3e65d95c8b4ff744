"""Database access: a connection pool, one transaction() context manager, and the named queries.

Data-layer functions take the connection first and never commit; the caller owns the transaction
(aiosql's model). `Database.run` executes such a function in one transaction and retries it when
MySQL reports a deadlock (1213) or a lock-wait timeout (1205), or when the function itself raises
`Conflict` (for example an insert that lost a race to a concurrent insert of the same key).
"""

import logging
import random
import time
from contextlib import contextmanager, suppress
from pathlib import Path

import aiosql
import pymysql
from flask import current_app
from dbutils.pooled_db import PooledDB
from pymysql.cursors import DictCursor

from .config import database_params

log = logging.getLogger(__name__)

queries = aiosql.from_path(Path(__file__).parent / "sql", "pymysql")

RETRYABLE_ERRORS = {1205, 1213}
# CR_SERVER_GONE_ERROR and CR_SERVER_LOST: what a statement sent on a connection the server closed raises.
CONNECTION_LOST = {2006, 2013}
# Each retry of a Conflict finds more of its rows committed (and locks them), so a few more attempts
# settle even a burst of clients pushing the same new oli_ids at once.
MAX_ATTEMPTS = 10
BACKOFF_SECONDS = (0.005, 0.2)  # the first retry waits up to 5 ms, doubling up to 200 ms


class Conflict(Exception):
    """Raised inside a transaction to have `Database.run` roll back and run the work again."""


class CommitOutcomeUnknown(Exception):
    """The connection was lost after COMMIT was sent and before the server answered: the work may
    or may not be stored. Never retried here (the work would run twice); HTTP answers 503
    `commit_unknown` and the client repeats the request to find out (README "Security and limits")."""


def connect_params(url, connect_timeout=5, io_timeout=60):
    """PyMySQL connect() arguments for DATABASE_URL: utf8mb4, dict rows, READ COMMITTED.

    READ COMMITTED because REPEATABLE READ takes gap locks on the oli_ids a batch looks up before
    inserting them, which deadlocks concurrent batches (shared/notes/mysql-performance.md).
    `io_timeout` (seconds) bounds every read and write, the server's greeting included, so a hung
    server cannot hold a request forever; the default sits above InnoDB's 50 s lock wait.
    """
    return {
        **database_params(url),
        "charset": "utf8mb4",
        "cursorclass": DictCursor,
        "autocommit": False,
        "connect_timeout": connect_timeout,
        "read_timeout": io_timeout,
        "write_timeout": io_timeout,
        "init_command": "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED",
    }


def connect(url, timeout=5, io_timeout=60):
    """One unpooled connection (migrations, health probes, tests); `timeout` bounds connecting, in seconds."""
    return pymysql.connect(**connect_params(url, timeout, io_timeout))


class Database:
    """A pool of PyMySQL connections to DATABASE_URL; one per app (`app.extensions["dialerapi.db"]`)."""

    def __init__(self, url, pool_size=16):
        self.url = url
        self.host = database_params(url)["host"]
        # ping=0: no COM_PING when a connection leaves the pool, a round trip on every request;
        # transaction() reopens a connection the server dropped instead (_begin). reset=False:
        # transaction() always commits or rolls back what it began, so a ROLLBACK on every return
        # would only cost a round trip too.
        self.pool = PooledDB(
            creator=pymysql, mincached=0, maxcached=pool_size, maxconnections=0,
            blocking=True, ping=0, reset=False, **connect_params(url),
        )

    @contextmanager
    def transaction(self):
        """Yield a connection inside BEGIN; commit when the block ends, roll back if it raises.

        Raises CommitOutcomeUnknown when the connection is lost while the COMMIT is under way.
        """
        conn = self.pool.connection()
        try:
            _begin(conn)
            try:
                yield conn
            except BaseException:
                _rollback(conn)
                raise
            _commit(conn)
        finally:
            conn.close()

    def run(self, work, *args, **kwargs):
        """Return `work(conn, *args, **kwargs)` run in one transaction.

        Retries the whole transaction up to MAX_ATTEMPTS times, after a random backoff that doubles
        each attempt (BACKOFF_SECONDS), on MySQL errors 1213 (deadlock) and 1205 (lock wait timeout)
        and on `Conflict`; any other error, or the last failed attempt, propagates after the rollback.
        """
        for attempt in range(1, MAX_ATTEMPTS + 1):
            try:
                with self.transaction() as conn:
                    return work(conn, *args, **kwargs)
            except (pymysql.err.OperationalError, pymysql.err.InternalError, Conflict) as exc:
                code = exc.args[0] if isinstance(exc, pymysql.MySQLError) and exc.args else None
                if (code not in RETRYABLE_ERRORS and not isinstance(exc, Conflict)) or attempt == MAX_ATTEMPTS:
                    raise
                log.info("retrying %s after %r (attempt %d)", work.__name__, exc, attempt)
                first, cap = BACKOFF_SECONDS
                time.sleep(random.uniform(0, min(cap, first * 2 ** (attempt - 1))))

    def close(self):
        self.pool.close()


def _begin(conn):
    """BEGIN on a pooled connection, reopened first if the server dropped it while it sat in the pool.

    A restart or wait_timeout closes idle connections server-side. BEGIN is the first statement a
    connection carries in a transaction, so one the server closed fails there (CONNECTION_LOST),
    before anything was done, and is safe to replace: DBUtils reopens a connection whose rollback
    fails. A connection lost later, in the middle of the work, is never replaced and replayed.
    Raises the second failure when the database is down.
    """
    try:
        conn.begin()
    except (pymysql.err.OperationalError, pymysql.err.InterfaceError) as exc:
        if isinstance(exc, pymysql.err.OperationalError) and exc.args[0] not in CONNECTION_LOST:
            raise
        with suppress(pymysql.MySQLError):
            conn.rollback()
        conn.begin()


def _rollback(conn):
    try:
        conn.rollback()
    except pymysql.MySQLError:
        log.warning("rollback failed; the connection is dropped", exc_info=True)


def _commit(conn):
    """COMMIT; a connection lost before the reply arrived leaves the outcome unknown (issue #17)."""
    try:
        conn.commit()
    except (pymysql.err.OperationalError, pymysql.err.InterfaceError) as exc:
        if isinstance(exc, pymysql.err.InterfaceError) or exc.args[0] in CONNECTION_LOST:
            log.error("the connection was lost during COMMIT: the transaction may or may not be stored",
                      exc_info=True)
            raise CommitOutcomeUnknown() from exc
        _rollback(conn)
        raise


def get_db():
    """The current app's Database."""
    return current_app.extensions["dialerapi.db"]
