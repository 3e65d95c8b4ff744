"""Migration 0013 (issue #30: claims that cost the same at any hour) tried on a populated floor,
with the previous release still serving.

Hosts upgrade one at a time: the 0012 release's claim reads its own indexes (kept) on the new
schema, and what it and this release read agree; the generated columns are invisible, so the
engine's and reports' `SELECT *` and column-less INSERT see the table as before. decisions.md D1:
a fresh database and an upgraded one end identical (tests/test_setup.py, for every migration).
"""

import uuid

import pymysql
import pytest
from test_migration_dnc import CANDIDATES_0012, NOW, apply_until, roll_back

from dialerapi.plumbing import migrate
from dialerapi.plumbing.db import connect, queries
from dialerapi.rules.config import dialer as dialer_config
from dialerapi.rules.dialing import candidates

# Each module here takes 8 s or more (setup.cfg `slow`): handed out first in a parallel run.
# Over 10 s each with its populated floor (issue #63): make faults runs them, not make test.
pytestmark = [pytest.mark.slow, pytest.mark.long]

LEADS = 20000
STATUSES = ("Pending", "Callback", "Abandoned", "Not Connected", "Received", "Disposed", "Rejected", "Calling")
CLAIM_ORDER = ("Callback", "Pending", "Abandoned", "Not Connected")  # Claim and retry rules 3
# Kolkata mobiles in call zone 1, a tenth of them listed.
UPSERT_0012 = """INSERT INTO sales_master
  (oli_id, data_id, phone_number, client_name, form_type, priority_id, phone_e164, do_not_call, call_zone_id,
   dial_status, next_retry_at, callback_scheduled_at, call_count, isReserved, created_at, updated_at)
VALUES (%s, %s, %s, 'Customer', 'home_loan', 2, %s, %s, 1, %s, NULL, NULL, 0, %s, %s, %s)"""


def lead_rows(count):
    rows = []
    for i in range(count):
        status = STATUSES[i % len(STATUSES)]
        phone = 919800000000 + i
        rows.append((f"F-{i:06d}", str(uuid.uuid4()), str(phone), phone, int(i % 10 == 3), status,
                     int(status == "Calling"), NOW, NOW))
    return rows


@pytest.fixture
def floor_0012(fresh_database):
    """The 0012 release's schema with LEADS leads in every status, as its push and claims leave them."""
    apply_until(fresh_database, "0012")
    migrate.seed(fresh_database)
    conn = connect(fresh_database)
    with conn.cursor() as cur:
        cur.executemany(UPSERT_0012, lead_rows(LEADS))
        cur.execute("INSERT INTO dialerapi_call_zones (id, zones_key, zones) VALUES (1, SHA1('Asia/Calcutta'),"
                    " 'Asia/Calcutta')")
    conn.commit()
    yield fresh_database, conn
    conn.close()


def candidates_0012(cur, **params):
    cur.execute(CANDIDATES_0012, {"callbacks_open": True, "form_type": "home_loan", "now": NOW, "all_priorities": True,
                                  "priorities": (0,), "any_zone": False, "zone_ids": (0, 1), "max_rows": 5, **params})
    return cur.fetchall()


def test_0013_on_a_populated_floor_keeps_every_lead_and_the_previous_release_serving(floor_0012):
    url, conn = floor_0012
    with conn.cursor() as cur:
        cur.execute("SELECT * FROM sales_master ORDER BY id LIMIT 1")
        columns_before = list(cur.fetchone())
        before = candidates_0012(cur)
    conn.commit()
    assert migrate.pending(url)[0] == "0013.claim-by-zone"
    migrate.upgrade(url)
    with conn.cursor() as cur:
        cur.execute("SELECT COUNT(*) AS n FROM sales_master")
        assert cur.fetchone()["n"] == LEADS
        # Invisible: the engine's SELECT * and column-less INSERT see the table as before.
        cur.execute("SELECT * FROM sales_master ORDER BY id LIMIT 1")
        assert list(cur.fetchone()) == columns_before
        cur.execute("INSERT INTO sales_master SELECT * FROM sales_master WHERE oli_id = 'F-000000'"
                    " ON DUPLICATE KEY UPDATE client_name = VALUES(client_name)")
        # Each lead's bucket, as claim order and the locks have it.
        cur.execute("SELECT dial_status, isReserved, do_not_call, claim_bucket, COUNT(*) AS n FROM sales_master"
                    " GROUP BY dial_status, isReserved, do_not_call, claim_bucket")
        for row in cur.fetchall():
            claimable = not row["isReserved"] and not row["do_not_call"] and row["dial_status"] in CLAIM_ORDER
            assert row["claim_bucket"] == (CLAIM_ORDER.index(row["dial_status"]) + 1 if claimable else None), row
        # The previous release, on a host not yet upgraded: its claim reads its own indexes in due
        # order, without sorting, and finds what it found before.
        cur.execute("EXPLAIN " + CANDIDATES_0012, {
            "callbacks_open": True, "form_type": "home_loan", "now": NOW, "all_priorities": True,
            "priorities": (0,), "any_zone": False, "zone_ids": (0, 1), "max_rows": 5})
        plan = [row for row in cur.fetchall() if row["table"] == "sales_master"]
        assert {row["key"] for row in plan} == {"ix_claim_retry_v2", "ix_claim_callback_v2"}
        assert not [row for row in plan if "filesort" in str(row["Extra"])], plan
        assert candidates_0012(cur) == before
    conn.commit()
    # This release reads the new indexes, without sorting, and the same leads in the same order.
    config = dialer_config.load_config(conn)
    common = {"part": 0, "form_type": "home_loan", "now": NOW, "callbacks_open": True, "all_priorities": True,
              "priorities": (0,), "max_rows": 40, "fallback_never": False, "fallback_edge": NOW}
    for query, params, index in ((queries.due_candidates, {"any_zone": False, "zone_ids": (0, 1)}, "ix_claim_due"),
                                 (queries.due_candidates_in_zone, {"zone_id": 1}, "ix_claim_zone")):
        with conn.cursor() as cur:
            cur.execute("EXPLAIN " + query.sql, {**common, **params})
            plan = [row for row in cur.fetchall() if row["table"] == "sales_master"]
        assert [row["key"] for row in plan] == [index] and "filesort" not in str(plan[0]["Extra"]), plan
    for zones in (None, (0, 1)):
        ids, _ = candidates.due(conn, [("home_loan", [])], NOW, config, 5, zones)
        assert ids[:5] == [row["id"] for row in before][:5]


def test_0013_rolls_back_to_the_0012_schema(floor_0012):
    url, conn = floor_0012
    migrate.upgrade(url)
    roll_back(url, "0013.claim-by-zone")
    with conn.cursor() as cur:
        with pytest.raises(pymysql.err.OperationalError):
            cur.execute("SELECT claim_bucket FROM sales_master LIMIT 1")
        cur.execute("SELECT COUNT(*) AS n FROM sales_master")
        assert cur.fetchone()["n"] == LEADS
        assert len(candidates_0012(cur)) == 5 * 3
