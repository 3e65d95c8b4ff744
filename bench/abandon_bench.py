"""Claims and settles with the abandon limit enforced, beside not enforced (issue #37).

    make bench            (or: scripts/devdb.sh exec .venv/bin/python bench/abandon_bench.py)

On claim_bench's database (1,000,000 leads, 200 agents, 10 form_types; built by it when missing),
a history of DAYS days of CALLS_PER_DAY settled calls is built once, in SQL (the Sequence engine):
the call records in sales_call_attempts, and their counts in dialerapi_abandon_counts grouped from
those records as settle keeps them (day and hour rows for the whole history, minute rows for the
last two days), plus day and hour rows going back a year for the report. About 2% of the answered
calls are abandoned, so the limit (3%) holds no form_type back and an enforced claim does all the
work an unenforced one does, plus the check.

Then, in-process, alternating blocks (off, on, on, off in the same minutes, since this machine's
speed drifts), each of BLOCK rounds:
- a predictive claim (claims.claim_predictive for a random form_type) in its own transaction,
  rolled back: timed;
- a settle (dialstate.settle, outcomes drawn as in the history: 39% answered, 1% abandoned), of a
  lead claimed progressively in the same transaction just before (not timed), rolled back: timed.
"off" is enforce_abandon_limit = 0, "on" is 1. Target: p99 on within 1.1x of off, for each.
BENCH_ABANDON_CAMPAIGNS=1 runs both modes with every form_type a campaign whose
abandon_connect_seconds is not the floor's (issue #67), so each enforced claim joins them.

Last, `dialerapi report abandons` over a year of history (abandons.report), timed (target: seconds).

Prints a table and writes bench-results-abandon.json.
"""

import json
import os
import platform
import random
import statistics
import time
from datetime import datetime, timedelta

from claim_bench import AGENTS, FORM_TYPES, UTC, percentile, prepare

from dialerapi.plumbing import clock
from dialerapi.plumbing.db import Database, connect
from dialerapi.rules.campaigns import operations
from dialerapi.rules.compliance import abandons
from dialerapi.rules.config import dialer as dialer_config
from dialerapi.rules.dialing import claims
from dialerapi.rules.leads import dialstate

DAYS = 30
CALLS_PER_DAY = int(os.environ.get("BENCH_ABANDON_CALLS_PER_DAY", 200_000))
BLOCK = int(os.environ.get("BENCH_ABANDON_BLOCK", 250))
# BENCH_ABANDON_CAMPAIGNS=1: every form_type a campaign whose abandon_connect_seconds (3) is not the
# floor's (2), in both modes, so each enforced claim joins the campaigns' seconds (issue #67).
CAMPAIGNS = os.environ.get("BENCH_ABANDON_CAMPAIGNS") == "1"
TARGET_RATIO = 1.1
OUTCOMES = ["answered"] * 39 + ["abandoned"] + ["no_answer"] * 40 + ["busy"] * 20

# 30 days of calls ending at the bench's moment, spread evenly, each form_type a tenth of them with
# the same mix of results as settle records them: 39% ANSWER, 1% ABANDON, the rest unanswered; the
# agent connected 1 or 2 s after the answer, 3 s (late) for one answer in 390: each form_type's
# abandon rate is about 2.8%, under the 3% limit.
FILL_CALLS = """
INSERT INTO sales_call_attempts
  (lead_id, oli_id, agent_id, call_type, started_at, ended_at, result, form_type, answered_at, agent_connected_at,
   connect_seconds, late_connect)
SELECT 1 + seq %% 1000000, CONCAT('BENCH-', 1 + seq %% 1000000), NULL, 'outbound', ended_at - INTERVAL 60 SECOND,
       ended_at, result, CONCAT('form_', seq %% 10),
       IF(result IN ('ANSWER', 'ABANDON'), ended_at - INTERVAL 50 SECOND, NULL),
       IF(result = 'ANSWER', ended_at - INTERVAL 50 SECOND + INTERVAL connect SECOND, NULL),
       IF(result = 'ANSWER', connect, NULL), IF(result = 'ANSWER', connect > 2, NULL)
FROM (SELECT seq, %(end)s - INTERVAL (seq * {spacing_ms}) DIV 1000 SECOND AS ended_at,
             CASE WHEN (seq DIV 10) %% 100 < 39 THEN 'ANSWER' WHEN (seq DIV 10) %% 100 = 39 THEN 'ABANDON'
                  WHEN (seq DIV 10) %% 100 < 80 THEN 'NOANSWER' ELSE 'BUSY' END AS result,
             IF((seq DIV 10) %% 1000 = 500, 3, 1 + seq %% 2) AS connect
      FROM seq_1_to_{count}) AS calls
"""
# The counts settle keeps, grouped from those records: answered = ANSWER or ABANDON; abandoned =
# ABANDON or a late connect.
COUNT_CALLS = """
INSERT INTO dialerapi_abandon_counts (grain, form_type, starts_at, node, calls, answered, abandoned, late_connects)
SELECT %(grain)s, form_type, {bucket}, 'bench:3307', COUNT(*), SUM(result IN ('ANSWER', 'ABANDON')),
       SUM(result = 'ABANDON' OR IFNULL(late_connect, 0) = 1), SUM(IFNULL(late_connect, 0))
FROM sales_call_attempts WHERE ended_at >= %(since)s
GROUP BY form_type, {bucket}
"""
BUCKETS = {"d": "DATE(ended_at)", "h": "DATE_FORMAT(ended_at, '%%Y-%%m-%%d %%H:00:00')",
           "m": "DATE_FORMAT(ended_at, '%%Y-%%m-%%d %%H:%%i:00')"}
