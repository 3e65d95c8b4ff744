"""Migration 0012 (issue #30) tried on a populated floor, with the previous release still serving.

Hosts upgrade one at a time: the previous release's push and claim statements run on the new
schema, and rows they write (no phone_e164, do_not_call 0, call_zone_id 0) are held to the new
rules by the claim itself (rules/claim_checks.refusal). decisions.md D1: a fresh database and an
upgraded one end identical (tests/test_setup.py holds that for every migration).
"""

import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta

import pymysql
import pytest
from yoyo import get_backend, read_migrations

from conftest import SECRET, TZ, cli, make_app, set_clock
from dialerapi.plumbing import migrate
from dialerapi.plumbing.db import connect, get_db
from dialerapi.rules.compliance import claim_checks, do_not_call
from dialerapi.rules.config import dialer as dialer_config
from dialerapi.rules.dialing import claims
from dialerapi.rules.leads import push
from dialerapi.upkeep import jobs

# Each module here takes 8 s or more (setup.cfg `slow`): handed out first in a parallel run.
pytestmark = pytest.mark.slow

NOW = datetime(2026, 11, 21, 10, 0, 0)
LEADS = 20000

# The previous release's lead upsert and its claim's Pending candidates, as it sends them.
PREVIOUS_UPSERT = """INSERT INTO sales_master
  (oli_id, data_id, phone_number, client_name, form_type, priority_id, dial_status, disposeRemark,
   last_dial_result, hangup_by, hangup_cause, last_attempt_at, first_attempt_at, next_retry_at,
   callback_scheduled_at, call_count, isReserved, created_at, updated_at)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)
ON DUPLICATE KEY UPDATE
  data_id = VALUES(data_id), phone_number = VALUES(phone_number), client_name = VALUES(client_name),
  form_type = VALUES(form_type), priority_id = VALUES(priority_id), dial_status = VALUES(dial_status),
  next_retry_at = VALUES(next_retry_at), call_count = VALUES(call_count), isReserved = VALUES(isReserved),
  updated_at = VALUES(updated_at)"""
PREVIOUS_PENDING = """SELECT 2 AS bucket, id, next_retry_at AS due FROM sales_master
 WHERE dial_status = 'Pending' AND isReserved = 0 AND form_type = %s
   AND (next_retry_at <= %s OR next_retry_at IS NULL)
 ORDER BY next_retry_at, id LIMIT 5"""
# The 0012 release's candidate read, with both rules on (the release after it reads migration 0013's
# indexes: tests/test_migration_claim_index.py).
CANDIDATES_0012 = """(SELECT 1 AS bucket, id, callback_scheduled_at AS due FROM sales_master
 WHERE %(callbacks_open)s AND dial_status = 'Callback' AND isReserved = 0 AND form_type = %(form_type)s
   AND (callback_scheduled_at IS NULL OR callback_scheduled_at <= %(now)s)
   AND (%(all_priorities)s OR priority_id IN %(priorities)s)
   AND do_not_call = 0 AND (%(any_zone)s OR call_zone_id IN %(zone_ids)s)
 ORDER BY callback_scheduled_at, id LIMIT %(max_rows)s)
UNION ALL
(SELECT 2 AS bucket, id, next_retry_at AS due FROM sales_master
 WHERE dial_status = 'Pending' AND isReserved = 0 AND form_type = %(form_type)s
   AND (next_retry_at <= %(now)s OR next_retry_at IS NULL)
   AND (%(all_priorities)s OR priority_id IN %(priorities)s)
   AND do_not_call = 0 AND (%(any_zone)s OR call_zone_id IN %(zone_ids)s)
 ORDER BY next_retry_at, id LIMIT %(max_rows)s)
UNION ALL
(SELECT 3 AS bucket, id, next_retry_at AS due FROM sales_master
 WHERE dial_status = 'Abandoned' AND isReserved = 0 AND form_type = %(form_type)s
   AND (next_retry_at <= %(now)s OR next_retry_at IS NULL)
   AND (%(all_priorities)s OR priority_id IN %(priorities)s)
   AND do_not_call = 0 AND (%(any_zone)s OR call_zone_id IN %(zone_ids)s)
 ORDER BY next_retry_at, id LIMIT %(max_rows)s)
UNION ALL
(SELECT 4 AS bucket, id, next_retry_at AS due FROM sales_master
 WHERE dial_status = 'Not Connected' AND isReserved = 0 AND form_type = %(form_type)s
   AND next_retry_at <= %(now)s
   AND (%(all_priorities)s OR priority_id IN %(priorities)s)
   AND do_not_call = 0 AND (%(any_zone)s OR call_zone_id IN %(zone_ids)s)
 ORDER BY next_retry_at, id LIMIT %(max_rows)s)"""


