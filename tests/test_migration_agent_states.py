"""Migration 0018 (issue #49: the agent state history and its daily roll-ups) tried on a populated
floor, applied while the previous release changes agents' states on it, then with both releases
serving. Expand only: 0018 creates two tables and touches none of the previous release's, so its
statements run unchanged; rolled back, the 0017 schema is what is left. decisions.md D1: a fresh
database and an upgraded one end identical (tests/test_setup.py, for every migration).
"""

import uuid
from datetime import datetime

import pytest
from test_migration_dnc import apply_until, apply_while_serving, roll_back

from conftest import make_app
from dialerapi.plumbing import migrate
from dialerapi.plumbing.db import connect, get_db
from dialerapi.rules.agents import roster

# Over 10 s each with its populated floor (issue #63): make faults runs them, not make test.
pytestmark = [pytest.mark.slow, pytest.mark.long]

NOW = datetime(2026, 11, 21, 10, 0, 0)
AGENTS = 1000
LEADS = 20000
# The 0017 release's agent-state, as it sends it: the availability columns, then the row read back.
STATE_0017 = "UPDATE sales_agents SET ami_idle = %s WHERE id = %s"
READ_0017 = "SELECT * FROM sales_agents WHERE id = %s FOR UPDATE"
OUTBOX_0017 = "INSERT INTO dialerapi_outbox (agent_id, created_at) VALUES (%s, %s)"


@pytest.fixture
def floor_0017(fresh_database):
    """The 0017 release's schema with AGENTS agents on their panels and LEADS leads."""
    apply_until(fresh_database, "0017")
    migrate.seed(fresh_database)
    conn = connect(fresh_database)
    with conn.cursor() as cur:
        cur.executemany("INSERT INTO sales_agents (id, extension, name, panel_active, ami_idle) VALUES (%s, %s, %s, 1, 1)",
                        [(1000 + i, str(5000 + i), f"Agent {i}") for i in range(AGENTS)])
        cur.executemany("INSERT INTO sales_agent_skills (agent_id, form_type) VALUES (%s, 'home_loan')",
                        [(1000 + i,) for i in range(AGENTS)])
        cur.executemany(
            "INSERT INTO sales_master (oli_id, data_id, phone_number, client_name, form_type, priority_id, dial_status,"
            " isReserved, created_at, updated_at) VALUES (%s, %s, '9876543210', 'Customer', 'home_loan', 2, 'Pending', 0,"
            " %s, %s)", [(f"M-{i:06d}", str(uuid.uuid4()), NOW, NOW) for i in range(LEADS)])
    conn.commit()
    yield fresh_database, conn
    conn.close()


def state_0017(conn, n):
    with conn.cursor() as cur:
        cur.execute(STATE_0017, (n % 2, 1000 + n % AGENTS))
        cur.execute(READ_0017, (1000 + n % AGENTS,))
        cur.execute(OUTBOX_0017, (1000 + n % AGENTS, NOW))
    conn.commit()


def test_0018_applied_while_the_previous_release_changes_states_then_both_serve(floor_0017):
    url, conn = floor_0017
    assert migrate.pending(url)[0] == "0018.agent-states"
    served, errors = apply_while_serving(url, "0018", state_0017, range(1, 100000))
    assert not errors and served, errors[:3]
    with conn.cursor() as cur:
        # The previous release's changes wrote no history: it starts with this release.
        cur.execute("SELECT COUNT(*) AS n FROM dialerapi_agent_states")
        assert cur.fetchone()["n"] == 0
    conn.commit()
    migrate.upgrade(url)
    app = make_app(url)
    with app.app_context():
        get_db().run(roster.set_availability, 1001, ami_idle=False)
        get_db().run(roster.pause, 1002, "lunch")
    with conn.cursor() as cur:
        cur.execute("SELECT s.agent_id, s.ami_idle, s.pause_code, a.ami_idle = s.ami_idle AS current"
                    " FROM dialerapi_agent_states AS s JOIN sales_agents AS a ON a.id = s.agent_id ORDER BY s.id")
        rows = cur.fetchall()
        assert [(row["agent_id"], row["pause_code"], row["current"]) for row in rows] == [
            (1001, None, 1), (1002, "lunch", 1)]
        assert rows[0]["ami_idle"] == 0
    conn.commit()
    state_0017(conn, 3)  # the previous release beside this one, on the new schema


def test_0018_rolls_back_to_the_0017_schema(floor_0017):
    url, conn = floor_0017
    apply_until(url, "0018")
    roll_back(url, "0018.agent-states")
    with conn.cursor() as cur:
        cur.execute("SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE()"
                    " AND table_name LIKE 'dialerapi_agent_%%'")
        assert cur.fetchall() == ()
    conn.commit()
    assert migrate.pending(url)[0] == "0018.agent-states"
    state_0017(conn, 1)
