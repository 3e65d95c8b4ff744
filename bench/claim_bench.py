"""Claim benchmark: p50/p99 of a progressive claim with 1,000,000 leads and 200 agents.

    make bench            (or: scripts/devdb.sh exec .venv/bin/python bench/claim_bench.py)

Builds (once) a database `dialerapi_bench` on the same server as DATABASE_URL: 1,000,000
sales_master rows spread over 10 form_types and every claimable status (generated in SQL with
MariaDB's Sequence engine), and 200 available agents with 2 skills each. Then each round claims
for a random agent in its own transaction (dialerapi.claims.claim_next) and rolls back, so the
table stays the same for every claim. A reference round trip (SELECT 1 in a transaction) is
measured alternately in the same minutes, because this machine's CPU speed drifts.
Prints a table and writes bench-results-claim.json.
"""

import json
import os
import platform
import random
import statistics
import time
from datetime import datetime
from zoneinfo import ZoneInfo

from common import bench_database
from dialerapi import claims, clock
from dialerapi.db import Database, connect

LEADS = int(os.environ.get("BENCH_LEADS", 1_000_000))
AGENTS = 200
FORM_TYPES = [f"form_{n}" for n in range(10)]
ROUNDS = int(os.environ.get("BENCH_CLAIMS", 3000))
DB_NAME = "dialerapi_bench"

FILL = """
INSERT INTO sales_master
  (oli_id, data_id, phone_number, client_name, form_type, priority_id, dial_status, next_retry_at,
   callback_scheduled_at, call_count, isReserved, created_at, updated_at)
SELECT CONCAT('BENCH-', seq), UUID(), CONCAT('98', LPAD(seq, 8, '0')), CONCAT('Lead ', seq),
       CONCAT('form_', seq %% 10),
       IF(seq %% 20 = 0, 1, 2),
       ELT(1 + seq %% 20, 'Callback', 'Pending', 'Pending', 'Pending', 'Pending', 'Pending', 'Pending',
           'Pending', 'Pending', 'Pending', 'Not Connected', 'Not Connected', 'Not Connected',
           'Not Connected', 'Abandoned', 'Received', 'Received', 'Disposed', 'Rejected', 'Pending'),
       IF(seq %% 20 BETWEEN 10 AND 14, %(now)s - INTERVAL 1 DAY + INTERVAL (seq %% 2880) MINUTE, NULL),
       IF(seq %% 20 = 0, %(now)s - INTERVAL 1 DAY + INTERVAL (seq %% 2880) MINUTE, NULL),
       seq %% 5, 0, %(now)s, %(now)s
FROM seq_1_to_{leads}
"""


def prepare(now):
    url = bench_database(DB_NAME)
    conn = connect(url, io_timeout=600)
    with conn.cursor() as cur:
        cur.execute("SELECT COUNT(*) AS n FROM sales_master")
        if cur.fetchone()["n"] != LEADS:
            print(f"filling sales_master with {LEADS:,} leads ...", flush=True)
            started = time.monotonic()
            cur.execute("DELETE FROM sales_master")
            cur.execute(FILL.format(leads=LEADS), {"now": now})
            cur.execute("DELETE FROM sales_agent_skills")
            cur.execute("DELETE FROM sales_agents")
            for agent_id in range(1, AGENTS + 1):
                cur.execute("INSERT INTO sales_agents (id, extension, name, panel_active, ami_idle)"
                            " VALUES (%s, %s, %s, 1, 1)", (agent_id, str(5000 + agent_id), f"Agent {agent_id}"))
                for skill in random.Random(agent_id).sample(FORM_TYPES, 2):
                    cur.execute("INSERT INTO sales_agent_skills (agent_id, form_type) VALUES (%s, %s)", (agent_id, skill))
            conn.commit()
            cur.execute("ANALYZE TABLE sales_master")
            print(f"  filled in {time.monotonic() - started:.1f} s", flush=True)
    conn.close()
    return url


def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]


def main():
    now = clock.now(ZoneInfo("UTC"))
    db = Database(prepare(now), pool_size=2)
    rng = random.Random(7)
    claim_ms, reference_ms, empty = [], [], 0

    for _ in range(ROUNDS):
        agent_id = rng.randint(1, AGENTS)
        started = time.perf_counter()
        with db.transaction() as conn:
            row = claims.claim_next(conn, agent_id, now)
            conn.rollback()
        claim_ms.append((time.perf_counter() - started) * 1000)
        empty += row is None
        started = time.perf_counter()
        with db.transaction() as conn, conn.cursor() as cur:
            cur.execute("SELECT 1")
            conn.rollback()
        reference_ms.append((time.perf_counter() - started) * 1000)

    result = {
        "date": datetime.now().isoformat(timespec="seconds"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "leads": LEADS, "agents": AGENTS, "claims": ROUNDS, "claims_with_nothing_due": empty,
        "claim_ms": {"p50": round(statistics.median(claim_ms), 2), "p95": round(percentile(claim_ms, 0.95), 2),
                     "p99": round(percentile(claim_ms, 0.99), 2), "max": round(max(claim_ms), 2)},
        "reference_round_trip_ms": {"p50": round(statistics.median(reference_ms), 2),
                                    "p99": round(percentile(reference_ms, 0.99), 2)},
        "target_p99_ms": 10,
    }
    result["target_met"] = result["claim_ms"]["p99"] < result["target_p99_ms"]
    print(f"\nclaim benchmark: {LEADS:,} leads, {AGENTS} agents, {ROUNDS} claims ({result['machine']})")
    print(f"{'':24}{'p50 ms':>10}{'p95 ms':>10}{'p99 ms':>10}{'max ms':>10}")
    c, r = result["claim_ms"], result["reference_round_trip_ms"]
    print(f"{'claim (one transaction)':24}{c['p50']:>10}{c['p95']:>10}{c['p99']:>10}{c['max']:>10}")
    print(f"{'reference: SELECT 1':24}{r['p50']:>10}{'':>10}{r['p99']:>10}")
    print(f"target p99 < 10 ms: {'met' if result['target_met'] else 'NOT met'}")
    with open("bench-results-claim.json", "w") as out:
        json.dump(result, out, indent=2)
    db.close()


if __name__ == "__main__":
    main()