def lead_rows(start, count, phone):
    return [(f"F-{i:06d}", str(uuid.uuid4()), phone(i), "Customer", "home_loan", 2, "Pending", None, None, None,
             None, None, None, None, None, 0, 0, NOW, NOW) for i in range(start, start + count)]


def apply_until(url, last):
    """Apply the migrations up to and including the one whose id starts with `last` (a release's schema)."""
    backend = get_backend(url)
    with backend.lock():
        migrations = read_migrations(str(migrate.MIGRATIONS_DIR)).filter(lambda m: m.id[:len(last)] <= last)
        backend.apply_migrations(backend.to_apply(migrations))
    backend.connection.close()


@pytest.fixture
def populated(fresh_database):
    """The schema of the previous release (migrations up to 0011), with LEADS leads and an agent."""
    apply_until(fresh_database, "0011")
    migrate.seed(fresh_database)
    conn = connect(fresh_database)
    with conn.cursor() as cur:
        cur.executemany(PREVIOUS_UPSERT, lead_rows(0, LEADS, lambda i: f"9198765{i:05d}"))
        cur.execute("INSERT INTO sales_agents (id, extension, name, panel_active, ami_idle) VALUES (501, '4501', 'A', 1, 1)")
        cur.execute("INSERT INTO sales_agent_skills (agent_id, form_type) VALUES (501, 'home_loan')")
    conn.commit()
    yield fresh_database, conn
    conn.close()


def test_0012_on_a_populated_floor_keeps_every_lead_and_the_previous_release_serving(populated):
    url, conn = populated
    assert migrate.pending(url)[0] == "0012.do-not-call"
    apply_until(url, "0012")
    with conn.cursor() as cur:
        cur.execute("SELECT COUNT(*) AS n, SUM(phone_e164 IS NULL) AS unknown, SUM(do_not_call) AS listed,"
                    " SUM(call_zone_id) AS zoned FROM sales_master")
        assert cur.fetchone() == {"n": LEADS, "unknown": LEADS, "listed": 0, "zoned": 0}
        # The previous release, on a host not yet upgraded: its push writes, its claim reads in
        # due order through the new index, without sorting the table.
        cur.executemany(PREVIOUS_UPSERT, lead_rows(LEADS, 10, lambda i: "919876543210"))
        cur.execute("EXPLAIN " + PREVIOUS_PENDING, ("home_loan", NOW))
        plan = cur.fetchall()
        assert [row["key"] for row in plan] == ["ix_claim_retry_v2"] and "filesort" not in str(plan[0]["Extra"])
        cur.execute(PREVIOUS_PENDING, ("home_loan", NOW))
        assert len(cur.fetchall()) == 5
        # The 0012 release's candidates, with both rules on, read the same indexes in the same order.
        cur.execute("EXPLAIN " + CANDIDATES_0012, {
            "callbacks_open": True, "form_type": "home_loan", "now": NOW, "all_priorities": True,
            "priorities": (0,), "any_zone": False, "zone_ids": (0, 1, 2), "max_rows": 5})
        plan = [row for row in cur.fetchall() if row["table"] == "sales_master"]
        assert len(plan) == 4 and {row["key"] for row in plan} == {"ix_claim_retry_v2", "ix_claim_callback_v2"}
        assert not [row for row in plan if "filesort" in str(row["Extra"])], plan
    conn.commit()


