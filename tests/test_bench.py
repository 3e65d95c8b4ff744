"""The lead-push benchmark's reference (bench/reference_app.py) must make the service's writes and
take its locks, or the ratio `make bench` prints compares unlike work (README "Performance")."""

import importlib.util
from pathlib import Path

import pytest

from test_push import lead

COMPARED = ("oli_id", "phone_number", "client_name", "form_type", "priority_id", "dial_status", "disposeRemark",
            "last_dial_result", "hangup_by", "hangup_cause", "last_attempt_at", "first_attempt_at", "next_retry_at",
            "callback_scheduled_at", "call_count", "isReserved")


@pytest.fixture
def reference(database_url, monkeypatch):
    monkeypatch.setenv("DATABASE_URL", database_url)
    path = Path(__file__).resolve().parent.parent / "bench" / "reference_app.py"
    spec = importlib.util.spec_from_file_location("reference_app", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    yield module.app.test_client()
    if hasattr(module.local, "conn"):
        module.local.conn.close()


def rows(sql):
    return sql("SELECT " + ", ".join(COMPARED) + " FROM sales_master ORDER BY oli_id")


def batch(tag):
    return {"leads": [lead(f"B-{i}", client_name=f"प्रिया {tag} {i}", phone_number=f"+91 98765-{i:05d}")
                      for i in range(20)]}


def test_the_reference_writes_what_the_service_writes(client, auth, reference, sql):
    # frozen_clock's 10:00 is inside the work window: the push reset the reference hard-codes.
    assert client.post("/api/leads", json=batch("new"), headers=auth).status_code == 201
    assert client.post("/api/leads", json=batch("update"), headers=auth).status_code == 201
    by_service = rows(sql)
    sql("DELETE FROM sales_master")
    assert reference.post("/push", json=batch("new")).status_code == 201
    assert reference.post("/push", json=batch("update")).status_code == 201
    assert rows(sql) == by_service


def test_the_reference_locks_the_batch_before_writing(reference, sql):
    def selects():
        return int(sql.one("SHOW GLOBAL STATUS LIKE 'Com_select'")["Value"])

    before = selects()
    assert reference.post("/push", json=batch("new")).status_code == 201
    assert selects() - before >= 1
