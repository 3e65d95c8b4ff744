"""Health probes (decisions.md D8).

/healthz answers from `HealthState`, which background jobs refresh, so it never waits on a dead
database or AMI. The AMI check arrives with the detailed-health work; until then `ami` is False.
"""

import logging
import threading
import time

import pymysql

from .db import connect, queries

log = logging.getLogger(__name__)

DB_CHECK_SECONDS = 5
DB_CHECK_TIMEOUT = 2


class HealthState:
    """The last result of each background check; read by /healthz, written by the jobs."""

    def __init__(self):
        self._lock = threading.Lock()
        self.db = False
        self.db_error = "not checked yet"
        self.db_latency_ms = None
        self.ami = False

    def record_db(self, ok, latency_ms=None, error=None):
        with self._lock:
            if ok != self.db:
                (log.info if ok else log.warning)("database %s", "reachable" if ok else f"unreachable: {error}")
            self.db, self.db_latency_ms, self.db_error = ok, latency_ms, error

    def snapshot(self):
        """The /healthz body: {"ok": True, "ami": bool, "db": bool}."""
        with self._lock:
            return {"ok": True, "ami": self.ami, "db": self.db}


def check_database(app):
    """Connect to DATABASE_URL with a 2 s timeout, run SELECT 1 and record the result on the app."""
    state = app.extensions["dialerapi.health"]
    started = time.monotonic()
    try:
        conn = connect(app.config["DATABASE_URL"], connect_timeout=DB_CHECK_TIMEOUT)
        try:
            queries.ping(conn)
        finally:
            conn.close()
    except (pymysql.MySQLError, OSError) as exc:
        state.record_db(False, error=str(exc))
        return False
    state.record_db(True, latency_ms=round((time.monotonic() - started) * 1000, 2))
    return True
