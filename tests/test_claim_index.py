"""The claim's candidate reads (migration 0013, issue #30): every lead a claim may take, in claim
order, whichever way they are read, and a closed call zone or a listed phone costs the claim
nothing however many of their leads are due first.

lead-intake-api.md "Claim and retry rules" 1-3 (due times, claim order: due Callback, Pending,
Abandoned, Not Connected); decisions.md D2 (now is the service clock's). The candidates are read
from the generated columns claim_bucket and claim_due, so the grid below holds those columns to
transitions.is_due for every status, reservation, mark and due time an engine could leave in a row.
"""

import itertools
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import datetime, time, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest

from conftest import TZ
from dialerapi.plumbing import clock
from dialerapi.plumbing.db import get_db
from dialerapi.rules.compliance import do_not_call
from dialerapi.rules.config import dialer as dialer_config
from dialerapi.rules.dialing import candidates, claims
from dialerapi.rules.leads import transitions

NOW = datetime(2026, 11, 21, 10, 0, 0)
STATUSES = ("Pending", "Callback", "Calling", "Received", "Not Connected", "Disposed", "Rejected", "Abandoned")
CLAIM_ORDER = ("Callback", "Pending", "Abandoned", "Not Connected")
TIMES = (None, NOW - timedelta(hours=1), NOW, NOW + timedelta(seconds=1))
ZONE = 7
UTC = timezone.utc


def claim_order_key(row):
    due = row["callback_scheduled_at"] if row["dial_status"] == "Callback" else row["next_retry_at"]
    return CLAIM_ORDER.index(row["dial_status"]), due is not None, due or NOW, row["id"]


@pytest.fixture
def grid(sql):
    """One lead of form_type grid for every status, isReserved, do_not_call, callback_scheduled_at and
    next_retry_at, written as an engine's own SQL could leave it; returns the rows."""
    combos = list(itertools.product(STATUSES, (0, 1), (0, 1), TIMES, TIMES))
    with sql.conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO sales_master (oli_id, data_id, phone_number, client_name, form_type, priority_id, dial_status,"
            " isReserved, do_not_call, callback_scheduled_at, next_retry_at, call_zone_id, created_at, updated_at)"
            " VALUES (%s, UUID(), '919876543210', 'Customer', 'grid', 2, %s, %s, %s, %s, %s, %s, %s, %s)",
            [(f"G-{n:03d}", *combo, ZONE, NOW, NOW) for n, combo in enumerate(combos)])
    return sql("SELECT * FROM sales_master WHERE form_type = 'grid'")


@pytest.fixture(autouse=True)
def no_memory(monkeypatch):
    """Each test starts with no form_type read zone by zone (candidates._by_zone)."""
    monkeypatch.setattr(candidates, "_by_zone", {})


@pytest.mark.parametrize("callbacks_open", [True, False])
@pytest.mark.parametrize("read", ["window off", "head", "zone by zone"])
def test_the_candidates_are_every_due_unlisted_unreserved_lead_in_claim_order(sql, grid, callbacks_open, read,
                                                                             monkeypatch):
    config = dialer_config.load_config(sql.conn)
    # Callbacks wait for the work window when outbound_obey_work_hours = 1 (rule 2): NOW is outside 11-12.
    config = replace(config, outbound_obey_work_hours=not callbacks_open, work_start=time(11), work_end=time(12))
    zones = None if read == "window off" else (0, ZONE)
    if read == "zone by zone":
        monkeypatch.setattr(candidates, "_by_zone", {"grid": (0, ZONE)})
    expected = sorted((row for row in grid if transitions.is_due(row, NOW, config) and not row["do_not_call"]),
                      key=claim_order_key)
    assert expected and {row["dial_status"] for row in expected} == set(CLAIM_ORDER) - ({"Callback"} - (
        {"Callback"} if callbacks_open else set()))
    ids, complete = candidates.due(sql.conn, [("grid", [])], NOW, config, len(grid), zones)
    assert complete
    assert ids == [row["id"] for row in expected]


@pytest.mark.parametrize("by_zone", [{}, {"grid": (0, ZONE)}])
def test_a_read_cut_at_its_window_says_so(sql, grid, monkeypatch, by_zone):
    monkeypatch.setattr(candidates, "_by_zone", by_zone)
    config = dialer_config.load_config(sql.conn)
    expected = sorted((row for row in grid if transitions.is_due(row, NOW, config) and not row["do_not_call"]),
                      key=claim_order_key)
    ids, complete = candidates.due(sql.conn, [("grid", [])], NOW, config, 3, (0, ZONE))
    assert len(ids) >= 3 and not complete
    assert ids == [row["id"] for row in expected][:len(ids)]


