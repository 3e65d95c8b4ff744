"""Service benchmark: lead push against a reference that makes the same writes, and latency at a
fixed rate.

    make bench            (runs this, then bench/claim_bench.py)

- Lead push: wrk (a load generator in C; bench/push.lua builds each 500-lead batch) sends batches
  from CONNECTIONS connections for SECONDS to the service (POST /api/leads) and to the reference
  (bench/reference_app.py: POST /push, the service's own lock and upsert statements and nothing
  else), both under gunicorn with deploy/gunicorn.conf.py and 2 workers, up side by side. The runs
  alternate (reference, service, then service, reference, ...) ROUNDS times, for batches of new
  leads and batches that update existing ones separately, each on a fresh table holding UPDATE_POOL
  leads. Figures: leads per second and latency per batch (wrk's, on the client); ratios of the
  medians. Targets: service >= 0.85 of the reference, p99 per batch <= 1.2x the reference's.
- Latency: send-callback-request, pending-callbacks and missed-activities at 200 requests per
  second for LATENCY_SECONDS each (wrk, 4 connections at 50/s each on a fixed schedule), each
  request from its own client address (X-Forwarded-For). Target: p99 < 25 ms.
- Resident memory of each gunicorn worker after the run.

wrk, gunicorn and MariaDB share the machine's 2 cores. Prints tables and writes bench-results.json.
"""

import json
import os
import platform
import statistics
from datetime import datetime

from common import FILL, bench_database, gunicorn, wait_until_idle, worker_rss_mb, wrk
from dialerapi.db import connect

DB_NAME = "dialerapi_bench_service"
SECRET = "bench-secret-0123456789"
SECONDS = int(os.environ.get("BENCH_PUSH_SECONDS", 15))
ROUNDS = int(os.environ.get("BENCH_ROUNDS", 3))
CONNECTIONS = 8
UPDATE_POOL = 50_000
LATENCY_SECONDS = 10
TARGET_RATIO, TARGET_P99_RATIO = 0.85, 1.2

def fresh_table(url):
    """sales_master with exactly the UPDATE_POOL leads U-000000.. (and the one agent the latency runs read)."""
    conn = connect(url, io_timeout=600)
    with conn.cursor() as cur:
        for table in ("sales_master", "sales_pending_actions", "sales_missed_activities", "sales_agents",
                      "dialerapi_outbox"):
            cur.execute(f"DELETE FROM {table}" if table != "sales_master" else "TRUNCATE sales_master")
        cur.execute(FILL.format(last=UPDATE_POOL - 1))
        cur.execute("INSERT INTO sales_agents (id, extension, name) VALUES (501, '4501', 'Bench agent')")
    conn.commit()
    conn.close()


def push_run(url, base, path, kind, run):
    wait_until_idle(url)
    fresh_table(url)
    report = wrk("push.lua", base, SECONDS, connections=CONNECTIONS, BENCH_PATH=path, BENCH_KIND=kind,
                 BENCH_RUN=run, BENCH_POOL=UPDATE_POOL, BENCH_THREADS=1, WS_SECRET=SECRET)
    if report["status_errors"] or report["socket_errors"]:
        raise SystemExit(f"{path} {kind}: {report}")
    return {"leads_per_s": round(report["rate_per_s"] * 500), "p50_ms": report["p50_ms"], "p99_ms": report["p99_ms"],
            "batches": report["requests"]}


def summary(runs):
    return {"leads_per_s": round(statistics.median(r["leads_per_s"] for r in runs)),
            "p50_ms": round(statistics.median(r["p50_ms"] for r in runs), 1),
            "p99_ms": round(statistics.median(r["p99_ms"] for r in runs), 1), "runs": runs}


