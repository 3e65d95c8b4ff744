"""Migration 0017 (issue #48: lead events and webhooks) tried on a populated floor, applied while the
previous release settles calls on it, then with both releases serving. Expand only: 0017 creates
four tables and touches none of the previous release's, so its statements run unchanged; rolled
back, the 0016 schema is what is left. decisions.md D1: a fresh database and an upgraded one end
identical (tests/test_setup.py, for every migration); D6: settle.
"""

import uuid
from datetime import datetime

import pytest
from test_migration_dnc import apply_until, apply_while_serving, roll_back

from conftest import TZ, make_app
from dialerapi.plumbing import migrate
from dialerapi.plumbing.db import connect, get_db
from dialerapi.rules.leads import dialstate

# Over 10 s each with its populated floor (issue #63): make faults runs them, not make test.
pytestmark = [pytest.mark.slow, pytest.mark.long]

NOW = datetime(2026, 11, 21, 10, 0, 0)
LEADS = 20000
# The 0016 release's settle, as it sends it: lock the lead, record the attempt, write the hangup.
LOCK_0016 = "SELECT * FROM sales_master WHERE oli_id = %s FOR UPDATE"
ATTEMPT_0016 = ("INSERT INTO sales_call_attempts (lead_id, oli_id, agent_id, call_type, started_at, ended_at, result)"
                " VALUES (%s, %s, NULL, 'outbound', %s, %s, 'NOANSWER')")
SETTLE_0016 = ("UPDATE sales_master SET dial_status = 'Not Connected', isReserved = 0, previous_dial_status = NULL,"
               " call_count = call_count + 1, updated_at = %s WHERE id = %s")


@pytest.fixture
def floor_0016(fresh_database):
    """The 0016 release's schema with LEADS leads, every other one live on a call."""
    apply_until(fresh_database, "0016")
    migrate.seed(fresh_database)
    conn = connect(fresh_database)
    with conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO sales_master (oli_id, data_id, phone_number, client_name, form_type, priority_id, dial_status,"
            " isReserved, created_at, updated_at) VALUES (%s, %s, '9876543210', 'Customer', 'home_loan', 2, %s, %s,"
            " %s, %s)",
            [(f"M-{i:06d}", str(uuid.uuid4()), "Calling" if i % 2 else "Pending", i % 2, NOW, NOW)
             for i in range(LEADS)])
    conn.commit()
    yield fresh_database, conn
    conn.close()


def settle_0016(conn, n):
    with conn.cursor() as cur:
        cur.execute(LOCK_0016, (f"M-{n:06d}",))
        lead = cur.fetchone()
        cur.execute(ATTEMPT_0016, (lead["id"], lead["oli_id"], NOW, NOW))
        cur.execute(SETTLE_0016, (NOW, lead["id"]))
    conn.commit()


def test_0017_applied_while_the_previous_release_settles_then_both_serve(floor_0016):
    url, conn = floor_0016
    assert migrate.pending(url)[0] == "0017.lead-events"
    served, errors = apply_while_serving(url, "0017", settle_0016, range(1, LEADS, 20))
    assert not errors and served, errors[:3]
    with conn.cursor() as cur:
        cur.execute("SELECT COUNT(*) AS n FROM sales_call_attempts")
        assert cur.fetchone()["n"] == len(served)
        # The previous release's settles wrote no events: the feed starts with this release.
        cur.execute("SELECT COUNT(*) AS n FROM dialerapi_lead_events")
        assert cur.fetchone()["n"] == 0
    conn.commit()
    migrate.upgrade(url)
    app = make_app(url)
    with app.app_context():
        get_db().run(dialstate.settle, "M-019999", "busy", NOW, tz=TZ, grace_minutes=10, release_retry_ms=60000)
        events = app.test_client().get("/api/lead-events", headers={"Authorization": f"Bearer {app.config['WS_SECRET']}"})
    assert [e["oli_id"] for e in events.get_json()["events"]] == ["M-019999"]
    settle_0016(conn, 19997)  # the previous release beside this one, on the new schema


def test_0017_rolls_back_to_the_0016_schema(floor_0016):
    url, conn = floor_0016
    apply_until(url, "0017")
    roll_back(url, "0017.lead-events")
    with conn.cursor() as cur:
        cur.execute("SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE()"
                    " AND (table_name LIKE 'dialerapi_lead%%' OR table_name LIKE 'dialerapi_webhook%%')")
        assert cur.fetchall() == ()
    conn.commit()
    assert migrate.pending(url)[0] == "0017.lead-events"
    settle_0016(conn, 1)
