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
difference is the choice alone). Then the engine's view: claims through gunicorn with wrk
(bench/claim_bench.py's over_http), with the numbers and without them. The numbers and the
campaigns are taken away afterwards, so bench/claim_bench.py measures the floor it always did.

Prints a table and writes bench-results-caller-ids.json.
"""

import dataclasses
import json
import os
import platform
import random
import statistics
from datetime import datetime

from claim_bench import AGENTS, FORM_TYPES, HTTP_SECONDS, LEADS, UTC, over_http, percentile, prepare, timed_claim

from dialerapi.plumbing import clock
from dialerapi.plumbing.db import Database
from dialerapi.rules.caller_ids import numbers
from dialerapi.rules.campaigns import operations
from dialerapi.rules.config import dialer as dialer_config

ROUNDS = int(os.environ.get("BENCH_CLAIMS", 3000))
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


def http_figures(report):
    return {key: report[key] for key in ("requests", "status_errors", "p50_ms", "p99_ms", "max_ms")}


def main():
    now = clock.now(UTC)
    db = Database(prepare(now), pool_size=2)
    with db.transaction() as conn:
        take_away(conn)
        add_numbers(conn, now)
        for form_type, pool in zip(FORM_TYPES, POOLS):
            operations.update(conn, form_type, {"caller_id_pool": pool}, now, "bench")
    try:
        with db.transaction() as conn:
            with_caller_ids = dialer_config.load_config(conn)
        assert with_caller_ids.caller_ids_on
        without = dataclasses.replace(with_caller_ids, caller_ids_on=False)
        rng = random.Random(7)
        ms = {"caller_ids": [], "none": []}
        presented = 0
        for _ in range(ROUNDS):
            for name, config in (("caller_ids", with_caller_ids), ("none", without)):
                with dialer_config.fixed_config(config):
                    row, took = timed_claim(db, rng.randint(1, AGENTS), now)
                ms[name].append(took)
                presented += name == "caller_ids" and row is not None and row["caller_id_choice"] is not None
        # The engine's view: claims through gunicorn at 50 a second (wrk), with the numbers, then
        # without them (claim_bench.over_http; BENCH_HTTP_SECONDS, 0 for none).
        http = {}
        if HTTP_SECONDS:
            http["with_caller_ids"] = http_figures(over_http(db.url)[0])
            with db.transaction() as conn:
                take_away(conn)
            http["without_caller_ids"] = http_figures(over_http(db.url)[0])
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
        http["p99_ratio"] = round(http["with_caller_ids"]["p99_ms"] / http["without_caller_ids"]["p99_ms"], 3)
        print(f"over HTTP ({HTTP_SECONDS} s of claims each way at 50/s): p50 / p99 "
              f"{http['with_caller_ids']['p50_ms']} / {http['with_caller_ids']['p99_ms']} ms with caller IDs, "
              f"{http['without_caller_ids']['p50_ms']} / {http['without_caller_ids']['p99_ms']} ms without; "
              f"p99 ratio {http['p99_ratio']}")
    with open("bench-results-caller-ids.json", "w") as out:
        json.dump(result, out, indent=2)


if __name__ == "__main__":
    main()
