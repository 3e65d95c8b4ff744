"""Migration 0019 (issue #50: contact caps and retries per outcome) tried on a populated floor,
applied while the previous release claims, settles and counts on it, then with both serving.

Expand only (issue #50 item 5): new tables, two invisible sales_master columns added in place with
an index built in place, a setting and a counts column with defaults, so the 0018 release's
statements run on the new schema unchanged. decisions.md D1: a fresh database and an upgraded one
end identical (tests/test_setup.py, for every migration).
"""

import uuid
from datetime import datetime

import pymysql
import pytest
from test_migration_dnc import apply_until, apply_while_serving, roll_back

from conftest import TZ, make_app
from dialerapi.plumbing import migrate
from dialerapi.plumbing.db import connect, get_db
from dialerapi.rules.dialing import claims
from dialerapi.rules.leads import dialstate

# Over 10 s each with its populated floor (issue #63): make faults runs them, not make test.
pytestmark = [pytest.mark.slow, pytest.mark.long]

NOW = datetime(2026, 11, 21, 10, 0, 0)
LEADS = 20000
FLORIDA = "13052021234"
# The 0018 release's statements, as it sends them: a claim locks the lead with SELECT * and writes
# its dial state; a settle counts the call with its own columns and reads the config's.
LOCK_0018 = "SELECT * FROM sales_master WHERE oli_id = %s FOR UPDATE"
CLAIM_0018 = """UPDATE sales_master SET previous_dial_status = dial_status, dial_status = 'Calling', isReserved = 1,
  reservation_id = %s, reserved_at = %s, updated_at = %s WHERE id = %s"""
COUNT_0018 = """INSERT INTO dialerapi_abandon_counts (grain, form_type, starts_at, node, calls, answered, abandoned, late_connects)
VALUES ('d', 'home_loan', %s, 'n1', 1, 1, 0, 0)
ON DUPLICATE KEY UPDATE calls = calls + VALUES(calls), answered = answered + VALUES(answered)"""
CONFIG_0018 = """SELECT isMaintainance, retry_pattern, abandon_limit, personal_callback_fallback_minutes
FROM sales_dialer_config WHERE id = 1"""


@pytest.fixture
def floor_0018(fresh_database):
    """The 0018 release's schema with LEADS leads (every tenth of one Florida number) and two agents."""
    apply_until(fresh_database, "0018")
    migrate.seed(fresh_database)
    conn = connect(fresh_database)
    with conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO sales_master (oli_id, data_id, phone_number, phone_e164, client_name, form_type, priority_id,"
            " dial_status, isReserved, created_at, updated_at)"
            " VALUES (%s, %s, %s, %s, 'Customer', 'home_loan', 2, 'Pending', 0, %s, %s)",
            [(f"M-{i:06d}", str(uuid.uuid4()), FLORIDA if i % 10 == 0 else f"9198765{i:05d}",
              int(FLORIDA) if i % 10 == 0 else int(f"9198765{i:05d}"), NOW, NOW) for i in range(LEADS)])
        for agent_id in (501, 502):
            cur.execute("INSERT INTO sales_agents (id, extension, name, panel_active, ami_idle)"
                        " VALUES (%s, %s, 'Agent', 1, 1)", (agent_id, str(4000 + agent_id)))
            cur.execute("INSERT INTO sales_agent_skills (agent_id, form_type) VALUES (%s, 'home_loan')", (agent_id,))
    conn.commit()
    yield fresh_database, conn
    conn.close()


def serve_0018(conn, n):
    """The previous release claims lead n, counts a settle and reads its config."""
    with conn.cursor() as cur:
        cur.execute(LOCK_0018, (f"M-{n:06d}",))
        lead = cur.fetchone()
        cur.execute(CLAIM_0018, (str(uuid.uuid4()), NOW, NOW, lead["id"]))
        cur.execute(COUNT_0018, (NOW.date(),))
        cur.execute(CONFIG_0018)
        assert cur.fetchone()["retry_pattern"]
    conn.commit()


def call_ended(conn, agent_id):
    """This release's progressive claim for `agent_id`, its call settled as a no-answer: the oli_id."""
    oli_id = claims.claim_next(conn, agent_id, NOW, tz=TZ)["oli_id"]
    dialstate.settle(conn, oli_id, "no_answer", NOW, tz=TZ, grace_minutes=10, release_retry_ms=60000)
    return oli_id


def test_0019_applied_while_the_previous_release_serves_then_both_serve(floor_0018):
    url, conn = floor_0018
    with conn.cursor() as cur:
        cur.execute("SELECT * FROM sales_master WHERE oli_id = 'M-000001'")
        columns_before = list(cur.fetchone())
    conn.commit()
    assert migrate.pending(url)[0] == "0019.contact-caps"

    served, errors = apply_while_serving(url, "0019", serve_0018, range(1, LEADS, 10))
    assert not errors and served, errors[:3]

    with conn.cursor() as cur:
        cur.execute("SELECT COUNT(*) AS n FROM sales_master WHERE dial_status = 'Calling'")
        assert cur.fetchone()["n"] == len(served)
        cur.execute("SELECT calls, machines FROM dialerapi_abandon_counts")
        assert cur.fetchone() == {"calls": len(served), "machines": 0}
        # Invisible and in place: the previous release's SELECT * sees the lead as before.
        cur.execute("SELECT * FROM sales_master WHERE oli_id = 'M-000001'")
        assert list(cur.fetchone()) == columns_before
        cur.execute("SELECT amd_false_positive_share AS share FROM sales_dialer_config")
        assert cur.fetchone()["share"] == 0
    conn.commit()

    # This release seeds the presets, off; with the Florida cap on, the number's 2,000 leads give
    # three calls (M-000030 is held), and the rest of the floor goes on. Each call ends before the
    # next claim: while one of the number's leads is live its others are passed over (issue #65).
    migrate.upgrade(url)
    with conn.cursor() as cur:
        cur.execute("SELECT name, enabled FROM dialerapi_contact_caps ORDER BY name")
        assert list(cur.fetchall()) == [{"name": "florida-oklahoma-3-per-24h", "enabled": 0},
                                        {"name": "reg-f-7-in-7", "enabled": 0}]
        cur.execute("UPDATE dialerapi_contact_caps SET enabled = 1 WHERE name = 'florida-oklahoma-3-per-24h'")
    conn.commit()
    app = make_app(url)
    with app.app_context():
        db = get_db()
        claimed = [db.run(call_ended, 501) for _ in range(36)]
    florida = [oli_id for oli_id in claimed if int(oli_id[2:]) % 10 == 0]
    assert florida == ["M-000000", "M-000010", "M-000020"], claimed
    # ...and the previous release's statements still run on the leads this release wrote.
    with conn.cursor() as cur:
        cur.execute(LOCK_0018, ("M-000030",))
        assert len(cur.fetchone()) == len(columns_before)
        cur.execute(COUNT_0018, (NOW.date(),))
    conn.commit()


def test_0019_rolls_back_to_the_0018_schema(floor_0018):
    url, conn = floor_0018
    apply_until(url, "0019")
    roll_back(url, "0019.contact-caps")
    with conn.cursor() as cur:
        with pytest.raises(pymysql.err.OperationalError):
            cur.execute("SELECT contact_cap FROM sales_master LIMIT 1")
        with pytest.raises(pymysql.err.ProgrammingError):
            cur.execute("SELECT * FROM dialerapi_contact_caps")
        cur.execute("SELECT COUNT(*) AS n FROM sales_master")
        assert cur.fetchone()["n"] == LEADS
