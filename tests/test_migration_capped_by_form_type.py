"""Migration 0022 (issue #65 item 5: `dialerapi report caps` by form_type) tried on a populated
floor: the day's capped numbers keyed by form_type too, applied while the 0021 release notes holds,
then both releases noting them, then rolled back (a number's rows summed back into one).

decisions.md D1: a fresh database and an upgraded one end identical (tests/test_setup.py, for
every migration).
"""

from datetime import date, datetime

import pytest
from test_migration_dnc import apply_until, apply_while_serving, roll_back

from dialerapi.plumbing import migrate
from dialerapi.plumbing.db import connect, queries
from dialerapi.rules.compliance import contact_caps

DAY = date(2026, 11, 21)
AT = datetime(2026, 11, 21, 4, 30)
NUMBERS = 5000
CAP = "florida-oklahoma-3-per-24h"
# The 0021 release's note of a hold, as it sends it.
NOTE_0021 = """INSERT INTO dialerapi_contact_capped (day, cap, phone_e164, form_type, first_at_utc)
VALUES (%s, %s, %s, %s, %s)
ON DUPLICATE KEY UPDATE leads_held = leads_held + 1"""


@pytest.fixture
def floor_0021(fresh_database):
    """The 0021 release's schema with NUMBERS numbers capped today, each with two holds."""
    apply_until(fresh_database, "0021")
    migrate.seed(fresh_database)
    conn = connect(fresh_database)
    with conn.cursor() as cur:
        rows = [(DAY, CAP, 13052000000 + n, "home_loan", AT) for n in range(NUMBERS)]
        cur.executemany(NOTE_0021, rows)
        cur.executemany(NOTE_0021, rows)
    conn.commit()
    yield fresh_database, conn
    conn.close()


def note_0021(conn, n):
    with conn.cursor() as cur:
        cur.execute(NOTE_0021, (DAY, CAP, 13052000000 + n % NUMBERS, "credit_card", AT))
    conn.commit()


def test_0022_applied_while_the_previous_release_notes_holds_then_both_do(floor_0021):
    url, conn = floor_0021
    assert migrate.pending(url)[0] == "0022.capped-by-form-type"
    served, errors = apply_while_serving(url, "0022", note_0021, range(0, 100_000))
    assert errors == [] and len(served) >= 50
    note_0021(conn, 0)
    queries.note_capped(conn, day=DAY, cap=CAP, phone_e164=13052000000, form_type="credit_card", at_utc=AT)
    queries.note_capped(conn, day=DAY, cap=CAP, phone_e164=13052000000, form_type="home_loan", at_utc=AT)
    conn.commit()
    report = {row["form_type"]: row for row in contact_caps.report(conn, DAY, DAY)}
    assert sum(row["leads_held"] for row in report.values()) == 2 * NUMBERS + len(served) + 3, "no hold lost"
    assert report["home_loan"]["numbers"] == NUMBERS and report["credit_card"]["numbers"] >= 1
    with conn.cursor() as cur:
        cur.execute("SELECT form_type, leads_held FROM dialerapi_contact_capped WHERE phone_e164 = 13052000000"
                    " AND form_type = 'credit_card'")
        assert cur.fetchone()["leads_held"] >= 2, "after the migration each form_type counts its own holds"
    conn.commit()


def test_0022_rolls_back_summing_a_numbers_rows(floor_0021):
    url, conn = floor_0021
    apply_until(url, "0022")
    queries.note_capped(conn, day=DAY, cap=CAP, phone_e164=13052000000, form_type="credit_card", at_utc=AT)
    conn.commit()
    roll_back(url, "0022.capped-by-form-type")
    with conn.cursor() as cur:
        cur.execute("SELECT COUNT(*) AS n, SUM(leads_held) AS held FROM dialerapi_contact_capped")
        assert cur.fetchone() == {"n": NUMBERS, "held": 2 * NUMBERS + 1}
    conn.commit()
    note_0021(conn, 1)