def index_reads(app, work, *args, **kwargs):
    """Run `work(conn, ...)` in a transaction of the app and return (its result, the index entries it
    read: the server's Handler_read_key + Handler_read_next of that connection)."""
    def read(conn):
        with conn.cursor() as cur:
            cur.execute("SHOW SESSION STATUS LIKE 'Handler_read%%'")
            before = {row["Variable_name"]: int(row["Value"]) for row in cur.fetchall()}
            result = work(conn, *args, **kwargs)
            cur.execute("SHOW SESSION STATUS LIKE 'Handler_read%%'")
            after = {row["Variable_name"]: int(row["Value"]) for row in cur.fetchall()}
        return result, sum(after[name] - before[name] for name in ("Handler_read_key", "Handler_read_next"))

    with app.app_context():
        return get_db().run(read)


AHEAD = 1000


@pytest.fixture
def crowd(client, auth, floor_agent, sql):
    """AHEAD leads due first (Not Connected since 2026-01-01) on New York numbers, then one Kolkata lead
    due later, all form_type home_loan, pushed as a CRM does; the window obeyed."""
    floor_agent()
    sql("UPDATE sales_dialer_config SET obey_calling_window = 1")
    clock.set_utc_source(lambda: datetime(2026, 11, 21, 12, 0, tzinfo=UTC))
    for start in range(0, AHEAD, 500):
        leads = [{"oli_id": f"NY-{n:04d}", "phone_number": f"+1 212 555 {n:04d}", "client_name": "Customer",
                  "form_type": "home_loan", "priority_id": 2} for n in range(start, start + 500)]
        assert client.post("/api/leads", json={"leads": leads}, headers=auth).status_code == 201
    body = {"oli_id": "IN", "phone_number": "+91 98765 43210", "client_name": "Customer", "form_type": "home_loan",
            "priority_id": 2}
    assert client.post("/api/leads", json=body, headers=auth).status_code == 201
    sql("UPDATE sales_master SET dial_status = 'Not Connected', next_retry_at = '2026-01-01 00:00:00'"
        " WHERE oli_id LIKE 'NY-%%'")
    sql("UPDATE sales_master SET dial_status = 'Not Connected', next_retry_at = '2026-06-01 00:00:00'"
        " WHERE oli_id = 'IN'")


def claim_at(app, moment):
    now = moment.astimezone(TZ).replace(tzinfo=None)
    row, reads = index_reads(app, claims.claim_next, 501, now, tz=TZ)
    return (row and row["oli_id"]), reads


def test_a_thousand_leads_of_a_closed_zone_due_first_cost_the_claim_nothing(app, crowd):
    """Noon in Kolkata is 01:30 in New York: the claim reads the open zones' first leads, never the
    thousand sleeping ones ahead of them in due order (the candidate read of 0012 read every one)."""
    noon_in_kolkata = datetime(2026, 11, 23, 12, 0, tzinfo=ZoneInfo("Asia/Kolkata"))
    got, reads = claim_at(app, noon_in_kolkata)
    assert got == "IN"
    assert reads < 200, reads
    got, reads = claim_at(app, noon_in_kolkata)
    assert got is None and reads < 200, reads


def test_a_thousand_listed_leads_due_first_cost_the_claim_nothing(app, crowd, run):
    run(do_not_call.add, [12125550000 + n for n in range(AHEAD)], "cli", NOW)
    ten_in_new_york = datetime(2026, 11, 23, 10, 0, tzinfo=ZoneInfo("America/New_York"))
    got, reads = claim_at(app, ten_in_new_york)  # 20:30 in Kolkata: both open
    assert got == "IN"
    assert reads < 200, reads


def test_leads_of_several_open_zones_are_claimed_in_due_order(client, auth, floor_agent, sql, run):
    """At 15:10 UTC Kolkata (20:40), New York (10:10) and Chicago (09:10) are open, Los Angeles is not:
    the first claim finds a sleeping lead first in due order, and four lawful ones after it in its
    window, enough to take them in due order without reading home_loan zone by zone (candidates._enough,
    issue #68); LA's leads are never claimed."""
    floor_agent()
    sql("UPDATE sales_dialer_config SET obey_calling_window = 1")
    clock.set_utc_source(lambda: datetime(2026, 11, 21, 12, 0, tzinfo=UTC))
    phones = {"IN": "+91 98765 4321{}", "NY": "+1 212 555 010{}", "CHI": "+1 312 555 010{}", "LA": "+1 213 555 010{}"}
    leads = [{"oli_id": f"{zone}-{n}", "phone_number": phone.format(n), "client_name": "Customer",
              "form_type": "home_loan", "priority_id": 2} for zone, phone in phones.items() for n in range(3)]
    assert client.post("/api/leads", json={"leads": leads}, headers=auth).status_code == 201
    # Due times interleave the zones: LA-0 is due first of all, and asleep.
    for minute, oli_id in enumerate(["LA-0", "CHI-2", "IN-0", "NY-1", "IN-2", "CHI-0", "NY-0", "IN-1", "NY-2",
                                     "CHI-1", "LA-1", "LA-2"]):
        sql("UPDATE sales_master SET dial_status = 'Not Connected', next_retry_at = %s WHERE oli_id = %s",
            datetime(2026, 11, 23, 0, minute), oli_id)
    now = datetime(2026, 11, 23, 15, 10, tzinfo=UTC).astimezone(TZ).replace(tzinfo=None)
    got = []
    while (row := run(claims.claim_next, 501, now, tz=TZ)) is not None:
        got.append(row["oli_id"])
    assert got == ["CHI-2", "IN-0", "NY-1", "IN-2", "CHI-0", "NY-0", "IN-1", "NY-2", "CHI-1"]


