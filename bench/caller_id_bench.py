"""Caller-ID benchmark: a progressive claim's p50/p99 with local presence on, beside the same claim
on a floor without caller IDs, in the same minutes (docs/operations/caller-ids.md).

    make bench            (or: scripts/devdb.sh exec .venv/bin/python bench/caller_id_bench.py)

On bench/claim_bench.py's database (1,000,000 leads over 10 form_types, 200 agents; one lead in
ten a US number of 212, 312, 415 or 808) it adds 2,000 numbers in 20 pools of 100 (each pool 4
numbers of each of 25 US area codes, those four among them), and gives each form_type a campaign
presenting from one pool with the full chain (area_code, state, pool): a US lead gets a number of
its area code, an Indian one any number of its pool. The daily cap is set above the run's claims,
so every claim presents a number. Each round claims for a random agent in its own transaction and
rolls back, alternating a floor with the numbers and the same floor without them (the config
held with `fixed_config`, caller_ids_on true or false: both read it without a statement, so the
difference is the choice alone); each side goes first every other round. Then the engine's view:
progressive claims through one gunicorn (deploy/gunicorn.conf.py, 2 workers) with wrk at 50 a
second (bench/engine_claim.lua), in four blocks of BENCH_HTTP_SECONDS: with the numbers, without,
without, with (so a steady drift of this machine's speed weighs on both sides alike), each
block's claimed leads put back after it; a side's p99 is the mean of its two blocks'. The numbers
and the campaigns are taken away afterwards, so bench/claim_bench.py measures the floor it always
did.

Prints a table and writes bench-results-caller-ids.json.
"""

import dataclasses
import json
import os
import platform
import random
import statistics
from datetime import datetime

from claim_bench import (AGENTS, ENGINE_SECRET, FORM_TYPES, HTTP_SECONDS, LEADS, RATE, UTC, claimed_leads, marks,
                         percentile, prepare, put_back, timed_claim)
from common import gunicorn, wrk

from dialerapi.plumbing import clock
from dialerapi.plumbing.db import Database, connect
from dialerapi.rules.caller_ids import numbers
from dialerapi.rules.campaigns import operations
from dialerapi.rules.config import dialer as dialer_config

# 8,000 claims each way: the p99 of 3,000 moved by up to 0.06 of its ratio from one run to the next.
ROUNDS = int(os.environ.get("BENCH_CLAIMS", 8000))
POOLS = [f"pool_{n:02d}" for n in range(20)]
AREA_CODES = ("212", "312", "415", "808", "919", "305", "404", "617", "702", "206", "303", "713", "214", "602",
              "503", "615", "704", "801", "813", "614", "317", "414", "505", "907", "402")
PER_AREA_CODE = 4
TARGET_RATIO = 1.1


def add_numbers(conn, now):
    """2,000 numbers: pool k holds +1 AC 555 01NN for NN in 4k .. 4k + 3, for every AC."""
    for k, pool in enumerate(POOLS):
        for area_code in AREA_CODES:
            for n in range(PER_AREA_CODE):
                numbers.add(conn, f"+1{area_code}55501{PER_AREA_CODE * k + n:02d}", [pool], now, "bench",
                            daily_cap=numbers.MAX_DAILY_CAP)


def take_away(conn):
    with conn.cursor() as cur:
        for table in ("dialerapi_caller_id_changes", "dialerapi_caller_id_pools", "dialerapi_caller_ids"):
            cur.execute(f"DELETE FROM {table}")
        cur.execute("DELETE FROM dialerapi_lead_events WHERE type LIKE 'caller\\_id.%%' OR type = 'campaign.updated'")
        cur.execute("DELETE FROM dialerapi_campaign_changes WHERE changed_by = 'bench'")
        cur.execute("DELETE FROM dialerapi_campaigns WHERE updated_by = 'bench'")


def set_up(db, now):
    """The numbers, and each form_type's campaign presenting from its pool."""
    with db.transaction() as conn:
        take_away(conn)
        add_numbers(conn, now)
        for form_type, pool in zip(FORM_TYPES, POOLS):
            operations.update(conn, form_type, {"caller_id_pool": pool}, now, "bench")