# A year before the records, day and hour rows of the same size, for the report's range.
OLDER_ROWS = """
INSERT INTO dialerapi_abandon_counts (grain, form_type, starts_at, node, calls, answered, abandoned, late_connects)
SELECT %(grain)s, CONCAT('form_', seq %% 10), %(before)s - INTERVAL (seq DIV 10) {unit}, 'bench:3307',
       %(calls)s, %(answered)s, %(abandoned)s, 0
FROM seq_10_to_{last}
"""


def build_history(url, end):
    """The history ending at `end` (naive UTC), once: call records and their counts."""
    conn = connect(url, io_timeout=3600)
    count = DAYS * CALLS_PER_DAY
    with conn.cursor() as cur:
        cur.execute("SELECT COUNT(*) AS n FROM sales_call_attempts WHERE form_type IS NOT NULL")
        if cur.fetchone()["n"] == count:
            conn.close()
            return
        print(f"building {DAYS} days of {CALLS_PER_DAY:,} calls a day ...", flush=True)
        started = time.monotonic()
        cur.execute("TRUNCATE sales_call_attempts")
        cur.execute("TRUNCATE dialerapi_abandon_counts")
        cur.execute(FILL_CALLS.format(count=count, spacing_ms=86_400_000 // CALLS_PER_DAY), {"end": end})
        for grain, since in (("d", end - timedelta(days=DAYS + 1)), ("h", end - timedelta(days=DAYS + 1)),
                             ("m", end - timedelta(days=2))):
            cur.execute(COUNT_CALLS.format(bucket=BUCKETS[grain]), {"grain": grain, "since": since})
        first = end.replace(hour=0, minute=0, second=0) - timedelta(days=DAYS)
        per_day = CALLS_PER_DAY // 10
        cur.execute(OLDER_ROWS.format(unit="DAY", last=10 * 335 + 9),
                    {"grain": "d", "before": first, "calls": per_day, "answered": per_day * 4 // 10,
                     "abandoned": per_day // 100})
        cur.execute(OLDER_ROWS.format(unit="HOUR", last=10 * 335 * 24 + 9),
                    {"grain": "h", "before": first, "calls": per_day // 24, "answered": per_day // 60,
                     "abandoned": per_day // 2400})
        conn.commit()
        cur.execute("ANALYZE TABLE sales_call_attempts, dialerapi_abandon_counts")
        print(f"  built in {time.monotonic() - started:.1f} s", flush=True)
    conn.close()


def enforce(url, on):
    conn = connect(url)
    with conn.cursor() as cur:
        cur.execute("UPDATE sales_dialer_config SET enforce_abandon_limit = %s", (int(on),))
    conn.commit()
    conn.close()


def own_connect_seconds(url, now, on):
    """Give every form_type a campaign with its own abandon_connect_seconds, or take them all away."""
    conn = connect(url)
    with conn.cursor() as cur:
        cur.execute("DELETE FROM dialerapi_campaigns")
        cur.execute("DELETE FROM dialerapi_campaign_changes")
        cur.execute("DELETE FROM dialerapi_lead_events WHERE type LIKE 'campaign.%%'")
    for form_type in FORM_TYPES if on else ():
        operations.update(conn, form_type, {"abandon_connect_seconds": 3}, now, "bench")
    conn.commit()
    conn.close()


def block(db, now, rng):
    """BLOCK rounds of a predictive claim and a settle, each rolled back: their times in ms."""
    claim_ms, settle_ms, refused = [], [], 0
    for _ in range(BLOCK):
        started = time.perf_counter()
        with db.transaction() as conn:
            try:
                claims.claim_predictive(conn, now, form_type=rng.choice(FORM_TYPES), tz=UTC)
            except claims.NotClaimable:
                refused += 1
            conn.rollback()
        claim_ms.append((time.perf_counter() - started) * 1000)
        with db.transaction() as conn:
            lead = claims.claim_next(conn, rng.randint(1, AGENTS), now, tz=UTC)
            if lead is not None:
                started = time.perf_counter()
                dialstate.settle(conn, lead["oli_id"], rng.choice(OUTCOMES), now, tz=UTC, grace_minutes=5,
                                 release_retry_ms=30000, started_at=now - timedelta(seconds=30))
                settle_ms.append((time.perf_counter() - started) * 1000)
            conn.rollback()
    return claim_ms, settle_ms, refused


def summary(values):
    return {"n": len(values), "p50": round(statistics.median(values), 2), "p99": round(percentile(values, 0.99), 2),
            "max": round(max(values), 2)}


def main():
    now = clock.now(UTC)
    url = prepare(now)
    build_history(url, now)
    own_connect_seconds(url, now, CAMPAIGNS)
    db = Database(url, pool_size=2)
    rng = random.Random(37)
    times = {state: {"claim": [], "settle": []} for state in ("off", "on")}
    refused = {"off": 0, "on": 0}
    try:
        block(db, now, rng)  # warm the pool and the pages both states read
        for _ in range(2):
            for state in ("off", "on", "on", "off"):
                enforce(url, state == "on")
                claim_ms, settle_ms, held = block(db, now, rng)
                times[state]["claim"] += claim_ms
                times[state]["settle"] += settle_ms
                refused[state] += held
        started = time.perf_counter()
        with db.transaction() as conn:
            config = dialer_config.load_config(conn)
            year = abandons.report(conn, (now - timedelta(days=364)).date(), now.date(), config)
        report_seconds = time.perf_counter() - started
        config_24h = config.__class__(**{**config.__dict__, "abandon_period": "24h"})
        started = time.perf_counter()
        with db.transaction() as conn:
            abandons.report(conn, (now - timedelta(days=364)).date(), now.date(), config_24h)
        report_24h_seconds = time.perf_counter() - started
    finally:
        enforce(url, True)
        db.close()
        own_connect_seconds(url, now, False)
    figures = {state: {op: summary(values) for op, values in ops.items()} for state, ops in times.items()}
    ratios = {op: round(figures["on"][op]["p99"] / figures["off"][op]["p99"], 3) for op in ("claim", "settle")}
    result = {
        "date": datetime.now().isoformat(timespec="seconds"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "history": {"days": DAYS, "calls_per_day": CALLS_PER_DAY, "records": DAYS * CALLS_PER_DAY},
        "campaigns_with_own_connect_seconds": len(FORM_TYPES) if CAMPAIGNS else 0,
        "rounds_each_way": 4 * BLOCK, "figures_ms": figures, "p99_ratio_on_off": ratios,
        "refused_on": refused["on"], "target_ratio": TARGET_RATIO,
        "report_one_year_seconds": {"30d": round(report_seconds, 2), "24h": round(report_24h_seconds, 2)},
        "report_days": len(year["days"]),
    }
    result["target_met"] = all(ratio <= TARGET_RATIO for ratio in ratios.values()) and refused["on"] == 0
    print(f"\npredictive claims and settles with the abandon limit enforced beside not; history {DAYS} days of "
          f"{CALLS_PER_DAY:,} calls a day; {4 * BLOCK} rounds each way (off, on, on, off, twice)"
          + ("; every form_type a campaign with its own connect seconds" if CAMPAIGNS else ""))
    print(f"{'':10}{'off p50':>9}{'off p99':>9}{'on p50':>9}{'on p99':>9}{'ratio':>8}")
    for op in ("claim", "settle"):
        off, on = figures["off"][op], figures["on"][op]
        print(f"{op:10}{off['p50']:>9}{off['p99']:>9}{on['p50']:>9}{on['p99']:>9}{ratios[op]:>8}")
    print(f"claims refused for abandon_limit with it on: {refused['on']} (the history is under the limit)")
    print(f"report over a year: {report_seconds:.2f} s (30d), {report_24h_seconds:.2f} s (24h)")
    print(f"target p99 on <= {TARGET_RATIO} x off: {'met' if result['target_met'] else 'NOT met'}")
    with open("bench-results-abandon.json", "w") as out:
        json.dump(result, out, indent=2)


if __name__ == "__main__":
    main()
