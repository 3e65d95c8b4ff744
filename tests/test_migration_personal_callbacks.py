"""Migration 0015 (issue #40: personal callbacks) tried on a populated floor, applied while the
previous release claims leads and files CRM callbacks on it, then with both releases serving.

Expand before contract: 0015 only adds (an invisible sales_master column added in place, an index
built in place, a sales_pending_actions column, a setting), so the 0014 release's statements run on
the new schema unchanged. decisions.md D1: a fresh database and an upgraded one end identical
(tests/test_setup.py, for every migration).
"""

import uuid
from datetime import datetime, timedelta

import pymysql
import pytest
from test_migration_dnc import apply_until, apply_while_serving, roll_back

from conftest import TZ, make_app
from dialerapi.plumbing import migrate
from dialerapi.plumbing.db import connect, get_db
from dialerapi.rules.dialing import claims, crm_actions

# Each module here takes 8 s or more (setup.cfg `slow`): handed out first in a parallel run.
# Over 10 s each with its populated floor (issue #63): make faults runs them, not make test.
pytestmark = [pytest.mark.slow, pytest.mark.long]

NOW = datetime(2026, 11, 21, 10, 0, 0)
LEADS = 20000
# The 0014 release's statements, as it sends them: a claim locks the lead with SELECT * and writes
# its dial state; a CRM callback stores its pending row with its own columns.
LOCK_0014 = "SELECT * FROM sales_master WHERE oli_id = %s FOR UPDATE"
CLAIM_0014 = """UPDATE sales_master SET previous_dial_status = dial_status, dial_status = 'Calling', isReserved = 1,
  reservation_id = %s, reserved_at = %s, updated_at = %s WHERE id = %s"""
PENDING_0014 = """INSERT INTO sales_pending_actions
  (oli_id, action, scheduled_at, reason, status, agentId, extension, callbackType, workStatus,
   subDisposition, remarks, created_at, applied_at)
VALUES (%s, 'callback', %s, NULL, 'pending', 501, NULL, NULL, NULL, NULL, NULL, %s, NULL)"""


@pytest.fixture
def floor_0014(fresh_database):
    """The 0014 release's schema with LEADS leads (every fifth a due Callback) and two agents."""
    apply_until(fresh_database, "0014")
    migrate.seed(fresh_database)
    conn = connect(fresh_database)
    with conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO sales_master (oli_id, data_id, phone_number, client_name, form_type, priority_id, dial_status,"
            " callback_scheduled_at, isReserved, created_at, updated_at)"
            " VALUES (%s, %s, '9876543210', 'Customer', 'home_loan', 1, %s, %s, 0, %s, %s)",
            [(f"M-{i:06d}", str(uuid.uuid4()), "Callback" if i % 5 == 0 else "Pending",
              NOW - timedelta(minutes=1) if i % 5 == 0 else None, NOW, NOW) for i in range(LEADS)])
        for agent_id in (501, 502):
            cur.execute("INSERT INTO sales_agents (id, extension, name, panel_active, ami_idle)"
                        " VALUES (%s, %s, 'Agent', 1, 1)", (agent_id, str(4000 + agent_id)))
            cur.execute("INSERT INTO sales_agent_skills (agent_id, form_type) VALUES (%s, 'home_loan')", (agent_id,))
    conn.commit()
    yield fresh_database, conn
    conn.close()


def serve_0014(conn, n):
    """The previous release claims lead n and files a CRM callback for lead n + 1."""
    with conn.cursor() as cur:
        cur.execute(LOCK_0014, (f"M-{n:06d}",))
        lead = cur.fetchone()
        cur.execute(CLAIM_0014, (str(uuid.uuid4()), NOW, NOW, lead["id"]))
        cur.execute(PENDING_0014, (f"M-{n + 1:06d}", NOW + timedelta(hours=1), NOW))
    conn.commit()


def test_0015_applied_while_the_previous_release_serves_then_both_serve(floor_0014):
    url, conn = floor_0014
    with conn.cursor() as cur:
        cur.execute("SELECT * FROM sales_master WHERE oli_id = 'M-000001'")
        columns_before = list(cur.fetchone())
    conn.commit()
    assert migrate.pending(url)[0] == "0015.personal-callbacks"

    served, errors = apply_while_serving(url, "0015", serve_0014, range(1, LEADS, 10))
    assert not errors and served, errors[:3]

    with conn.cursor() as cur:
        cur.execute("SELECT COUNT(*) AS n FROM sales_master WHERE dial_status = 'Calling'")
        assert cur.fetchone()["n"] == len(served)
        cur.execute("SELECT COUNT(*) AS n FROM sales_pending_actions WHERE callbackAgentId IS NULL")
        assert cur.fetchone()["n"] == len(served)
        # Invisible and in place: the previous release's SELECT * sees the lead as before.
        cur.execute("SELECT * FROM sales_master WHERE oli_id = 'M-000001'")
        assert list(cur.fetchone()) == columns_before
        cur.execute("SELECT personal_callback_fallback_minutes AS m FROM sales_dialer_config")
        assert cur.fetchone()["m"] == 30
    conn.commit()

    # This release (on any later migrations too) files a personal callback and claims for its owner
    # and for another agent...
    migrate.upgrade(url)
    app = make_app(url)
    with app.app_context():
        db = get_db()
        db.run(crm_actions.request_callback, "M-000000", NOW - timedelta(minutes=2), NOW, 501)
        assert db.run(claims.claim_next, 502, NOW, tz=TZ)["oli_id"] == "M-000005"
        assert db.run(claims.claim_next, 501, NOW, tz=TZ)["oli_id"] == "M-000000"
    # ...and the previous release's statements still run on the lead this release wrote.
    with conn.cursor() as cur:
        cur.execute(LOCK_0014, ("M-000010",))
        assert len(cur.fetchone()) == len(columns_before)
        cur.execute(PENDING_0014, ("M-000010", NOW + timedelta(hours=2), NOW))
    conn.commit()


def test_0015_rolls_back_to_the_0014_schema(floor_0014):
    url, conn = floor_0014
    apply_until(url, "0015")
    roll_back(url, "0015.personal-callbacks")
    with conn.cursor() as cur:
        with pytest.raises(pymysql.err.OperationalError):
            cur.execute("SELECT callback_agent_id FROM sales_master LIMIT 1")
        with pytest.raises(pymysql.err.OperationalError):
            cur.execute("SELECT callbackAgentId FROM sales_pending_actions LIMIT 1")
        cur.execute("SELECT COUNT(*) AS n FROM sales_master")
        assert cur.fetchone()["n"] == LEADS
    serve_0014(conn, 21)