def test_a_form_type_read_zone_by_zone_and_one_read_in_due_order_share_a_statement(app, crowd, client, auth, sql,
                                                                                    floor_agent):
    """home_loan's due order is a thousand sleeping New York leads, then its Kolkata one; car_loan's is
    Kolkata leads due before that one. After the first claim home_loan is read zone by zone, car_loan
    still in due order, in one statement; claim order holds across the two."""
    sql("INSERT INTO sales_agent_skills (agent_id, form_type) VALUES (501, 'car_loan')")
    leads = [{"oli_id": f"CAR-{n}", "phone_number": f"+91 98765 1000{n}", "client_name": "Customer",
              "form_type": "car_loan", "priority_id": 2} for n in range(3)]
    assert client.post("/api/leads", json={"leads": leads}, headers=auth).status_code == 201
    sql("UPDATE sales_master SET dial_status = 'Not Connected', next_retry_at = '2026-03-01 00:00:00'"
        " WHERE form_type = 'car_loan'")
    noon_in_kolkata = datetime(2026, 11, 23, 12, 0, tzinfo=ZoneInfo("Asia/Kolkata"))
    got = [claim_at(app, noon_in_kolkata) for _ in range(5)]
    assert [oli_id for oli_id, _ in got] == ["CAR-0", "CAR-1", "CAR-2", "IN", None]
    assert list(candidates._by_zone) == ["home_loan"]
    assert max(reads for _, reads in got) < 200, got


def test_sixteen_claimers_at_once_take_every_open_zone_lead_once_and_no_sleeping_one(app, client, auth, floor_agent,
                                                                                   sql):
    """16 agents released at once, the window obeyed at noon in Kolkata (01:30 in New York), 40
    Kolkata and 40 New York leads due, the New York ones first: every Kolkata lead is claimed exactly
    once, no New York one is, and no claimer was told "nothing" while a Kolkata lead was left."""
    for agent_id in range(501, 517):
        floor_agent(agent_id)
    sql("UPDATE sales_dialer_config SET obey_calling_window = 1")
    clock.set_utc_source(lambda: datetime(2026, 11, 21, 12, 0, tzinfo=UTC))
    leads = [{"oli_id": f"{zone}-{n:02d}", "phone_number": phone.format(n), "client_name": "Customer",
              "form_type": "home_loan", "priority_id": 2}
             for zone, phone in (("IN", "+91 98765 100{:02d}"), ("NY", "+1 212 555 01{:02d}")) for n in range(40)]
    assert client.post("/api/leads", json={"leads": leads}, headers=auth).status_code == 201
    sql("UPDATE sales_master SET dial_status = 'Not Connected', next_retry_at = IF(oli_id LIKE 'NY-%%',"
        " '2026-01-01 00:00:00', '2026-06-01 00:00:00')")
    now = datetime(2026, 11, 23, 12, 0, tzinfo=ZoneInfo("Asia/Kolkata")).astimezone(TZ).replace(tzinfo=None)
    gate = threading.Barrier(16)

    def claimer(agent_id):
        with app.app_context():
            db = get_db()
            gate.wait()
            got = []
            while (row := db.run(claims.claim_next, agent_id, now, tz=TZ)) is not None:
                got.append(row["oli_id"])
            return got

    with ThreadPoolExecutor(16) as pool:
        claimed = [oli_id for got in pool.map(claimer, range(501, 517)) for oli_id in got]
    assert sorted(claimed) == [f"IN-{n:02d}" for n in range(40)]
    reserved = sql("SELECT oli_id FROM sales_master WHERE dial_status = 'Calling' AND isReserved = 1 ORDER BY oli_id")
    assert [row["oli_id"] for row in reserved] == [f"IN-{n:02d}" for n in range(40)]
