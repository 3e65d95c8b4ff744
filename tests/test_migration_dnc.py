"""Migration 0012 (issue #30) tried on a populated floor, with the previous release still serving.

Hosts upgrade one at a time: the previous release's push and claim statements run on the new
schema, and rows they write (no phone_e164, do_not_call 0, call_zone_id 0) are held to the new
rules by the claim itself (rules/compliance.refusal). decisions.md D1: a fresh database and an
upgraded one end identical (tests/test_setup.py holds that for every migration).
"""

import uuid
from datetime import datetime

import pymysql
import pytest
from yoyo import get_backend, read_migrations

from conftest import SECRET, TZ, make_app
from dialerapi.plumbing import migrate
from dialerapi.plumbing.db import connect, get_db, queries
from dialerapi.rules import claims, dnc

NOW = datetime(2026, 11, 21, 10, 0, 0)
LEADS = 20000

# The previous release's lead upsert and its claim's Pending candidates, as it sends them.
PREVIOUS_UPSERT = """INSERT INTO sales_master
  (oli_id, data_id, phone_number, client_name, form_type, priority_id, dial_status, disposeRemark,
   last_dial_result, hangup_by, hangup_cause, last_attempt_at, first_attempt_at, next_retry_at,
   callback_scheduled_at, call_count, isReserved, created_at, updated_at)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)
ON DUPLICATE KEY UPDATE
  data_id = VALUES(data_id), phone_number = VALUES(phone_number), client_name = VALUES(client_name),
  form_type = VALUES(form_type), priority_id = VALUES(priority_id), dial_status = VALUES(dial_status),
  next_retry_at = VALUES(next_retry_at), call_count = VALUES(call_count), isReserved = VALUES(isReserved),
  updated_at = VALUES(updated_at)"""
PREVIOUS_PENDING = """SELECT 2 AS bucket, id, next_retry_at AS due FROM sales_master
 WHERE dial_status = 'Pending' AND isReserved = 0 AND form_type = %s
   AND (next_retry_at <= %s OR next_retry_at IS NULL)
 ORDER BY next_retry_at, id LIMIT 5"""


def lead_rows(start, count, phone):
    return [(f"F-{i:06d}", str(uuid.uuid4()), phone(i), "Customer", "home_loan", 2, "Pending", None, None, None,
             None, None, None, None, None, 0, 0, NOW, NOW) for i in range(start, start + count)]


@pytest.fixture
def populated(fresh_database):
    """The schema of the previous release (migrations up to 0011), with LEADS leads and an agent."""
    backend = get_backend(fresh_database)
    with backend.lock():
        previous = read_migrations(str(migrate.MIGRATIONS_DIR)).filter(lambda m: m.id < "0012")
        backend.apply_migrations(backend.to_apply(previous))
    backend.connection.close()
    migrate.seed(fresh_database)
    conn = connect(fresh_database)
    with conn.cursor() as cur:
        cur.executemany(PREVIOUS_UPSERT, lead_rows(0, LEADS, lambda i: f"9198765{i:05d}"))
        cur.execute("INSERT INTO sales_agents (id, extension, name, panel_active, ami_idle) VALUES (501, '4501', 'A', 1, 1)")
        cur.execute("INSERT INTO sales_agent_skills (agent_id, form_type) VALUES (501, 'home_loan')")
    conn.commit()
    yield fresh_database, conn
    conn.close()


def test_0012_on_a_populated_floor_keeps_every_lead_and_the_previous_release_serving(populated):
    url, conn = populated
    assert migrate.pending(url) == ["0012.do-not-call"]
    migrate.upgrade(url)
    with conn.cursor() as cur:
        cur.execute("SELECT COUNT(*) AS n, SUM(phone_e164 IS NULL) AS unknown, SUM(do_not_call) AS listed,"
                    " SUM(call_zone_id) AS zoned FROM sales_master")
        assert cur.fetchone() == {"n": LEADS, "unknown": LEADS, "listed": 0, "zoned": 0}
        # The previous release, on a host not yet upgraded: its push writes, its claim reads in
        # due order through the new index, without sorting the table.
        cur.executemany(PREVIOUS_UPSERT, lead_rows(LEADS, 10, lambda i: "919876543210"))
        cur.execute("EXPLAIN " + PREVIOUS_PENDING, ("home_loan", NOW))
        plan = cur.fetchall()
        assert [row["key"] for row in plan] == ["ix_claim_retry_v2"] and "filesort" not in str(plan[0]["Extra"])
        cur.execute(PREVIOUS_PENDING, ("home_loan", NOW))
        assert len(cur.fetchall()) == 5
        # This release's candidates, with both rules on, read the same indexes in the same order.
        cur.execute("EXPLAIN " + queries.due_candidates.sql, {
            "callbacks_open": True, "form_type": "home_loan", "now": NOW, "all_priorities": True,
            "priorities": (0,), "any_zone": False, "zone_ids": (0, 1, 2), "max_rows": 5})
        plan = [row for row in cur.fetchall() if row["table"] == "sales_master"]
        assert len(plan) == 4 and {row["key"] for row in plan} == {"ix_claim_retry_v2", "ix_claim_callback_v2"}
        assert not [row for row in plan if "filesort" in str(row["Extra"])], plan
    conn.commit()


def test_leads_the_previous_release_wrote_are_held_to_the_list_by_the_claim(populated):
    url, conn = populated
    migrate.upgrade(url)
    with conn.cursor() as cur:
        # The first leads in claim order carry a number the list will hold, in the previous release's digits.
        cur.execute("UPDATE sales_master SET phone_number = '919876543210' WHERE oli_id < 'F-000010'")
    conn.commit()
    app = make_app(url, DB_TIMEZONE=TZ.key, WS_SECRET=SECRET)
    with app.app_context():
        db = get_db()
        db.run(dnc.add, [919876543210], "cli", NOW)
        got = db.run(claims.claim_next, 501, NOW, tz=TZ)
    assert got["oli_id"] == "F-000010"
    with conn.cursor() as cur:
        cur.execute("SELECT COUNT(*) AS n FROM sales_master WHERE oli_id < 'F-000010' AND do_not_call = 1"
                    " AND phone_e164 = 919876543210 AND isReserved = 0")
        assert cur.fetchone()["n"] == 10


def test_0012_rolls_back_to_the_previous_schema(populated):
    url, conn = populated
    migrate.upgrade(url)
    backend = get_backend(url)
    with backend.lock():
        migrations = read_migrations(str(migrate.MIGRATIONS_DIR))
        backend.rollback_migrations(backend.to_rollback(migrations.filter(lambda m: m.id == "0012.do-not-call")))
    backend.connection.close()
    with conn.cursor() as cur:
        with pytest.raises(pymysql.err.OperationalError):
            cur.execute("SELECT phone_e164 FROM sales_master LIMIT 1")
        cur.execute("SELECT COUNT(*) AS n FROM sales_master")
        assert cur.fetchone()["n"] == LEADS
