"""The lead-push benchmark's reference (bench/reference_app.py) must make the service's writes and
take its locks, or the ratio `make bench` prints compares unlike work (docs/performance.md "Performance")."""

import importlib.util
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from conftest import make_app
from dialerapi.plumbing import clock
from test_push import lead

COMPARED = ("oli_id", "phone_number", "client_name", "form_type", "priority_id", "dial_status", "disposeRemark",
            "last_dial_result", "hangup_by", "hangup_cause", "last_attempt_at", "first_attempt_at", "next_retry_at",
            "callback_scheduled_at", "call_count", "isReserved", "phone_e164", "do_not_call", "call_zone_id")


@pytest.fixture
def reference(database_url, monkeypatch):
    monkeypatch.setenv("DATABASE_URL", database_url)
    path = Path(__file__).resolve().parent.parent / "bench" / "reference_app.py"
    spec = importlib.util.spec_from_file_location("reference_app", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    # Its "now" is the service's one clock (D2), which each test freezes.
    monkeypatch.setattr(module, "utcnow", clock.utcnow)
    client = module.app.test_client()
    client.module = module
    yield client
    if hasattr(module.local, "conn"):
        module.local.conn.close()


def rows(sql):
    return sql("SELECT " + ", ".join(COMPARED) + " FROM sales_master ORDER BY oli_id")


def batch(tag):
    """20 leads: Indian numbers, every fifth a New York one (another call zone)."""
    return {"leads": [lead(f"B-{i}", client_name=f"प्रिया {tag} {i}",
                           phone_number=f"+1 212 555 01{i:02d}" if i % 5 == 0 else f"+91 98765-{i:05d}")
                      for i in range(20)]}


@pytest.mark.parametrize("now", [datetime(2026, 11, 21, 10, 0), datetime(2026, 11, 21, 22, 0),
                                 datetime(2026, 11, 21, 8, 59, 59), datetime(2026, 11, 21, 21, 0)])
def test_the_reference_writes_what_the_service_writes(database_url, auth, reference, sql, frozen_clock, now):
    """Inside the work window (next_retry_at NULL) and outside it (the next work_start, today's or
    tomorrow's), in UTC, the zone the benchmark runs in and the only one the reference knows (#33)."""
    frozen_clock(now, ZoneInfo("UTC"))
    sql("INSERT INTO dialerapi_dnc (phone, source, added_at) VALUES (919876500003, 'cli', %s), "
        "(12125550110, 'cli', %s)", now, now)
    client = make_app(database_url, DB_TIMEZONE="UTC").test_client()
    assert client.post("/api/leads", json=batch("new"), headers=auth).status_code == 201
    assert client.post("/api/leads", json=batch("update"), headers=auth).status_code == 201
    by_service = rows(sql)
    sql("DELETE FROM sales_master")
    assert reference.post("/push", json=batch("new")).status_code == 201
    assert reference.post("/push", json=batch("update")).status_code == 201
    assert rows(sql) == by_service
    assert {row["do_not_call"] for row in by_service} == {0, 1} and len({row["call_zone_id"] for row in by_service}) == 2


def test_the_reference_locks_the_batch_before_writing(reference, sql):
    def selects():
        return int(sql.one("SHOW GLOBAL STATUS LIKE 'Com_select'")["Value"])

    before = selects()
    assert reference.post("/push", json=batch("new")).status_code == 201
    assert selects() - before >= 1



def test_the_comparison_fails_when_the_reference_writes_otherwise(database_url, auth, reference, sql, frozen_clock,
                                                                  monkeypatch):
    """The check above has teeth: a reference that always wrote next_retry_at NULL (the one before
    issue #33) differs from the service outside working hours."""
    frozen_clock(datetime(2026, 11, 21, 22, 0), ZoneInfo("UTC"))
    assert make_app(database_url, DB_TIMEZONE="UTC").test_client().post(
        "/api/leads", json=batch("new"), headers=auth).status_code == 201
    by_service = rows(sql)
    sql("DELETE FROM sales_master")
    monkeypatch.setattr(reference.module, "next_retry_at", lambda now, start, end: None)
    assert reference.post("/push", json=batch("new")).status_code == 201
    assert rows(sql) != by_service


def test_the_raw_reference_writes_the_same_rows_but_their_phone_facts(database_url, auth, reference, sql,
                                                                      frozen_clock):
    """POST /raw (issue #51), the database's own speed that a new-lead push is held to: inside the
    work window it writes the rows the service writes, every column but the phone facts it does not
    work out (phone_e164 the digits, do_not_call 0, call_zone_id 0)."""
    frozen_clock(datetime(2026, 11, 21, 10, 0), ZoneInfo("UTC"))
    assert make_app(database_url, DB_TIMEZONE="UTC").test_client().post(
        "/api/leads", json=batch("new"), headers=auth).status_code == 201
    by_service = rows(sql)
    sql("DELETE FROM sales_master")
    assert reference.post("/raw", json=batch("new")).status_code == 201
    facts = ("phone_e164", "do_not_call", "call_zone_id")
    raw = rows(sql)
    assert [{k: v for k, v in row.items() if k not in facts} for row in raw] == \
        [{k: v for k, v in row.items() if k not in facts} for row in by_service]
    assert [(row["phone_e164"], row["do_not_call"], row["call_zone_id"]) for row in raw] == \
        [(int(row["phone_number"]), 0, 0) for row in by_service]
