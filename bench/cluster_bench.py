"""Push and claim through one MariaDB and through a 3-node Galera cluster, side by side (issue #19).

    make bench    (last: scripts/galera.sh builds the cluster beside the private MariaDB)

- Push: wrk (bench/push.lua) sends 500-lead batches from 8 connections for SECONDS: to one
  gunicorn (2 workers) on the single node; through the cluster, 4 connections to each of two
  gunicorns, host A preferring node 1 and host B node 2, the layout of docs/operations/galera.md "Scale out". Batches
  of new leads and batches updating existing ones, ROUNDS runs each. The cluster is run twice,
  with causal reads (DB_CAUSAL_READS, the default) and without, which prices them.
- Claims: CLAIMERS threads released at once each claim a due lead (claims.claim_next, in process,
  one pool per claimer, as hosts have), CLAIM_ROUNDS times; on the cluster half of them go through
  node 1 and half through node 2. Latency per claim, p50 and p99.

The single node and the cluster's three nodes share the machine's 2 cores with wrk and gunicorn, so
the cluster pays for three servers' work on the cores that one had. Prints a table and writes
bench-results-cluster.json.
"""

import json
import os
import platform
import statistics
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime

from common import FILL, bench_database, gunicorn, wait_until_idle, wrk

from dialerapi.plumbing.config import database_nodes, url_with_nodes
from dialerapi.plumbing.db import Database, connect
from dialerapi.rules.dialing import claims

DB_NAME = "dialerapi_bench_cluster"
SECRET = "bench-secret-0123456789"
SECONDS = int(os.environ.get("BENCH_PUSH_SECONDS", 10))
ROUNDS = int(os.environ.get("BENCH_ROUNDS", 2))
UPDATE_POOL = 20_000
CLAIMERS, CLAIM_ROUNDS = 16, 30
NOW = datetime(2026, 11, 21, 10, 0, 0)  # a Saturday mid-morning, inside the default work window

def statements(url, *sql, params=None):
    conn = connect(url, io_timeout=600)
    try:
        with conn.cursor() as cur:
            for statement in sql:
                cur.execute(statement, params)
        conn.commit()
    finally:
        conn.close()


def fresh_table(url):
    statements(url, "TRUNCATE sales_master", "DELETE FROM sales_agent_skills", "DELETE FROM sales_agents",
               FILL.format(last=UPDATE_POOL - 1))


def push(url, bases, kind, run):
    """Leads per second and the worst p99 (ms) of 8 wrk connections split over `bases`."""
    wait_until_idle(url)
    fresh_table(url)
    connections = 8 // len(bases)
    with ThreadPoolExecutor(len(bases)) as pool:
        reports = list(pool.map(lambda item: wrk(
            "push.lua", item[1], SECONDS, connections=connections, BENCH_PATH="/api/leads", BENCH_KIND=kind,
            BENCH_RUN=f"{run}{item[0]}", BENCH_POOL=UPDATE_POOL, BENCH_THREADS=1, WS_SECRET=SECRET),
            enumerate(bases)))
    for report in reports:
        if report["status_errors"] or report["socket_errors"]:
            raise SystemExit(f"push {kind}: {report}")
    return {"leads_per_s": round(sum(r["rate_per_s"] for r in reports) * 500),
            "p99_ms": max(r["p99_ms"] for r in reports)}


def push_runs(url, host_urls, causal_reads=True):
    settings = {"WS_SECRET": SECRET, "DB_CAUSAL_READS": str(causal_reads).lower()}
    port = 18900 + os.getpid() % 50
    servers = [gunicorn("wsgi:app", port + i, DATABASE_URL=host_url, **settings) for i, host_url in enumerate(host_urls)]
    bases = [server.__enter__()[0] for server in servers]
    try:
        runs = {kind: [push(url, bases, kind, f"{kind[0]}{r}") for r in range(ROUNDS)] for kind in ("new", "update")}
    finally:
        for server in servers:
            server.__exit__(None, None, None)
    return {kind: {"leads_per_s": round(statistics.median(r["leads_per_s"] for r in kind_runs)),
                   "p99_ms": round(statistics.median(r["p99_ms"] for r in kind_runs), 1)}
            for kind, kind_runs in runs.items()}