def test_leads_the_previous_release_wrote_are_held_to_the_list_by_the_claim(populated):
    url, conn = populated
    migrate.upgrade(url)
    with conn.cursor() as cur:
        # The first leads in claim order carry a number the list will hold, in the previous release's digits.
        cur.execute("UPDATE sales_master SET phone_number = '919876543210' WHERE oli_id < 'F-000010'")
    conn.commit()
    app = make_app(url, DB_TIMEZONE=TZ.key, WS_SECRET=SECRET)
    with app.app_context():
        db = get_db()
        db.run(do_not_call.add, [919876543210], "cli", NOW)
        got = db.run(claims.claim_next, 501, NOW, tz=TZ)
    assert got["oli_id"] == "F-000010"
    with conn.cursor() as cur:
        cur.execute("SELECT COUNT(*) AS n FROM sales_master WHERE oli_id < 'F-000010' AND do_not_call = 1"
                    " AND phone_e164 = 919876543210 AND isReserved = 0")
        assert cur.fetchone()["n"] == 10


def apply_while_serving(url, last, serve, numbers, minimum=50):
    """Apply the migrations up to `last` while the previous release serves: `serve(conn, n)` for each
    n of `numbers` in turn on a connection of its own, until the migration is done and at least
    `minimum` were served. Returns (the numbers served, the errors the previous release met)."""
    served, errors, done = [], [], threading.Event()

    def previous_release():
        other = connect(url)
        try:
            for n in numbers:
                if done.is_set() and len(served) >= minimum:
                    return
                try:
                    serve(other, n)
                    served.append(n)
                except pymysql.MySQLError as exc:
                    errors.append(repr(exc))
                    other.rollback()
        finally:
            other.close()

    worker = threading.Thread(target=previous_release)
    worker.start()
    try:
        apply_until(url, last)
    finally:
        done.set()
        worker.join(timeout=120)
    return served, errors


def roll_back(url, migration_id):
    backend = get_backend(url)
    with backend.lock():
        migrations = read_migrations(str(migrate.MIGRATIONS_DIR))
        backend.rollback_migrations(backend.to_rollback(migrations.filter(lambda m: m.id == migration_id)))
    backend.connection.close()


def roll_back_through(url, migration_id):
    """Roll back every migration after `migration_id` (newest first), then it: the schema of the
    release before it."""
    names = sorted(path.name.removesuffix(".sql") for path in migrate.MIGRATIONS_DIR.glob("*.sql")
                   if not path.name.endswith(".rollback.sql"))
    for name in [name for name in reversed(names) if name > migration_id] + [migration_id]:
        roll_back(url, name)


def test_0012_rolls_back_to_the_previous_schema(populated):
    url, conn = populated
    apply_until(url, "0012")
    roll_back(url, "0012.do-not-call")
    with conn.cursor() as cur:
        with pytest.raises(pymysql.err.OperationalError):
            cur.execute("SELECT phone_e164 FROM sales_master LIMIT 1")
        cur.execute("SELECT COUNT(*) AS n FROM sales_master")
        assert cur.fetchone()["n"] == LEADS