def over_http(db, now):
    """{with_caller_ids, without_caller_ids: {blocks: [wrk's figures of each block, with the leads
    it claimed and the numbers presented], p50_ms, p99_ms (the means of its blocks')}, p99_ratio}:
    claims through gunicorn in turns (the module doc)."""
    conn = connect(db.url)
    conn.autocommit(True)
    blocks = {"with_caller_ids": [], "without_caller_ids": []}
    with gunicorn("wsgi:app", 18500 + os.getpid() % 400, DATABASE_URL=db.url, WS_SECRET="bench-crm-secret-0123456789",
                  ENGINE_SECRET=ENGINE_SECRET) as (base, _):
        for block, with_numbers in enumerate((True, False, False, True)):
            if with_numbers:
                set_up(db, now)
            else:
                with db.transaction() as cleared:
                    take_away(cleared)
            before = marks(conn)
            report = wrk("engine_claim.lua", base, HTTP_SECONDS, ENGINE_SECRET=ENGINE_SECRET, BENCH_AGENTS=AGENTS,
                         BENCH_RATE=RATE, BENCH_RUN=f"callerids{int(now.timestamp())}-{block}")
            live = claimed_leads(conn)
            with conn.cursor() as cur:
                cur.execute("SELECT COALESCE(SUM(presented_today), 0) AS presented FROM dialerapi_caller_ids")
                presented = int(cur.fetchone()["presented"])
            put_back(conn, live, before)
            side = "with_caller_ids" if with_numbers else "without_caller_ids"
            blocks[side].append({**{key: report[key] for key in ("requests", "status_errors", "p50_ms", "p99_ms", "max_ms")},
                                 "leads_claimed": len(live), "claims_presenting_a_number": presented})
    conn.close()
    http = {side: {"blocks": figures, "p50_ms": round(statistics.mean(f["p50_ms"] for f in figures), 2),
                   "p99_ms": round(statistics.mean(f["p99_ms"] for f in figures), 2)}
            for side, figures in blocks.items()}
    http["p99_ratio"] = round(http["with_caller_ids"]["p99_ms"] / http["without_caller_ids"]["p99_ms"], 3)
    return http


def main():
    now = clock.now(UTC)
    db = Database(prepare(now), pool_size=2)
    set_up(db, now)
    try:
        with db.transaction() as conn:
            with_caller_ids = dialer_config.load_config(conn)
        assert with_caller_ids.caller_ids_on
        without = dataclasses.replace(with_caller_ids, caller_ids_on=False)
        rng = random.Random(7)
        ms = {"caller_ids": [], "none": []}
        presented = 0
        pair = (("caller_ids", with_caller_ids), ("none", without))
        for round_number in range(ROUNDS):
            # Each side goes first every other round: the claim that follows another in the same
            # milliseconds runs faster, so a fixed order would favour one side.
            for name, config in pair if round_number % 2 == 0 else pair[::-1]:
                with dialer_config.fixed_config(config):
                    row, took = timed_claim(db, rng.randint(1, AGENTS), now)
                ms[name].append(took)
                presented += name == "caller_ids" and row is not None and row["caller_id_choice"] is not None
        http = over_http(db, now) if HTTP_SECONDS else {}
    finally:
        with db.transaction() as conn:
            take_away(conn)
        db.close()

    def figures(values):
        return {"claims": len(values), "p50_ms": round(statistics.median(values), 2),
                "p99_ms": round(percentile(values, 0.99), 2), "max_ms": round(max(values), 2)}

    result = {
        "date": datetime.now().isoformat(timespec="seconds"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "leads": LEADS, "agents": AGENTS, "numbers": len(POOLS) * len(AREA_CODES) * PER_AREA_CODE, "pools": len(POOLS),
        "with_caller_ids": figures(ms["caller_ids"]), "without_caller_ids": figures(ms["none"]),
        "claims_presenting_a_number": presented, "http": http,
    }
    result["p99_ratio"] = round(result["with_caller_ids"]["p99_ms"] / result["without_caller_ids"]["p99_ms"], 3)
    result["p50_ratio"] = round(result["with_caller_ids"]["p50_ms"] / result["without_caller_ids"]["p50_ms"], 3)
    result["target_p99_ratio"] = TARGET_RATIO
    result["target_met"] = result["p99_ratio"] <= TARGET_RATIO
    print(f"\ncaller-ID benchmark: {LEADS:,} leads, {result['numbers']:,} numbers in {len(POOLS)} pools, "
          f"{ROUNDS} claims each way, taking turns ({result['machine']})")
    print(f"{'':28}{'p50 ms':>10}{'p99 ms':>10}{'max ms':>10}")
    for label, name in (("claim, caller IDs", "with_caller_ids"), ("claim, no caller IDs", "without_caller_ids")):
        f = result[name]
        print(f"{label:28}{f['p50_ms']:>10}{f['p99_ms']:>10}{f['max_ms']:>10}")
    print(f"p99 ratio {result['p99_ratio']} (target <= {TARGET_RATIO}: {'met' if result['target_met'] else 'NOT met'}),"
          f" p50 ratio {result['p50_ratio']}; {presented} of {ROUNDS} claims presented a number")
    if http:
        print(f"over HTTP (claims at {RATE}/s, blocks of {HTTP_SECONDS} s in turns): p50 / p99 "
              f"{http['with_caller_ids']['p50_ms']} / {http['with_caller_ids']['p99_ms']} ms with caller IDs, "
              f"{http['without_caller_ids']['p50_ms']} / {http['without_caller_ids']['p99_ms']} ms without; "
              f"p99 ratio {http['p99_ratio']} (target <= {TARGET_RATIO}: "
              f"{'met' if http['p99_ratio'] <= TARGET_RATIO else 'NOT met'})")
    with open("bench-results-caller-ids.json", "w") as out:
        json.dump(result, out, indent=2)


if __name__ == "__main__":
    main()