def claim_latency(url, host_urls):
    """p50 and p99 (ms) of CLAIMERS claims at once, CLAIM_ROUNDS times, claimers spread over `host_urls`."""
    agents = list(range(701, 701 + CLAIMERS))
    statements(url, "TRUNCATE sales_master", "DELETE FROM sales_agent_skills", "DELETE FROM sales_agents")
    statements(url, "INSERT INTO sales_agents (id, extension, name, panel_active, ami_idle) VALUES "
               + ", ".join(f"({a}, '{a}', 'Agent', 1, 1)" for a in agents),
               "INSERT INTO sales_agent_skills (agent_id, form_type) VALUES "
               + ", ".join(f"({a}, 'home_loan')" for a in agents))
    databases = [Database(host_urls[i % len(host_urls)], pool_size=1) for i in range(CLAIMERS)]
    seconds = []
    try:
        for run in range(CLAIM_ROUNDS):
            statements(url, "INSERT INTO sales_master (oli_id, data_id, phone_number, client_name, form_type, "
                       "priority_id, dial_status, call_count, isReserved, created_at, updated_at) "
                       f"SELECT CONCAT('R{run:03d}-', seq), UUID(), '9876543210', 'Lead', 'home_loan', 2, 'Pending', "
                       f"0, 0, %s, %s FROM seq_1_to_{CLAIMERS}", params=(NOW, NOW))
            barrier = threading.Barrier(CLAIMERS)

            def claimer(index):
                barrier.wait(timeout=60)
                started = time.monotonic()
                row = databases[index].run(claims.claim_next, agents[index], NOW)
                seconds.append(time.monotonic() - started)
                return row and row["oli_id"]

            with ThreadPoolExecutor(CLAIMERS) as pool:
                got = list(pool.map(claimer, range(CLAIMERS)))
            if None in got or len(set(got)) != CLAIMERS:
                raise SystemExit(f"claim round {run}: {got}")
            statements(url, "UPDATE sales_master SET dial_status = 'Received', isReserved = 0, reservation_id = NULL")
    finally:
        for db in databases:
            db.close()
    seconds.sort()
    return {"p50_ms": round(statistics.median(seconds) * 1000, 1),
            "p99_ms": round(seconds[int(len(seconds) * 0.99)] * 1000, 1), "claims": len(seconds)}


def main():
    single = bench_database(DB_NAME)
    os.environ["DATABASE_URL"] = os.environ["GALERA_URL"]
    cluster = bench_database(DB_NAME)
    nodes = database_nodes(cluster)
    hosts = [url_with_nodes(cluster, nodes), url_with_nodes(cluster, nodes[1:] + nodes[:1])]
    result = {
        "date": datetime.now().isoformat(timespec="seconds"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
                   "wrk, gunicorn and every MariaDB node on the same cores",
        "push": {"batch": 500, "connections": 8, "seconds_per_run": SECONDS, "rounds": ROUNDS,
                 "one_node": push_runs(single, [single]),
                 "three_nodes": push_runs(cluster, hosts),
                 "three_nodes_without_causal_reads": push_runs(cluster, hosts, causal_reads=False)},
        "claims": {"claimers": CLAIMERS, "rounds": CLAIM_ROUNDS,
                   "one_node": claim_latency(single, [single]), "three_nodes": claim_latency(cluster, hosts)},
    }
    push_figures, claim_figures = result["push"], result["claims"]
    for kind in ("new", "update"):
        push_figures[f"{kind}_ratio"] = round(
            push_figures["three_nodes"][kind]["leads_per_s"] / push_figures["one_node"][kind]["leads_per_s"], 2)
    claim_figures["p99_ratio"] = round(claim_figures["three_nodes"]["p99_ms"] / claim_figures["one_node"]["p99_ms"], 2)
    print(f"\none node and a 3-node Galera cluster ({result['machine']})")
    print(f"lead push, 500-lead batches from 8 wrk connections ({ROUNDS} runs of {SECONDS} s, medians; on the "
          "cluster 4 to host A on node 1, 4 to host B on node 2):")
    print(f"  {'batches':<8}{'1 node':>12}{'3 nodes':>12}{'ratio':>7}{'no causal':>12}   {'p99 ms 1':>9}{'p99 ms 3':>9}")
    for kind in ("new", "update"):
        one, three = push_figures["one_node"][kind], push_figures["three_nodes"][kind]
        loose = push_figures["three_nodes_without_causal_reads"][kind]
        print(f"  {kind:<8}{one['leads_per_s']:>10,}/s{three['leads_per_s']:>10,}/s{push_figures[f'{kind}_ratio']:>7}"
              f"{loose['leads_per_s']:>10,}/s   {one['p99_ms']:>9}{three['p99_ms']:>9}   target ratio >= 0.7")
    one, three = claim_figures["one_node"], claim_figures["three_nodes"]
    print(f"claims, {CLAIMERS} at once x {CLAIM_ROUNDS} (on the cluster half through node 1, half through node 2):")
    print(f"  p50 {one['p50_ms']} ms / {three['p50_ms']} ms, p99 {one['p99_ms']} ms / {three['p99_ms']} ms "
          f"(1 node / 3 nodes), p99 ratio {claim_figures['p99_ratio']}, target <= 2")
    with open("bench-results-cluster.json", "w") as out:
        json.dump(result, out, indent=2)


if __name__ == "__main__":
    main()
