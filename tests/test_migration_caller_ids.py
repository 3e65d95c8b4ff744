"""Migration 0027 (caller IDs) tried on a populated floor: applied while the 0026 release claims
leads; this release then presents a caller ID beside the previous release, which claims on as it
always did (sales_master.caller_id is invisible to its SELECT *, and its writes leave it alone);
rolled back with the previous release claiming on. Expand only (decisions.md D1; a fresh database
and an upgraded one end identical: tests/test_setup.py)."""

import pymysql
import pytest
from test_migration_calling_rules import floor_0024  # noqa: F401 - the fixture
from test_migration_campaigns import NOW, claim_0022, floor_0022, reserved  # noqa: F401 - the fixture
from test_migration_consent_counts import floor_0025  # noqa: F401 - the fixture
from test_migration_dnc import apply_until, apply_while_serving, roll_back_through

from conftest import TZ
from dialerapi.plumbing import migrate
from dialerapi.rules.caller_ids import numbers
from dialerapi.rules.dialing import claims


@pytest.fixture
def floor_0026(floor_0025):
    url, conn = floor_0025
    apply_until(url, "0026")
    return url, conn


def test_0027_applied_while_the_previous_release_claims_then_both_claim_side_by_side(floor_0026):
    url, conn = floor_0026
    assert migrate.pending(url)[0] == "0027.caller-ids"
    served, errors = apply_while_serving(url, "0027", claim_0022, range(0, 2000, 2))
    assert errors == [] and len(served) >= 50
    migrate.upgrade(url)
    numbers.add(conn, "+919845000001", ["default"], NOW, "cli")
    conn.commit()
    row = claims.claim_next(conn, 1, NOW, tz=TZ)
    conn.commit()
    assert row["caller_id_choice"] == {"number": "+919845000001", "pool": "default", "match": "pool"}
    with conn.cursor() as cur:
        cur.execute("SELECT * FROM sales_master WHERE id = %s", (row["id"],))
        assert "caller_id" not in cur.fetchone(), "invisible to the previous release's SELECT *"
        cur.execute("SELECT caller_id, presented_today FROM sales_master m JOIN dialerapi_caller_ids c"
                    " ON c.number = m.caller_id WHERE m.id = %s", (row["id"],))
        assert cur.fetchone()["presented_today"] == 1
    conn.commit()
    claim_0022(conn, 2001)  # the previous release claims on, beside this one
    assert reserved(conn, "credit_card") + reserved(conn, "home_loan") == len(served) + 1 + 1


def test_0027_rolls_back_and_the_previous_release_claims_on(floor_0026):
    url, conn = floor_0026
    migrate.upgrade(url)
    numbers.add(conn, "+919845000001", ["default"], NOW, "cli")
    conn.commit()
    claims.claim_next(conn, 1, NOW, tz=TZ)
    conn.commit()
    roll_back_through(url, "0027.caller-ids")
    with conn.cursor() as cur:
        with pytest.raises(pymysql.err.ProgrammingError):
            cur.execute("SELECT COUNT(*) FROM dialerapi_caller_ids")
    conn.rollback()
    claim_0022(conn, 7)
    assert reserved(conn, "credit_card") + reserved(conn, "home_loan") == 2
