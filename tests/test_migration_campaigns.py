"""Migration 0023 (issue #67 item 8: campaigns) tried on a populated floor: applied while the 0022
release reads the dialer config and claims leads, then this release claiming beside it with a
campaign paused, then rolled back with the previous release still claiming.

Expand only: two new tables, which the 0022 release never reads, so its statements run unchanged.
A campaign's pause holds on the hosts of this release; a host of the previous release, during the
rolling upgrade, does not know of it (docs/operations/campaigns.md). decisions.md D1: a fresh
database and an upgraded one end identical (tests/test_setup.py, for every migration).
"""

import uuid
from datetime import datetime

import pymysql
import pytest
from test_migration_dnc import apply_until, apply_while_serving, roll_back_through

from conftest import TZ
from dialerapi.plumbing import migrate
from dialerapi.plumbing.db import connect
from dialerapi.rules.campaigns import operations
from dialerapi.rules.dialing import claims

NOW = datetime(2026, 11, 23, 10, 0, 0)
AGENTS = 200
LEADS = 4000
# The 0022 release's progressive claim as far as these tables go: the config read (it names no
# campaign), the lead locked and written Calling.
CONFIG_0022 = "SELECT * FROM sales_dialer_config WHERE id = 1"
LOCK_LEAD_0022 = "SELECT * FROM sales_master WHERE oli_id = %s FOR UPDATE"
CLAIM_0022 = """UPDATE sales_master SET previous_dial_status = dial_status, dial_status = 'Calling', isReserved = 1,
  reservation_id = %s, reserved_at = %s, updated_at = %s WHERE id = %s"""


@pytest.fixture
def floor_0022(fresh_database):
    """The 0022 release's schema with AGENTS agents (free; home_loan, or credit_card for the even
    ones) and LEADS leads of the two form_types."""
    apply_until(fresh_database, "0022")
    migrate.seed(fresh_database)
    conn = connect(fresh_database)
    with conn.cursor() as cur:
        cur.executemany("INSERT INTO sales_agents (id, extension, name, panel_active, ami_idle) VALUES (%s, %s, %s, 1, 1)",
                        [(agent_id, str(10000 + agent_id), f"Agent {agent_id}") for agent_id in range(1, AGENTS + 1)])
        cur.executemany("INSERT INTO sales_agent_skills (agent_id, form_type) VALUES (%s, %s)",
                        [(agent_id, "credit_card" if agent_id % 2 == 0 else "home_loan")
                         for agent_id in range(1, AGENTS + 1)])
        cur.executemany(
            "INSERT INTO sales_master (oli_id, data_id, phone_number, phone_e164, client_name, form_type, priority_id,"
            " dial_status, isReserved, created_at, updated_at)"
            " VALUES (%s, %s, %s, %s, 'Customer', %s, 2, 'Pending', 0, %s, %s)",
            [(f"M-{i:06d}", str(uuid.uuid4()), f"9198765{i:05d}", int(f"9198765{i:05d}"),
              "credit_card" if i % 2 == 0 else "home_loan", NOW, NOW) for i in range(LEADS)])
    conn.commit()
    yield fresh_database, conn
    conn.close()


def claim_0022(conn, n):
    """The previous release claims lead n."""
    with conn.cursor() as cur:
        cur.execute(CONFIG_0022)
        assert cur.fetchone()["max_tries"] > 0
        cur.execute(LOCK_LEAD_0022, (f"M-{n:06d}",))
        lead = cur.fetchone()
        cur.execute(CLAIM_0022, (str(uuid.uuid4()), NOW, NOW, lead["id"]))
    conn.commit()


def reserved(conn, form_type):
    with conn.cursor() as cur:
        cur.execute("SELECT COUNT(*) AS n FROM sales_master WHERE isReserved = 1 AND form_type = %s", (form_type,))
        count = cur.fetchone()["n"]
    conn.commit()
    return count


def test_0023_applied_while_the_previous_release_claims_then_this_one_pauses_a_campaign_beside_it(floor_0022):
    url, conn = floor_0022
    assert migrate.pending(url)[0] == "0023.campaigns"
    served, errors = apply_while_serving(url, "0023", claim_0022, range(0, 1000))
    assert errors == [] and len(served) >= 50
    assert migrate.pending(url)[0] == "0024.claim-gates"
    migrate.upgrade(url)  # this release's schema (0024: its claims refer to a claim gate)

    operations.pause(conn, "home_loan", NOW, "test")
    conn.commit()
    home_before = reserved(conn, "home_loan")
    for agent_id in range(1, 21):
        try:
            row = claims.claim_next(conn, agent_id, NOW, tz=TZ)
        except claims.NotClaimable as refused:
            assert agent_id % 2 == 1 and refused.reason == operations.CAMPAIGN_PAUSED
            conn.rollback()
            continue
        assert row["form_type"] == "credit_card"
        conn.commit()
    assert reserved(conn, "home_loan") == home_before, "this release claims no lead of the paused campaign"
    claim_0022(conn, 1001)  # the previous release, still serving beside it, knows nothing of campaigns
    assert reserved(conn, "home_loan") == home_before + 1


def test_0023_rolls_back_and_the_previous_release_claims_on(floor_0022):
    url, conn = floor_0022
    migrate.upgrade(url)
    operations.update(conn, "home_loan", {"retry_seconds": 600}, NOW, "test")
    conn.commit()
    roll_back_through(url, "0023.campaigns")
    with conn.cursor() as cur:
        with pytest.raises(pymysql.err.ProgrammingError):
            cur.execute("SELECT * FROM dialerapi_campaigns")
    conn.rollback()
    claim_0022(conn, 7)
    assert reserved(conn, "home_loan") == 1
