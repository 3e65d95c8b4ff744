"""Service benchmark: lead push against the database's own ceiling, and latency at a fixed rate.

    make bench            (runs this, then bench/claim_bench.py)

- Lead push: 100,000 leads (half new, half updates of the same oli_ids) in batches of 500 from 16
  concurrent clients through gunicorn (deploy/gunicorn.conf.py, 2 workers), against the raw
  ceiling: the same rows through PyMySQL's multi-row INSERT ... ON DUPLICATE KEY UPDATE (the
  service's own upsert statement), 16 connections, no HTTP. The two alternate (ceiling, service,
  ceiling, service) because this machine's speed drifts; the ratio is of the medians. Target: 0.5.
- Latency: send-callback-request, pending-callbacks and missed-activities at a fixed 200 requests
  per second for 10 s each, open loop (latency counted from each request's scheduled time), client
  addresses spread through X-Forwarded-For so the per-IP limits do not apply. Target: p99 < 25 ms.
- Resident memory of each gunicorn worker after the run.

The load generator runs on the same 2 cores as the service and the database, so every figure here
includes its cost. Prints a table and writes bench-results.json.
"""

import json
import os
import platform
import queue
import signal
import statistics
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from pathlib import Path

import requests
from common import bench_database, worker_rss_mb

from dialerapi.db import connect, queries

ROOT = Path(__file__).resolve().parent.parent
DB_NAME = "dialerapi_bench_service"
SECRET = "bench-secret-0123456789"
LEADS = int(os.environ.get("BENCH_PUSH_LEADS", 100_000))
BATCH = 500
CLIENTS = 16
RATE = 200
RATE_SECONDS = 10
ROUNDS = 2


def leads(n_from, n_to, tag):
    return [{"oli_id": f"B-{n:06d}", "phone_number": f"+91 9{n:09d}", "client_name": f"Lead {n} {tag}",
             "form_type": "home_loan", "priority_id": 2} for n in range(n_from, n_to)]


def batches():
    """200 batches: the first half inserts B-000000..B-049999, the second half updates them."""
    half = LEADS // 2
    new = [leads(i, i + BATCH, "new") for i in range(0, half, BATCH)]
    again = [leads(i, i + BATCH, "again") for i in range(0, half, BATCH)]
    return new, again


def reset(url):
    conn = connect(url)
    with conn.cursor() as cur:
        for table in ("sales_master", "sales_pending_actions", "sales_missed_activities", "sales_agents"):
            cur.execute(f"DELETE FROM {table}")
    conn.commit()
    conn.close()


def run_phases(work, phases):
    """Run each phase's batches with CLIENTS workers; return leads per second over all phases."""
    started = time.perf_counter()
    with ThreadPoolExecutor(CLIENTS) as pool:
        for phase in phases:
            list(pool.map(work, phase))
    return LEADS / (time.perf_counter() - started)


def ceiling_run(url, phases):
    local = threading.local()
    now = datetime.now().replace(microsecond=0)

    def upsert(batch):
        if not hasattr(local, "conn"):
            local.conn = connect(url)
        rows = [{**lead, "phone_number": "".join(c for c in lead["phone_number"] if c.isdigit()),
                 "data_id": "00000000-0000-0000-0000-000000000000", "dial_status": "Pending", "disposeRemark": None,
                 "last_dial_result": None, "hangup_by": None, "hangup_cause": None, "last_attempt_at": None,
                 "first_attempt_at": None, "next_retry_at": None, "callback_scheduled_at": None, "call_count": 0,
                 "isReserved": 0, "created_at": now, "updated_at": now} for lead in batch]
        queries.upsert_leads(local.conn, sorted(rows, key=lambda r: r["oli_id"]))
        local.conn.commit()

    return run_phases(upsert, phases)


def service_run(base, phases):
    local = threading.local()

    def push(batch):
        if not hasattr(local, "session"):
            local.session = requests.Session()
        response = local.session.post(base + "/api/leads", json={"leads": batch}, headers={"X-API-Key": SECRET},
                                      timeout=120)
        assert response.status_code == 201, response.text[:200]

    return run_phases(push, phases)


