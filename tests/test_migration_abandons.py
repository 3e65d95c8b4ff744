"""Migration 0014 (issue #37: the abandon rate) tried on a populated floor, applied while the previous
release settles calls on it, then with both releases serving.

Expand before contract: 0014 only adds (call-attempt columns, two invisible sales_master columns
added in place, the counts table, settings), so the 0013 release's settle statements run on the new
schema unchanged, and this release settles a call the previous one claimed. decisions.md D1: a
fresh database and an upgraded one end identical (tests/test_setup.py, for every migration).
"""

import uuid
from datetime import datetime, timedelta

import pymysql
import pytest
from test_migration_dnc import apply_until, apply_while_serving, roll_back

from conftest import TZ, make_app
from dialerapi.plumbing import migrate
from dialerapi.plumbing.db import connect, get_db
from dialerapi.rules.leads import dialstate
from dialerapi.rules.views import floor

# Each module here takes 8 s or more (setup.cfg `slow`): handed out first in a parallel run.
# Over 10 s each with its populated floor (issue #63): make faults runs them, not make test.
pytestmark = [pytest.mark.slow, pytest.mark.long]

NOW = datetime(2026, 11, 21, 10, 0, 0)
LEADS = 20000
ATTEMPTS = 60000
# The 0013 release's settle, as it sends it: the lead locked with SELECT *, the attempt inserted
# with its own columns, the dial state written.
LOCK_0013 = "SELECT * FROM sales_master WHERE oli_id = %s FOR UPDATE"
ATTEMPT_0013 = """INSERT INTO sales_call_attempts
  (lead_id, oli_id, agent_id, call_type, started_at, ended_at, result, hangup_by, hangup_cause)
VALUES (%s, %s, NULL, 'outbound', %s, %s, %s, NULL, NULL)"""
HANGUP_0013 = """UPDATE sales_master SET dial_status = 'Received', isReserved = 0, reservation_id = NULL,
  reserved_at = NULL, previous_dial_status = NULL, call_count = call_count + 1, updated_at = %s WHERE id = %s"""


@pytest.fixture
def floor_0013(fresh_database):
    """The 0013 release's schema with LEADS leads (every tenth live on a call) and ATTEMPTS call attempts."""
    apply_until(fresh_database, "0013")
    migrate.seed(fresh_database)
    conn = connect(fresh_database)
    with conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO sales_master (oli_id, data_id, phone_number, client_name, form_type, priority_id, dial_status,"
            " isReserved, reservation_id, reserved_at, created_at, updated_at)"
            " VALUES (%s, %s, '9876543210', 'Customer', 'home_loan', 2, %s, %s, %s, %s, %s, %s)",
            [(f"M-{i:06d}", str(uuid.uuid4()), "Calling" if i % 10 == 0 else "Pending", int(i % 10 == 0),
              str(uuid.uuid4()) if i % 10 == 0 else None, NOW if i % 10 == 0 else None, NOW, NOW)
             for i in range(LEADS)])
        cur.execute("INSERT INTO sales_call_attempts (lead_id, oli_id, call_type, started_at, ended_at, result)"
                    " SELECT 1 + seq MOD %s, CONCAT('M-', LPAD(seq MOD %s, 6, '0')), 'outbound', %s, %s, 'ANSWER'"
                    " FROM seq_1_to_" + str(ATTEMPTS), (LEADS, LEADS, NOW - timedelta(days=1), NOW - timedelta(days=1)))
    conn.commit()
    yield fresh_database, conn
    conn.close()


def settle_0013(conn, oli_id, at=NOW):
    with conn.cursor() as cur:
        cur.execute(LOCK_0013, (oli_id,))
        lead = cur.fetchone()
        cur.execute(ATTEMPT_0013, (lead["id"], oli_id, at, at, "ANSWER"))
        cur.execute(HANGUP_0013, (at, lead["id"]))
    conn.commit()
    return lead


def test_0014_applied_while_the_previous_release_settles_then_both_serve(floor_0013):
    url, conn = floor_0013
    with conn.cursor() as cur:
        cur.execute("SELECT * FROM sales_master WHERE oli_id = 'M-000001'")
        columns_before = list(cur.fetchone())
    conn.commit()
    assert migrate.pending(url)[0] == "0014.abandon-rate"

    settled, errors = apply_while_serving(url, "0014", lambda conn, n: settle_0013(conn, f"M-{n:06d}"),
                                          range(0, LEADS, 10))
    assert not errors and settled, errors[:3]

    with conn.cursor() as cur:
        cur.execute("SELECT COUNT(*) AS n FROM sales_master")
        assert cur.fetchone()["n"] == LEADS
        cur.execute("SELECT COUNT(*) AS n FROM sales_call_attempts")
        assert cur.fetchone()["n"] == ATTEMPTS + len(settled)
        # Invisible and in place: the previous release's SELECT * sees the lead as before.
        cur.execute("SELECT * FROM sales_master WHERE oli_id = 'M-000001'")
        assert list(cur.fetchone()) == columns_before
        cur.execute("SELECT form_type, answered_at, late_connect FROM sales_call_attempts ORDER BY id LIMIT 1")
        assert cur.fetchone() == {"form_type": None, "answered_at": None, "late_connect": None}
    conn.commit()

    # Both releases on the new schema: the previous one settles a live lead as before...
    live = [n for n in range(0, LEADS, 10) if n not in settled]
    settle_0013(conn, f"M-{live[0]:06d}")
    # ...and this one (on the later migrations too) settles a lead the previous one claimed (no
    # moments recorded: counted by outcome).
    migrate.upgrade(url)
    app = make_app(url)
    with app.app_context():
        result = get_db().run(dialstate.settle, f"M-{live[1]:06d}", "abandoned", NOW + timedelta(minutes=1), tz=TZ,
                              grace_minutes=5, release_retry_ms=1000, started_at=NOW)
        assert result["lead"]["dial_status"] == "Abandoned"
        state = get_db().run_snapshot(floor.floor_state, NOW + timedelta(minutes=1), "home_loan", TZ)
    assert state["form_types"][0]["abandons"]["windows"]["today"] == {
        "answered": 1, "abandoned": 1, "late_connects": 0, "machines": 0, "rate": 1.0}
    with conn.cursor() as cur:
        cur.execute("SELECT form_type, result FROM sales_call_attempts WHERE oli_id = %s AND ended_at = %s",
                    (f"M-{live[1]:06d}", NOW + timedelta(minutes=1)))
        assert cur.fetchall() == [{"form_type": "home_loan", "result": "ABANDON"}]
    conn.commit()


def test_0014_rolls_back_to_the_0013_schema(floor_0013):
    url, conn = floor_0013
    apply_until(url, "0014")
    roll_back(url, "0014.abandon-rate")
    with conn.cursor() as cur:
        with pytest.raises(pymysql.err.OperationalError):
            cur.execute("SELECT form_type FROM sales_call_attempts LIMIT 1")
        with pytest.raises(pymysql.err.ProgrammingError):
            cur.execute("SELECT 1 FROM dialerapi_abandon_counts")
        cur.execute("SELECT COUNT(*) AS n FROM sales_call_attempts")
        assert cur.fetchone()["n"] == ATTEMPTS
    settle_0013(conn, "M-000010")
