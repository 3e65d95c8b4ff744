"""Migration 0026 (issue #68: consent in the caps' count, the leads held per campaign) tried on a
populated floor: applied while the 0025 release claims leads; this release's consented claims then
write numbers the previous release, still serving beside it, reads and writes as it always did;
rolled back with the previous release claiming on.

Expand only: a column on dialerapi_contact_caps (the reg-f-7-in-7 preset gets consent_days 7),
one on dialerapi_contact_numbers (`consents`, beside `attempts`, whose entries keep their shape)
and a table of counts. decisions.md D1: a fresh database and an upgraded one end identical
(tests/test_setup.py).
"""

import json
from datetime import datetime, timedelta

import pymysql
import pytest
from test_migration_calling_rules import floor_0024  # noqa: F401 - the fixture
from test_migration_campaigns import NOW, claim_0022, floor_0022, reserved  # noqa: F401 - the fixture
from test_migration_dnc import apply_until, apply_while_serving, roll_back_through

from conftest import TZ, utc_naive
from dialerapi.plumbing import migrate
from dialerapi.rules.dialing import claims

# The 0025 release's statements of a number's attempts (rules.compliance.contact_caps, sql/contact_caps.sql),
# and its reading of them: every entry [epoch, form_type, reservation_id].
ATTEMPTS_0025 = "SELECT version, attempts FROM dialerapi_contact_numbers WHERE phone_e164 = %s"
WRITE_0025 = ("UPDATE dialerapi_contact_numbers SET version = version + 1, attempts = %s, last_at_utc = %s"
              " WHERE phone_e164 = %s AND version = %s")


def count_0025(conn, phone_e164, since_epoch):
    """The previous release's count of a number's attempts since `since_epoch`, as its check reads them."""
    with conn.cursor() as cur:
        cur.execute(ATTEMPTS_0025, (phone_e164,))
        row = cur.fetchone()
    conn.commit()
    return len([at for at, form_type, _ in json.loads(row["attempts"]) if at > since_epoch]), row


@pytest.fixture
def floor_0025(floor_0024):
    url, conn = floor_0024
    apply_until(url, "0025")
    return url, conn


def consent_lead(conn, n):
    """Lead n given written consent a day before NOW, as this release's push keeps it."""
    with conn.cursor() as cur:
        cur.execute("UPDATE sales_master SET consent_type = 'written', consent_at = %s, consent_source = 'form'"
                    " WHERE oli_id = %s", (NOW - timedelta(days=1), f"M-{n:06d}"))
    conn.commit()


def test_0026_applied_while_the_previous_release_claims_then_both_count_one_number(floor_0025):
    url, conn = floor_0025
    assert migrate.pending(url)[0] == "0026.consent-counts"
    served, errors = apply_while_serving(url, "0026", claim_0022, range(0, 2000, 2))
    assert errors == [] and len(served) >= 50
    migrate.upgrade(url)
    with conn.cursor() as cur:
        cur.execute("SELECT name, consent_days FROM dialerapi_contact_caps ORDER BY name")
        assert {row["name"]: row["consent_days"] for row in cur.fetchall()} == {
            "florida-oklahoma-3-per-24h": None, "reg-f-7-in-7": 7}
        cur.execute("UPDATE dialerapi_contact_caps SET enabled = 1 WHERE name = 'reg-f-7-in-7'")
    conn.commit()

    # This release claims a consented home_loan lead: its attempt is kept with its consent.
    consent_lead(conn, 1)
    row = claims.claim_next(conn, 1, NOW, tz=TZ)
    conn.commit()
    assert row["oli_id"] == "M-000001"
    phone = row["phone_e164"]
    with conn.cursor() as cur:
        cur.execute("SELECT consents FROM dialerapi_contact_numbers WHERE phone_e164 = %s", (phone,))
        consent_epoch = int((utc_naive(NOW - timedelta(days=1)) - datetime(1970, 1, 1)).total_seconds())
        assert json.loads(cur.fetchone()["consents"]) == {row["reservation_id"]: consent_epoch}
    conn.commit()

    # The previous release reads that number as it always did, and writes an attempt of its own.
    counted, stored = count_0025(conn, phone, 0)
    assert counted == 1
    attempts = json.loads(stored["attempts"]) + [[json.loads(stored["attempts"])[0][0], "home_loan", "R-0025"]]
    with conn.cursor() as cur:
        assert cur.execute(WRITE_0025, (json.dumps(attempts), NOW, phone, stored["version"])) == 1
    conn.commit()
    assert count_0025(conn, phone, 0)[0] == 2
    with conn.cursor() as cur:
        cur.execute("SELECT consents FROM dialerapi_contact_numbers WHERE phone_e164 = %s", (phone,))
        assert list(json.loads(cur.fetchone()["consents"])) == [row["reservation_id"]], \
            "the previous release leaves the consents alone"
    conn.commit()

    claim_0022(conn, 2001)  # the previous release claims on, beside this one
    assert reserved(conn, "credit_card") + reserved(conn, "home_loan") == len(served) + 1 + 1


def test_0026_rolls_back_and_the_previous_release_claims_on(floor_0025):
    url, conn = floor_0025
    migrate.upgrade(url)
    consent_lead(conn, 1)
    claims.claim_next(conn, 1, NOW, tz=TZ)
    conn.commit()
    roll_back_through(url, "0026.consent-counts")
    with conn.cursor() as cur:
        with pytest.raises(pymysql.err.OperationalError):
            cur.execute("SELECT consents FROM dialerapi_contact_numbers LIMIT 1")
    conn.rollback()
    with conn.cursor() as cur:
        cur.execute("SELECT COUNT(*) AS n FROM dialerapi_contact_numbers")
        assert cur.fetchone()["n"] == 1
    conn.commit()
    claim_0022(conn, 7)
    assert reserved(conn, "credit_card") + reserved(conn, "home_loan") == 2
