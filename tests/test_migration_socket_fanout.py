"""Migration 0020 (issue #64: each socket host's fan-out lag and its sockets closed as too slow)
tried on a floor of socket hosts: applied while the 0019 release writes its heartbeats, then both
releases' heartbeats on the new schema, then rolled back.

Expand only: two columns added in place with defaults, so the 0019 release's heartbeat, which names
neither, runs unchanged and reads as "not measured". decisions.md D1: a fresh database and an
upgraded one end identical (tests/test_setup.py, for every migration).
"""

from datetime import datetime

import pymysql
import pytest

from conftest import TZ
from test_migration_dnc import apply_until, apply_while_serving, roll_back
from dialerapi.plumbing import socket_slots
from dialerapi.plumbing.db import connect, queries

NOW = datetime(2026, 11, 21, 10, 0, 0)
HOSTS = 200
# The 0019 release's heartbeat, as it sends it.
HEARTBEAT_0019 = """INSERT INTO dialerapi_socket_hosts (host, open_sockets, capacity, refused, workers, draining, updated_at)
VALUES (%s, %s, 2000, 0, '[1]', 0, %s)
ON DUPLICATE KEY UPDATE open_sockets = VALUES(open_sockets), capacity = VALUES(capacity),
  refused = VALUES(refused), workers = VALUES(workers), draining = VALUES(draining),
  updated_at = VALUES(updated_at)"""


@pytest.fixture
def floor_0019(fresh_database):
    """The 0019 release's schema with HOSTS socket hosts' heartbeats."""
    apply_until(fresh_database, "0019")
    conn = connect(fresh_database)
    with conn.cursor() as cur:
        cur.executemany(HEARTBEAT_0019, [(f"dialer{n}/127.0.0.1:8001", n, NOW) for n in range(HOSTS)])
    conn.commit()
    yield fresh_database, conn
    conn.close()


def heartbeat_0019(conn, n):
    with conn.cursor() as cur:
        cur.execute(HEARTBEAT_0019, (f"dialer{n % HOSTS}/127.0.0.1:8001", n, NOW))
    conn.commit()


def test_0020_applied_while_the_previous_release_writes_heartbeats_then_both_do(floor_0019):
    url, conn = floor_0019
    served, errors = apply_while_serving(url, "0020", heartbeat_0019, range(10_000))
    assert errors == [] and len(served) >= 50
    heartbeat_0019(conn, 1)
    queries.write_socket_host(conn, host="dialer-new/127.0.0.1:8001", open_sockets=7, capacity=2000, refused=0,
                              workers="[7]", draining=0, fanout_lag_ms=120, too_slow=2, updated_at=NOW)
    conn.commit()
    report = socket_slots.hosts_report(conn, NOW, TZ)
    hosts = {row["host"]: row for row in report["hosts"]}
    assert len(hosts) == HOSTS + 1
    assert (hosts["dialer1/127.0.0.1:8001"]["fanout_lag_seconds"], hosts["dialer1/127.0.0.1:8001"]["too_slow"]) == (None, 0)
    assert (hosts["dialer-new/127.0.0.1:8001"]["fanout_lag_seconds"], hosts["dialer-new/127.0.0.1:8001"]["too_slow"]) == (0.12, 2)
    assert socket_slots.fanout_check(report, 5)["ok"]


def test_0020_rolls_back_to_the_0019_schema(floor_0019):
    url, conn = floor_0019
    apply_until(url, "0020")
    roll_back(url, "0020.socket-fanout")
    with conn.cursor() as cur:
        with pytest.raises(pymysql.err.OperationalError):
            cur.execute("SELECT fanout_lag_ms FROM dialerapi_socket_hosts LIMIT 1")
        cur.execute("SELECT COUNT(*) AS n FROM dialerapi_socket_hosts")
        assert cur.fetchone()["n"] == HOSTS
    conn.rollback()
    heartbeat_0019(conn, 3)
