"""Concurrency torture: 16 clients pushing overlapping batches and sending CRM actions for live and idle
leads, while 4 engines claim and settle, all at once. At the end every oli_id exists once, no live
row was changed by anyone but its engine, every pending row ended applied, superseded or failed,
and no acknowledged write was lost (issue: fault tests)."""

import random
import threading
import time
from datetime import timedelta

import pytest
import requests

from conftest import DEFAULT_NOW, SECRET, TZ, start_gunicorn
from dialerapi.plumbing.db import Database
from dialerapi.rules.dialing import claims, crm_actions
from dialerapi.rules.leads import dialstate

pytestmark = pytest.mark.faults
POOL = [f"T-{n:03d}" for n in range(600)]
SECONDS = 15
OUTCOMES = ["answered", "no_answer", "busy", "rejected", "abandoned", "originate_failed"]


def test_torture(database_url, sql, tmp_path):
    for agent_id in range(1, 5):
        sql("INSERT INTO sales_agents (id, extension, name, panel_active, ami_idle) VALUES (%s, %s, 'E', 1, 1)",
            agent_id, str(7000 + agent_id))
        sql("INSERT INTO sales_agent_skills (agent_id, form_type) VALUES (%s, 'loan')", agent_id)
    server = start_gunicorn(database_url, tmp_path / "gunicorn.log", workers=2, TRUSTED_PROXY_COUNT="1")
    # The server's clock starts at DEFAULT_NOW; the engines dial the next day at noon, when every
    # pushed lead is due and every CRM action is older than the sweep's 30 s.
    engine_now = DEFAULT_NOW + timedelta(days=1, hours=2)
    stop = threading.Event()
    acked_pushes, acked_actions, failures, changed_live, settled = [], [], [], [], []

    def client(worker):
        rng = random.Random(worker)
        session = requests.Session()
        while not stop.is_set():
            headers = {"X-API-Key": SECRET, "X-Forwarded-For": f"10.9.{worker}.{rng.randint(1, 250)}"}
            roll = rng.random()
            if roll < 0.7:
                batch = [{"oli_id": oli_id, "phone_number": f"9{rng.randint(0, 10**9 - 1):09d}",
                          "client_name": f"w{worker}", "form_type": "loan", "priority_id": 2}
                         for oli_id in rng.sample(POOL, 50)]
                response = session.post(server.url("/api/leads"), json={"leads": batch}, headers=headers, timeout=30)
                if response.status_code == 201:
                    acked_pushes.append([e["oli_id"] for e in response.json()["leads"]])
                else:
                    failures.append(("push", response.status_code, response.text[:200]))
            else:
                oli_id = rng.choice(POOL)
                if roll < 0.85:
                    path, body = "/api/pending-callbacks", {"oliId": oli_id, "scheduledAt": "2031-01-01 10:00"}
                else:
                    path, body = "/api/pending-dispositions", {"oliId": oli_id, "reason": "DND"}
                response = session.post(server.url(path), json=body, headers=headers, timeout=30)
                if response.status_code in (200, 202):
                    acked_actions.append(response.json()["pending"]["id"])
                elif response.status_code != 404:  # an oli_id not pushed yet
                    failures.append((path, response.status_code, response.text[:200]))

    def engine(agent_id):
        rng = random.Random(100 + agent_id)
        db = Database(database_url, pool_size=2)
        while not stop.is_set():
            row = db.run(claims.claim_next, agent_id, engine_now)
            if row is None:
                time.sleep(0.01)
                continue
            time.sleep(rng.uniform(0.005, 0.05))  # the call
            now_row = db.run(lambda conn, oli_id=row["oli_id"]: dialstate.lock_lead(conn, oli_id))
            # The claim answers its caller ID beside the row's columns (None on this floor).
            claimed = {k: v for k, v in row.items() if k != "caller_id_choice"}
            if {k: now_row[k] for k in claimed} != claimed:
                changed_live.append((claimed, now_row))
            db.run(dialstate.settle, row["oli_id"], rng.choice(OUTCOMES), engine_now, tz=TZ, grace_minutes=10,
                   release_retry_ms=60000, agent_id=agent_id)
            settled.append(row["oli_id"])
        db.close()

    threads = [threading.Thread(target=client, args=(w,)) for w in range(16)]
    threads += [threading.Thread(target=engine, args=(a,)) for a in range(1, 5)]
    try:
        for thread in threads:
            thread.start()
        time.sleep(SECONDS)
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=60)
        server.stop()

    assert failures == [], failures[:5]
    assert changed_live == [], "a live row was changed by something other than its engine"
    assert len(acked_pushes) > 50 and len(acked_actions) > 20 and len(settled) > 50, \
        (len(acked_pushes), len(acked_actions), len(settled))
    assert sql("SELECT oli_id FROM sales_master GROUP BY oli_id HAVING COUNT(*) > 1") == []
    stored = {r["oli_id"] for r in sql("SELECT oli_id FROM sales_master")}
    assert {oli_id for batch in acked_pushes for oli_id in batch} <= stored
    actions_stored = {r["id"] for r in sql("SELECT id FROM sales_pending_actions")}
    assert set(acked_actions) <= actions_stored, "an acknowledged CRM action was lost"

    # The floor closes: settle what is still live, then one sweep; nothing may stay pending.
    db = Database(database_url, pool_size=2)
    for row in sql("SELECT oli_id FROM sales_master WHERE dial_status = 'Calling' AND isReserved = 1"):
        db.run(dialstate.settle, row["oli_id"], "no_answer", engine_now, tz=TZ, grace_minutes=10,
               release_retry_ms=60000)
    crm_actions.sweep(db, engine_now + timedelta(minutes=1), TZ)
    db.close()
    statuses = {r["status"] for r in sql("SELECT DISTINCT status FROM sales_pending_actions")}
    assert statuses <= {"applied", "superseded", "failed"}, statuses
