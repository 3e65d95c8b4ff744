"""Migration 0024 (issue #67 item 4: a campaign's pause through every Galera node) tried on a
populated floor: applied while the 0023 release claims leads, then this release's claims referring
to the claim gates beside it, then rolled back with the previous release still claiming.

Expand only: a table, and an INVISIBLE column with its key and foreign key on sales_master, added in
place; the 0023 release's SELECT * and its claims run unchanged. tests/galera holds the gates to
what they are for; decisions.md D1: a fresh database and an upgraded one end identical
(tests/test_setup.py).
"""

import pymysql
import pytest
from test_migration_campaigns import NOW, claim_0022, floor_0022, reserved  # noqa: F401 - the fixture
from test_migration_dnc import apply_until, apply_while_serving, roll_back_through

from conftest import TZ
from dialerapi.plumbing import migrate
from dialerapi.rules.campaigns import operations
from dialerapi.rules.dialing import claims


def lead_columns(conn):
    with conn.cursor() as cur:
        cur.execute("SELECT * FROM sales_master WHERE oli_id = 'M-000000'")
        columns = list(cur.fetchone())
    conn.commit()
    return columns


def gates(conn, *oli_ids):
    with conn.cursor() as cur:
        cur.execute("SELECT oli_id, claim_gate FROM sales_master WHERE oli_id IN %s", (oli_ids,))
        leads = {row["oli_id"]: row["claim_gate"] for row in cur.fetchall()}
        cur.execute("SELECT id FROM dialerapi_claim_gates ORDER BY id")
        gate_rows = [row["id"] for row in cur.fetchall()]
    conn.commit()
    return leads, gate_rows


@pytest.fixture
def floor_0023(floor_0022):
    url, conn = floor_0022
    apply_until(url, "0023")
    return url, conn


def test_0024_applied_while_the_previous_release_claims_then_this_ones_claims_pass_the_gates(floor_0023):
    url, conn = floor_0023
    columns_before = lead_columns(conn)
    assert migrate.pending(url)[0] == "0024.claim-gates"
    # The 0023 release's claim, as far as these tables go, is the 0022 one (0023 added tables only).
    served, errors = apply_while_serving(url, "0024", claim_0022, range(0, 2000))
    assert errors == [] and len(served) >= 50
    assert "0024.claim-gates" not in migrate.pending(url)
    assert lead_columns(conn) == columns_before, "SELECT * sees the table as before"
    migrate.upgrade(url)  # this release's schema (0025: its claims read the calling rules)

    first = claims.claim_next(conn, 1, NOW, tz=TZ)
    conn.commit()
    again = claims.claim_next(conn, 3, NOW, tz=TZ)
    conn.commit()
    leads, gate_rows = gates(conn, first["oli_id"], again["oli_id"], "M-000000")
    assert leads == dict.fromkeys((first["oli_id"], again["oli_id"], "M-000000")), "no row keeps a reference"
    assert gate_rows == [1]

    operations.pause(conn, "home_loan", NOW, "test")  # deletes the gate and inserts it again
    conn.commit()
    assert gates(conn, first["oli_id"])[1] == [1]
    claim_0022(conn, 2001)  # the previous release, still serving beside it, on the new schema
    assert reserved(conn, "credit_card") + reserved(conn, "home_loan") == len(served) + 3


def test_0024_rolls_back_and_the_previous_release_claims_on(floor_0023):
    url, conn = floor_0023
    migrate.upgrade(url)
    claims.claim_next(conn, 1, NOW, tz=TZ)
    conn.commit()
    roll_back_through(url, "0024.claim-gates")
    with conn.cursor() as cur:
        with pytest.raises(pymysql.err.OperationalError):
            cur.execute("SELECT claim_gate FROM sales_master LIMIT 1")
    conn.rollback()
    claim_0022(conn, 7)
    assert reserved(conn, "credit_card") + reserved(conn, "home_loan") == 2