def main():
    url = bench_database(DB_NAME)
    settings = {"DATABASE_URL": url, "WS_SECRET": SECRET, "TRUSTED_PROXY_COUNT": "1"}
    port = 18000 + os.getpid() % 400
    with gunicorn("wsgi:app", port, **settings) as (service, service_pid), \
            gunicorn("bench.reference_app:app", port + 1, **settings) as (reference, _):
        runs = {kind: {"reference": [], "service": []} for kind in ("new", "update")}
        for round_no in range(ROUNDS):
            for kind in ("new", "update"):
                sides = [("reference", reference, "/push"), ("service", service, "/api/leads")]
                for side, base, path in sides if round_no % 2 == 0 else reversed(sides):
                    runs[kind][side].append(push_run(url, base, path, kind, f"{round_no}{side[0]}"))
                print(f"round {round_no + 1}, {kind:6}: reference {runs[kind]['reference'][-1]['leads_per_s']:>7,} "
                      f"leads/s, service {runs[kind]['service'][-1]['leads_per_s']:>7,} leads/s", flush=True)

        wait_until_idle(url)
        fresh_table(url)
        latency = {}
        for endpoint in ("send-callback-request", "pending-callbacks", "missed-activities"):
            report = wrk("crm_latency.lua", service, LATENCY_SECONDS, connections=4, threads=4, BENCH_RATE=50,
                         BENCH_ENDPOINT=endpoint, BENCH_POOL=UPDATE_POOL, WS_SECRET=SECRET)
            latency[endpoint] = {k: report[k] for k in ("rate_per_s", "requests", "status_errors", "p50_ms", "p99_ms")}
            latency[endpoint]["target_met"] = report["p99_ms"] < 25 and not report["status_errors"]
        rss = worker_rss_mb(service_pid)

    push = {}
    for kind, sides in runs.items():
        push[kind] = {side: summary(side_runs) for side, side_runs in sides.items()}
        ref, svc = push[kind]["reference"], push[kind]["service"]
        push[kind]["ratio"] = round(svc["leads_per_s"] / ref["leads_per_s"], 2)
        push[kind]["p99_ratio"] = round(svc["p99_ms"] / ref["p99_ms"], 2)
        push[kind]["target_met"] = push[kind]["ratio"] >= TARGET_RATIO and push[kind]["p99_ratio"] <= TARGET_P99_RATIO
    result = {
        "date": datetime.now().isoformat(timespec="seconds"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
                   "wrk, gunicorn and MariaDB on the same cores",
        "push": {"batch": 500, "connections": CONNECTIONS, "seconds_per_run": SECONDS, "rounds": ROUNDS, **push,
                 "target_ratio": TARGET_RATIO, "target_p99_ratio": TARGET_P99_RATIO},
        "latency_at_200_rps": latency, "target_p99_ms": 25, "worker_rss_mb": rss,
    }
    print(f"\nservice benchmark ({result['machine']})")
    print(f"lead push, batches of 500 from {CONNECTIONS} wrk connections, {ROUNDS} alternating runs of {SECONDS} s "
          "each (medians):")
    print(f"  {'batches':<8}{'reference':>12}{'service':>12}{'ratio':>8}   {'p99 ms ref':>11}{'p99 ms svc':>11}"
          f"{'ratio':>7}  target >= {TARGET_RATIO}, p99 <= {TARGET_P99_RATIO}x")
    for kind in ("new", "update"):
        p = push[kind]
        print(f"  {kind:<8}{p['reference']['leads_per_s']:>10,}/s{p['service']['leads_per_s']:>10,}/s{p['ratio']:>8}   "
              f"{p['reference']['p99_ms']:>11}{p['service']['p99_ms']:>11}{p['p99_ratio']:>7}  "
              f"{'met' if p['target_met'] else 'NOT met'}")
    print(f"\nlatency at 200 requests/s for {LATENCY_SECONDS} s (wrk, 4 connections):")
    print(f"  {'endpoint':<24}{'p50 ms':>8}{'p99 ms':>8}  target p99 < 25 ms")
    for name, figures in latency.items():
        print(f"  {name:<24}{figures['p50_ms']:>8}{figures['p99_ms']:>8}  {'met' if figures['target_met'] else 'NOT met'}"
              f"  ({figures['requests']} requests, {figures['status_errors']} errors)")
    print(f"\nresident memory per gunicorn worker after the run: {', '.join(f'{m} MB' for m in rss)}")
    with open("bench-results.json", "w") as out:
        json.dump(result, out, indent=2)


if __name__ == "__main__":
    main()
