"""Lead push under real conditions: the example CRM batch through gunicorn, the round trips of a
500-lead batch, and concurrent overlapping batches while an engine marks rows live
(lead-intake-api.md POST /api/leads Rules 1-3; decisions.md D4; shared/notes/mysql-performance.md)."""

import json
import random
import re
import threading
from pathlib import Path

import pymysql
import pytest
import requests

from conftest import SECRET
from dialerapi.plumbing.db import connect, queries

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "crm-batch.json"
AUTH = {"Authorization": f"Bearer {SECRET}"}


def test_example_crm_batch_is_stored_exactly_as_sent(live_server, sql):
    batch = json.loads(EXAMPLE.read_text(encoding="utf-8"))
    assert len(batch["leads"]) == 500
    response = requests.post(live_server.url("/api/leads"), data=EXAMPLE.read_bytes(), headers=AUTH, timeout=30)
    assert response.status_code == 201
    entries = response.json()["leads"]
    assert len(entries) == 500 and {e["status"] for e in entries} == {"inserted"}
    rows = {row["oli_id"]: row for row in sql("SELECT * FROM sales_master")}
    assert len(rows) == 500
    scripts = set()
    for sent, entry in zip(batch["leads"], entries, strict=True):
        row = rows[sent["oli_id"]]
        assert row["data_id"] == entry["data_id"]
        assert row["phone_number"] == re.sub(r"[^0-9]", "", str(sent["phone_number"]))
        assert row["client_name"].encode("utf-8") == sent["client_name"].encode("utf-8")
        assert entry["callback_scheduled_at"] == sent.get("callback_scheduled_at")
        assert row["dial_status"] == ("Callback" if sent.get("callback_scheduled_at") else "Pending")
        scripts |= {"devanagari" for c in sent["client_name"] if "\u0900" <= c <= "\u097f"}
        scripts |= {"tamil" for c in sent["client_name"] if "\u0b80" <= c <= "\u0bff"}
        scripts |= {"emoji" for c in sent["client_name"] if ord(c) > 0xFFFF}
    assert scripts == {"devanagari", "tamil", "emoji"}


def test_upsert_statement_is_batched_by_pymysql():
    # A literal in VALUES (...) makes executemany send one INSERT per row (mysql-performance.md).
    assert pymysql.cursors.RE_INSERT_VALUES.match(queries.upsert_leads.sql)


def test_a_500_lead_batch_costs_a_handful_of_statements(client, auth, statements_sent):
    def batch(tag, prefix):
        return {"leads": [
            {"oli_id": f"{prefix}-{i:03d}", "phone_number": f"98765{i:05d}", "client_name": f"Lead {tag} {i}",
             "form_type": "loan", "priority_id": 2}
            for i in range(500)
        ]}

    client.post("/api/leads", json={"leads": batch("warm", "RT")["leads"][:1]}, headers=auth)
    for tag, expected in (("new", "inserted"), ("again", "updated")):
        before = statements_sent()
        response = client.post("/api/leads", json=batch(tag, "RT"), headers=auth)
        counted = statements_sent() - before
        assert response.status_code == 201
        assert {e["status"] for e in response.get_json()["leads"][1:]} == {expected}
        assert 3 <= counted <= 10, f"{counted} statements for one 500-lead batch ({tag})"


def test_concurrent_overlapping_batches_while_rows_go_live(live_server, database_url, sql):
    """Every oli_id ends up once, no live row is changed, and every row holds one push's whole write."""
    oli_ids = [f"CC-{i:03d}" for i in range(240)]
    written = {}  # data_id -> client_name that push wrote with it
    errors = []
    lock = threading.Lock()
    stop = threading.Event()

    def pusher(worker):
        rng = random.Random(worker)
        session = requests.Session()
        for round_no in range(12):
            chosen = rng.sample(oli_ids, 80)
            leads = [
                {"oli_id": oli_id, "phone_number": f"+91 9{rng.randint(0, 999999999):09d}",
                 "client_name": f"w{worker} r{round_no} {oli_id}", "form_type": "loan", "priority_id": 2}
                for oli_id in chosen
            ]
            response = session.post(live_server.url("/api/leads"), json={"leads": leads}, headers=AUTH, timeout=60)
            if response.status_code != 201:
                errors.append((response.status_code, response.text))
                continue
            with lock:
                for sent, entry in zip(leads, response.json()["leads"], strict=True):
                    if entry["status"] != "skipped_in_flight":
                        written[entry["data_id"]] = sent["client_name"]

    marked = {}

    def claim(cur, oli_id):
        cur.execute("SELECT * FROM sales_master WHERE oli_id = %s FOR UPDATE", (oli_id,))
        row = cur.fetchone()
        if row is None or (row["dial_status"] == "Calling" and row["isReserved"]):
            return None
        cur.execute("UPDATE sales_master SET dial_status = 'Calling', isReserved = 1 WHERE id = %s", (row["id"],))
        cur.execute("SELECT * FROM sales_master WHERE id = %s", (row["id"],))
        return cur.fetchone()

    def engine():
        rng = random.Random(99)
        conn = connect(database_url)
        while not stop.is_set():
            oli_id = rng.choice(oli_ids)
            try:
                with conn.cursor() as cur:
                    claimed = claim(cur, oli_id)
                conn.commit()
            except pymysql.err.OperationalError as exc:
                assert exc.args[0] in (1205, 1213), exc
                conn.rollback()
                continue
            if claimed:
                marked[oli_id] = claimed
        conn.close()

    threads = [threading.Thread(target=pusher, args=(n,)) for n in range(6)]
    marker = threading.Thread(target=engine)
    marker.start()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    stop.set()
    marker.join()

    assert errors == []
    assert len(marked) > 10, "the engine thread should have marked rows live while batches ran"
    rows = {row["oli_id"]: row for row in sql("SELECT * FROM sales_master")}
    assert sql("SELECT oli_id FROM sales_master GROUP BY oli_id HAVING COUNT(*) > 1") == []
    pushed = {name.rsplit(" ", 1)[1] for name in written.values()}
    assert set(rows) == pushed
    for oli_id, snapshot in marked.items():
        assert rows[oli_id] == snapshot, f"live row {oli_id} was changed by a push"
    for oli_id, row in rows.items():
        assert written[row["data_id"]] == row["client_name"], f"{oli_id} mixes two pushes"
