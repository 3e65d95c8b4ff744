"""SIGKILL of a gunicorn worker in the middle of a batch: nothing of that batch is stored, and the
client's retry succeeds (issue: fault tests)."""

import os
import signal
import threading
import time

import pytest
import requests

from conftest import SECRET, start_gunicorn
from dialerapi.plumbing.db import connect

pytestmark = pytest.mark.faults
AUTH = {"X-API-Key": SECRET}


def batch(prefix, n):
    return {"leads": [{"oli_id": f"{prefix}-{i:03d}", "phone_number": f"98765{i:05d}", "client_name": f"Lead {i}",
                       "form_type": "loan", "priority_id": 2} for i in range(n)]}


def worker_pids(master_pid):
    children = open(f"/proc/{master_pid}/task/{master_pid}/children").read().split()
    return [int(pid) for pid in children]


def kill_the_worker_mid_batch(server, body, sql):
    """Push `body`, wait until its transaction waits on a lock, SIGKILL the worker; return what the client got."""
    outcome = {}

    def push():
        try:
            outcome["response"] = requests.post(server.url("/api/leads"), json=body, headers=AUTH, timeout=30)
        except requests.RequestException as exc:
            outcome["error"] = exc

    client = threading.Thread(target=push)
    client.start()
    deadline = time.monotonic() + 10
    # The batch's lock_leads, running (it waits on KILL-199) on another connection: the processlist lists
    # this very statement too, whose text matches, and were the worker killed before it accepted the
    # request, the respawned worker would serve it and commit it the moment the blocker lets go.
    while not sql("SELECT id FROM information_schema.processlist WHERE id <> CONNECTION_ID()"
                  " AND command = 'Query' AND info LIKE '%%FOR UPDATE%%' AND info LIKE '%%KILL-000%%'"):
        if time.monotonic() > deadline:
            pytest.fail(f"the batch never reached its lock: {outcome}; the server's log ends:\n"
                        f"{server.log.read_text()[-2000:]}")
        time.sleep(0.05)
    [worker] = worker_pids(server.process.pid)
    os.kill(worker, signal.SIGKILL)
    client.join(timeout=30)
    return outcome


def test_a_worker_killed_mid_batch_stores_nothing_and_the_retry_succeeds(database_url, sql, tmp_path, new_lead):
    server = start_gunicorn(database_url, tmp_path / "gunicorn.log", workers=1)
    try:
        body = batch("KILL", 200)
        new_lead("KILL-199")  # the last oli_id in lock order: the batch stops on it, inside its transaction
        before = sql.lead("KILL-199")
        blocker = connect(database_url)
        with blocker.cursor() as cur:
            cur.execute("SELECT * FROM sales_master WHERE oli_id = 'KILL-199' FOR UPDATE")
        try:
            outcome = kill_the_worker_mid_batch(server, body, sql)
        finally:
            blocker.rollback()
            blocker.close()

        log = server.log.read_text()[-3000:]
        assert outcome, f"the client saw nothing within 30 s of the kill; the server's log ends:\n{log}"
        assert "error" in outcome or outcome["response"].status_code >= 500, "the client saw the failure"
        stored = sql("SELECT oli_id FROM sales_master WHERE oli_id LIKE 'KILL-%%'")
        assert [r["oli_id"] for r in stored] == ["KILL-199"], "nothing of the killed batch is stored"
        assert sql.lead("KILL-199") == before

        deadline = time.monotonic() + 20
        while True:  # the master starts a new worker; the client retries the same batch
            try:
                retry = requests.post(server.url("/api/leads"), json=body, headers=AUTH, timeout=30)
                break
            except requests.ConnectionError:
                assert time.monotonic() < deadline
                time.sleep(0.2)
        assert retry.status_code == 201, retry.text
        statuses = [entry["status"] for entry in retry.json()["leads"]]
        assert statuses.count("inserted") == 199 and statuses[-1] == "updated"
        assert sql.one("SELECT COUNT(*) AS n FROM sales_master WHERE oli_id LIKE 'KILL-%%'")["n"] == 200
    finally:
        server.stop()
