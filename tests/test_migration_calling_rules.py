"""Migration 0025 (issue #68: state calling rules, places, consent, restrictions) tried on a
populated floor: applied while the 0024 release claims leads, then this release's claims beside it
with a state rule and a restriction on, then rolled back with the previous release still claiming.

Expand only: two tables and five INVISIBLE columns added in place; the 0024 release's SELECT * and
its claims run unchanged. A lead the previous release pushed keeps its call zone (its IANA zones
alone) until a claim of this release finds it stale and works its profile out again, so a state
rule holds it from its first claim on. decisions.md D1: a fresh database and an upgraded one end
identical (tests/test_setup.py).
"""

from datetime import datetime
from zoneinfo import ZoneInfo

import pymysql
import pytest
from test_migration_campaigns import NOW, claim_0022, floor_0022, reserved  # noqa: F401 - the fixture
from test_migration_claim_gates import lead_columns
from test_migration_dnc import apply_until, apply_while_serving, roll_back_through

from conftest import TZ
from dialerapi.plumbing import migrate
from dialerapi.rules.compliance import calling_rules
from dialerapi.rules.dialing import claims

CHICAGO = ZoneInfo("America/Chicago")
# A Sunday noon in Louisiana, as wall-clock DB_TIMEZONE.
SUNDAY = datetime(2026, 11, 29, 12, 0, tzinfo=CHICAGO).astimezone(TZ).replace(tzinfo=None)
MONDAY = datetime(2026, 11, 30, 12, 0, tzinfo=CHICAGO).astimezone(TZ).replace(tzinfo=None)


@pytest.fixture
def floor_0024(floor_0022):
    """The 0024 release's floor, with 80 of its home_loan leads made Louisiana customers the way
    that release wrote them: the number's call zone of its IANA zones alone."""
    url, conn = floor_0022
    apply_until(url, "0024")
    with conn.cursor() as cur:
        cur.execute("INSERT INTO dialerapi_call_zones (zones_key, zones) VALUES (SHA1('America/Chicago'),"
                    " 'America/Chicago')")
        cur.execute("UPDATE sales_master SET phone_number = CONCAT('1504201', LPAD(id, 4, '0')),"
                    " phone_e164 = CONCAT('1504201', LPAD(id, 4, '0')), call_zone_id = LAST_INSERT_ID()"
                    " WHERE form_type = 'home_loan' AND id % 50 = 2")
        cur.execute("SELECT COUNT(*) AS n FROM sales_master WHERE phone_number LIKE '1504%'")
        assert cur.fetchone()["n"] == 80
    conn.commit()
    return url, conn


def louisiana(conn):
    with conn.cursor() as cur:
        cur.execute("SELECT COUNT(*) AS n FROM sales_master WHERE phone_number LIKE '1504%' AND isReserved = 1")
        count = cur.fetchone()["n"]
    conn.commit()
    return count


def test_0025_applied_while_the_previous_release_claims_then_its_rules_hold_the_old_leads(floor_0024):
    url, conn = floor_0024
    columns_before = lead_columns(conn)
    assert migrate.pending(url)[0] == "0025.calling-rules"
    served, errors = apply_while_serving(url, "0025", claim_0022, range(0, 2000, 2))
    assert errors == [] and len(served) >= 50
    assert "0025.calling-rules" not in migrate.pending(url)
    assert lead_columns(conn) == columns_before, "SELECT * sees the table as before"

    migrate.upgrade(url)
    calling_rules.set_enabled(conn, "us-la", True, NOW)
    conn.commit()
    held_before = louisiana(conn)
    for agent_id in range(1, 60, 2):  # home_loan agents
        claims.claim_next(conn, agent_id, SUNDAY, tz=TZ)
        conn.commit()
    assert louisiana(conn) == held_before, "no Louisiana lead on a Sunday, though its stored zone names no state"
    with conn.cursor() as cur:
        cur.execute("SELECT COUNT(*) AS n FROM sales_master m JOIN dialerapi_call_zones z ON z.id = m.call_zone_id"
                    " WHERE z.zones = 'America/Chicago;@US-LA'")
        assert cur.fetchone()["n"] >= 1, "the claims worked the first one's profile out again"
    conn.commit()
    claims.claim_next(conn, 61, MONDAY, tz=TZ)
    conn.commit()
    assert louisiana(conn) == held_before + 1, "Monday: the first due lead, a Louisiana one, is claimed"

    claim_0022(conn, 2001)  # the previous release, still serving beside it, on the new schema
    assert reserved(conn, "credit_card") + reserved(conn, "home_loan") == len(served) + 30 + 1 + 1


def test_0025_rolls_back_and_the_previous_release_claims_on(floor_0024):
    url, conn = floor_0024
    migrate.upgrade(url)
    calling_rules.set_enabled(conn, "us-la", True, NOW)
    conn.commit()
    claims.claim_next(conn, 1, MONDAY, tz=TZ)
    conn.commit()
    roll_back_through(url, "0025.calling-rules")
    with conn.cursor() as cur:
        with pytest.raises(pymysql.err.OperationalError):
            cur.execute("SELECT region FROM sales_master LIMIT 1")
    conn.rollback()
    claim_0022(conn, 7)
    assert reserved(conn, "credit_card") + reserved(conn, "home_loan") == 2