def fixed_rate(base, method, path, body_for):
    """Open-loop load at RATE requests/s for RATE_SECONDS; latency from each scheduled send time, in ms."""
    total = RATE * RATE_SECONDS
    schedule = queue.Queue()
    latencies, statuses = [], []
    lock = threading.Lock()
    start = time.perf_counter() + 0.2
    for n in range(total):
        schedule.put((start + n / RATE, n))

    def worker():
        session = requests.Session()
        while True:
            try:
                due, n = schedule.get_nowait()
            except queue.Empty:
                return
            delay = due - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            headers = {"X-API-Key": SECRET, "X-Forwarded-For": f"10.{n % 250}.{n // 250 % 250}.1"}
            response = session.request(method, base + path(n), json=body_for(n), headers=headers, timeout=10)
            with lock:
                latencies.append((time.perf_counter() - due) * 1000)
                statuses.append(response.status_code)

    threads = [threading.Thread(target=worker) for _ in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    latencies.sort()
    return {"p50_ms": round(statistics.median(latencies), 2), "p99_ms": round(latencies[int(0.99 * len(latencies))], 2),
            "requests": total, "statuses": sorted(set(statuses))}


def main():
    url = bench_database(DB_NAME)

    port = 18000 + os.getpid() % 1000
    env = {**os.environ, "DATABASE_URL": url, "WS_SECRET": SECRET, "JOBS_ENABLED": "false", "TRUSTED_PROXY_COUNT": "1",
           "GUNICORN_BIND": f"127.0.0.1:{port}", "GUNICORN_WORKERS": "2", "LOG_LEVEL": "WARNING"}
    server = subprocess.Popen([str(Path(sys.executable).with_name("gunicorn")), "-c", "deploy/gunicorn.conf.py",
                               "wsgi:app"], cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    for _ in range(100):
        try:
            requests.get(base + "/healthz", timeout=1)
            break
        except requests.ConnectionError:
            time.sleep(0.1)
    try:
        phases = batches()
        ceiling, service = [], []
        for round_no in range(ROUNDS):
            reset(url)
            ceiling.append(ceiling_run(url, phases))
            reset(url)
            service.append(service_run(base, phases))
            print(f"round {round_no + 1}: ceiling {ceiling[-1]:,.0f} leads/s, service {service[-1]:,.0f} leads/s",
                  flush=True)

        conn = connect(url)
        with conn.cursor() as cur:
            cur.execute("INSERT INTO sales_agents (id, extension, name) VALUES (501, '4501', 'Bench agent')")
        conn.commit()
        conn.close()
        oli = lambda n: f"B-{n % (LEADS // 2):06d}"  # noqa: E731
        latency = {
            "send-callback-request": fixed_rate(base, "POST", lambda n: "/api/send-callback-request",
                                                lambda n: {"oliId": oli(n), "scheduledAt": "2031-01-01 10:00:00"}),
            "pending-callbacks": fixed_rate(base, "POST", lambda n: "/api/pending-callbacks",
                                            lambda n: {"oliId": oli(n + 7), "scheduledAt": "2031-01-01 10:00"}),
            "missed-activities": fixed_rate(base, "GET", lambda n: "/api/missed-activities?agentId=501",
                                            lambda n: None),
        }
        rss = worker_rss_mb(server.pid)
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)

    result = {
        "date": datetime.now().isoformat(timespec="seconds"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
                   "load generator, service and MariaDB on the same cores",
        "push": {"leads": LEADS, "batch": BATCH, "clients": CLIENTS,
                 "ceiling_leads_per_s": [round(x) for x in ceiling], "service_leads_per_s": [round(x) for x in service],
                 "ratio": round(statistics.median(service) / statistics.median(ceiling), 2), "target_ratio": 0.5},
        "latency_at_200_rps": latency, "target_p99_ms": 25,
        "worker_rss_mb": rss,
    }
    result["push"]["target_met"] = result["push"]["ratio"] >= 0.5
    for figures in latency.values():
        figures["target_met"] = figures["p99_ms"] < 25
    print(f"\nservice benchmark ({result['machine']})")
    print(f"lead push, {LEADS:,} leads in batches of {BATCH} from {CLIENTS} clients (half new, half updates):")
    print(f"  raw ceiling   {statistics.median(ceiling):>10,.0f} leads/s")
    print(f"  service       {statistics.median(service):>10,.0f} leads/s")
    print(f"  ratio         {result['push']['ratio']:>10}   (target >= 0.5: "
          f"{'met' if result['push']['target_met'] else 'NOT met'})")
    print(f"\nlatency at {RATE} requests/s for {RATE_SECONDS} s:")
    print(f"  {'endpoint':<24}{'p50 ms':>8}{'p99 ms':>8}  target p99 < 25 ms")
    for name, figures in latency.items():
        print(f"  {name:<24}{figures['p50_ms']:>8}{figures['p99_ms']:>8}  {'met' if figures['target_met'] else 'NOT met'}"
              f"  (statuses {figures['statuses']})")
    print(f"\nresident memory per gunicorn worker after the run: {', '.join(f'{m} MB' for m in rss)}")
    with open("bench-results.json", "w") as out:
        json.dump(result, out, indent=2)


if __name__ == "__main__":
    main()
