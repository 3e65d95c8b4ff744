"""Migration 0021 (issue #64 item 3: the lead and reservation last claimed for an agent, so the board
shows a ringing call's campaign) tried on a populated floor: applied while the 0020 release locks
agents and claims leads for them, then with both releases claiming, then rolled back.

Expand only: two invisible sales_agents columns added in place and an index built in place, so the
0020 release's SELECT * and column-less statements see the table as before and its claims, which
name neither column, run unchanged. decisions.md D1: a fresh database and an upgraded one end
identical (tests/test_setup.py, for every migration).
"""

import uuid
from datetime import datetime

import pymysql
import pytest
from test_migration_dnc import apply_until, apply_while_serving, roll_back_through

from conftest import TZ
from dialerapi.plumbing import migrate
from dialerapi.plumbing.db import connect, queries
from dialerapi.rules.dialing import claims

NOW = datetime(2026, 11, 21, 10, 0, 0)
AGENTS = 1000
LEADS = 4000
# The 0020 release's progressive claim, as it sends it: the agent locked with SELECT *, a lead
# locked and written Calling; it never names the new columns.
LOCK_AGENT_0020 = "SELECT * FROM sales_agents WHERE id = %s FOR UPDATE"
LOCK_LEAD_0020 = "SELECT * FROM sales_master WHERE oli_id = %s FOR UPDATE"
CLAIM_0020 = """UPDATE sales_master SET previous_dial_status = dial_status, dial_status = 'Calling', isReserved = 1,
  reservation_id = %s, reserved_at = %s, updated_at = %s WHERE id = %s"""


@pytest.fixture
def floor_0020(fresh_database):
    """The 0020 release's schema with AGENTS agents on the roster (free, home_loan) and LEADS leads."""
    apply_until(fresh_database, "0020")
    migrate.seed(fresh_database)
    conn = connect(fresh_database)
    with conn.cursor() as cur:
        cur.executemany("INSERT INTO sales_agents (id, extension, name, panel_active, ami_idle) VALUES (%s, %s, %s, 1, 1)",
                        [(agent_id, str(10000 + agent_id), f"Agent {agent_id}") for agent_id in range(1, AGENTS + 1)])
        cur.executemany("INSERT INTO sales_agent_skills (agent_id, form_type) VALUES (%s, 'home_loan')",
                        [(agent_id,) for agent_id in range(1, AGENTS + 1)])
        cur.executemany(
            "INSERT INTO sales_master (oli_id, data_id, phone_number, phone_e164, client_name, form_type, priority_id,"
            " dial_status, isReserved, created_at, updated_at)"
            " VALUES (%s, %s, %s, %s, 'Customer', 'home_loan', 2, 'Pending', 0, %s, %s)",
            [(f"M-{i:06d}", str(uuid.uuid4()), f"9198765{i:05d}", int(f"9198765{i:05d}"), NOW, NOW)
             for i in range(LEADS)])
    conn.commit()
    yield fresh_database, conn
    conn.close()


def claim_0020(conn, n):
    """The previous release claims lead n for agent n (of the roster)."""
    with conn.cursor() as cur:
        cur.execute(LOCK_AGENT_0020, (n % AGENTS + 1,))
        assert cur.fetchone()["panel_active"] == 1
        cur.execute(LOCK_LEAD_0020, (f"M-{n:06d}",))
        lead = cur.fetchone()
        cur.execute(CLAIM_0020, (str(uuid.uuid4()), NOW, NOW, lead["id"]))
    conn.commit()


def agent_columns(conn):
    with conn.cursor() as cur:
        cur.execute("SELECT * FROM sales_agents WHERE id = 1")
        columns = list(cur.fetchone())
    conn.commit()
    return columns


def test_0021_applied_while_the_previous_release_claims_then_both_claim(floor_0020):
    url, conn = floor_0020
    columns_before = agent_columns(conn)
    assert migrate.pending(url)[0] == "0021.agent-claims"
    served, errors = apply_while_serving(url, "0021", claim_0020, range(0, 2000))
    assert errors == [] and len(served) >= 50
    assert agent_columns(conn) == columns_before, "SELECT * sees the table as before"
    claim_0020(conn, 3000)  # the previous release, on the new schema

    migrate.upgrade(url)  # this release runs on every later migration too (0023: campaigns)
    claimed = claims.claim_next(conn, 2, NOW, TZ)  # this release: agent 2's claim is kept on its row
    conn.commit()
    rows = {row["agent_id"]: row for row in queries.board_agents(conn, all_agents=False, agent_ids=(1, 2))}
    assert rows[2]["call_form_type"] == "home_loan" and claimed["oli_id"] not in {f"M-{n:06d}" for n in served}
    assert rows[1]["call_form_type"] is None, "a claim of the previous release shows no campaign, as before"
    with conn.cursor() as cur:
        cur.execute("SELECT COUNT(*) AS n FROM sales_agents WHERE claimed_lead_id IS NOT NULL")
        assert cur.fetchone()["n"] == 1
        cur.execute("SELECT COUNT(*) AS n FROM sales_master WHERE isReserved = 1")
        assert cur.fetchone()["n"] == len(served) + 2
    conn.commit()


def test_0021_rolls_back_to_the_0020_schema(floor_0020):
    url, conn = floor_0020
    migrate.upgrade(url)  # this release's schema (0023: campaigns), then back to 0020's
    claims.claim_next(conn, 5, NOW, TZ)
    conn.commit()
    roll_back_through(url, "0021.agent-claims")
    with conn.cursor() as cur:
        with pytest.raises(pymysql.err.OperationalError):
            cur.execute("SELECT claimed_lead_id FROM sales_agents LIMIT 1")
        cur.execute("SELECT COUNT(*) AS n FROM sales_agents")
        assert cur.fetchone()["n"] == AGENTS
    conn.rollback()
    claim_0020(conn, 7)