@pytest.mark.long
def test_the_backfill_works_out_every_lead_the_previous_release_wrote_but_a_live_one(populated, sql_session):
    """`dialerapi dnc backfill` after the upgrade: each lead gets its E.164 number, its mark and its
    call zone as a push would give them, so the claim indexes leave listed and sleeping ones out."""
    url, conn = populated
    migrate.upgrade(url)
    with conn.cursor() as cur:
        cur.execute("UPDATE sales_master SET dial_status = 'Calling', isReserved = 1 WHERE oli_id = 'F-000001'")
    conn.commit()
    app = make_app(url, DB_TIMEZONE=TZ.key, WS_SECRET=SECRET)
    with app.app_context():
        get_db().run(do_not_call.add, [919876500007], "cli", NOW)
    result = cli(url, "dnc", "backfill")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"{LEADS - 1:,} leads worked out"
    with conn.cursor() as cur:
        cur.execute("SELECT oli_id, phone_e164, do_not_call, z.zones FROM sales_master AS m"
                    " LEFT JOIN dialerapi_call_zones AS z ON z.id = m.call_zone_id"
                    " WHERE oli_id IN ('F-000001', 'F-000002', 'F-000007')")
        rows = {row.pop("oli_id"): row for row in cur.fetchall()}
        cur.execute("SELECT COUNT(*) AS n FROM sales_master WHERE phone_e164 = 919876500000 + CAST(SUBSTR(oli_id, 3) AS"
                    " UNSIGNED) AND call_zone_id <> 0")
        assert cur.fetchone()["n"] == LEADS - 1
    conn.commit()
    assert rows == {"F-000001": {"phone_e164": None, "do_not_call": 0, "zones": None},
                    "F-000002": {"phone_e164": 919876500002, "do_not_call": 0, "zones": "Asia/Calcutta;@IN"},
                    "F-000007": {"phone_e164": 919876500007, "do_not_call": 1, "zones": "Asia/Calcutta;@IN"}}


@pytest.mark.long
def test_the_job_works_out_a_batch_a_tick(populated):
    url, conn = populated
    migrate.upgrade(url)
    app = make_app(url, DB_TIMEZONE=TZ.key, WS_SECRET=SECRET)
    set_clock(NOW)
    assert jobs.phone_facts_tick(app) == 2000
    assert jobs.phone_facts_tick(app) is None  # this tick is taken
    set_clock(NOW + timedelta(seconds=jobs.PHONE_FACTS_SECONDS))
    assert jobs.phone_facts_tick(app) == 2000
    with conn.cursor() as cur:
        cur.execute("SELECT COUNT(*) AS n FROM sales_master WHERE call_zone_id <> 0")
        assert cur.fetchone()["n"] == 4000
    conn.commit()


@pytest.mark.long
def test_pushes_racing_the_backfill_leave_every_lead_s_facts_those_of_its_phone(populated):
    """16 actors released at once: 8 push new phones for the legacy leads (Kolkata numbers become
    New York ones) while 8 run the backfill; afterwards every lead's facts are its own phone's."""
    url, conn = populated
    migrate.upgrade(url)
    app = make_app(url, DB_TIMEZONE=TZ.key, WS_SECRET=SECRET)
    gate = threading.Barrier(16)

    def pusher(k):
        leads = [{"oli_id": f"F-{i:06d}", "phone_number": f"1212555{i % 10000:04d}", "client_name": "Customer",
                  "form_type": "home_loan", "priority_id": 2, "callback_scheduled_at": None,
                  "callback_scheduled_at_sent": None} for i in range(k, LEADS, 8)]
        with app.app_context():
            db = get_db()
            gate.wait()
            for start in range(0, len(leads), 500):
                db.run(lambda c: push.push_leads(c, leads[start:start + 500], NOW, TZ, dialer_config.load_config(c)))

    def backfill(_):
        with app.app_context():
            db = get_db()
            gate.wait()
            while db.run(lambda c: claim_checks.work_out_leads(c, dialer_config.load_config(c), max_rows=500)):
                pass

    with ThreadPoolExecutor(16) as pool:
        list(pool.map(lambda k: pusher(k) if k < 8 else backfill(k), range(16)))
    with conn.cursor() as cur:
        cur.execute("SELECT m.phone_number, m.phone_e164, m.do_not_call, z.zones FROM sales_master AS m"
                    " JOIN dialerapi_call_zones AS z ON z.id = m.call_zone_id")
        rows = cur.fetchall()
    conn.commit()
    assert len(rows) == LEADS
    for row in rows:
        assert row["phone_e164"] == int(row["phone_number"]) and not row["do_not_call"], row
        # The calling profile (issue #68): the number's zones, then its region.
        assert row["zones"] == ("America/New_York;@US-NY" if row["phone_number"].startswith("1")
                                else "Asia/Calcutta;@IN"), row
