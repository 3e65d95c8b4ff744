"""Claims with every state calling rule on, beside off (issue #68 item 7: claim p99 within 1.1x).

    make bench            (or: scripts/devdb.sh exec .venv/bin/python bench/state_rules_bench.py)

Builds (once) a database `dialerapi_bench_states`: 1,000,000 leads as claim_bench lays them out (10
form_types, every claimable status, 200 agents with 2 skills each), every one a US number, spread
evenly over an area code of each of the 50 states and DC; each lead's calling profile (its zones
and its state) worked out as a push does, once per area code. "On" enables every row of the
shipped table (rules.compliance.state_table: the federal hours, and the states' hours, Sunday bans and
holidays); "off" enables none. The calling window stays off either way: its cost is
compliance_bench's.

The claims run at moments of the bench's week (UTC; leads due as claim_bench made them): weekday
hours when all states are open, when the east closes, when only the west is open, a Sunday (three
states banned, Texas from noon) and Christmas Day (five states' holiday). At each, BLOCK claims for
random agents, each in its own transaction rolled back, off, on, on, off, four times over in the
same minutes (the machine's speed drifts): p50/p99 each way and the p99 ratio. Prints a table and writes
bench-results-state-rules.json.
"""

import json
import os
import platform
import random
import statistics
import time
from datetime import datetime, timedelta

from claim_bench import AGENTS, FILL, FORM_TYPES, UTC, make_agents, percentile
from common import bench_database

from dialerapi.plumbing import clock
from dialerapi.plumbing.db import Database, connect
from dialerapi.rules.compliance import claim_checks, state_table
from dialerapi.rules.compliance.us_area_codes import AREA_CODES
from dialerapi.rules.config import dialer as dialer_config
from dialerapi.rules.dialing import claims

LEADS = int(os.environ.get("BENCH_LEADS", 1_000_000))
DB_NAME = "dialerapi_bench_states"
BLOCK = int(os.environ.get("BENCH_STATES_BLOCK", 125))
# Blocks alternate off, on, on, off, ROUNDS times: this machine's speed drifts by more than the
# difference measured, within a minute.
ROUNDS = 4
TARGET_RATIO = 1.1
# One area code of each state (and DC) that lies in that state alone.
STATE_CODES = sorted({states[0]: code for code, states in sorted(AREA_CODES.items(), reverse=True)
                      if len(states) == 1 and states[0] != "PR"}.items())
PHONE = "CONCAT('1', ELT(1 + (seq DIV 10) %% {count}, {codes}), '2', LPAD(seq %% 1000000, 6, '0'))"


def prepare(now):
    url = bench_database(DB_NAME)
    conn = connect(url, io_timeout=1200)
    with conn.cursor() as cur:
        cur.execute("SELECT COUNT(*) AS n, SUM(call_zone_id = 0) AS unknown FROM sales_master")
        counts = cur.fetchone()
        if counts["n"] != LEADS or counts["unknown"]:
            print(f"filling sales_master with {LEADS:,} leads over {len(STATE_CODES)} states ...", flush=True)
            started = time.monotonic()
            cur.execute("DELETE FROM sales_master")
            codes = ", ".join(f"'{code}'" for _, code in STATE_CODES)
            phone = PHONE.format(count=len(STATE_CODES), codes=codes)
            fill = FILL.replace(FILL[FILL.index("IF(seq %% 10 = 3"):FILL.index("CONCAT('Lead ', seq)")], phone + ",\n       ")
            cur.execute(fill.format(leads=LEADS), {"now": now})
            profiles(conn, cur)
            make_agents(cur, FORM_TYPES)
            conn.commit()
            cur.execute("ANALYZE TABLE sales_master")
            print(f"  filled in {time.monotonic() - started:.1f} s", flush=True)
    conn.close()
    return url


def profiles(conn, cur):
    """phone_e164 and call_zone_id of every lead as a push works them out, once per area code."""
    config = dialer_config.load_config(conn)
    cases = []
    for _, code in STATE_CODES:
        _, names, _ = claim_checks.lead_profile({"phone_number": f"1{code}2010001"}, config)
        cases.append(f"WHEN '{code}' THEN {claim_checks.zone_ids(conn, [names])[names]}")
    cur.execute("UPDATE sales_master SET phone_e164 = CAST(phone_number AS UNSIGNED), do_not_call = 0,"
                f" call_zone_id = CASE SUBSTRING(phone_number, 2, 3) {' '.join(cases)} END")


def switch(url, on, now):
    conn = connect(url)
    with conn.cursor() as cur:
        cur.execute("DELETE FROM dialerapi_calling_rules")
        if on:
            cur.executemany("INSERT INTO dialerapi_calling_rules (name, enabled_at) VALUES (%s, %s)",
                            [(rule.name, now) for rule in state_table.RULES])
    conn.commit()
    conn.close()


def block(db, now, rng):
    times, empty = [], 0
    for _ in range(BLOCK):
        started = time.perf_counter()
        with db.transaction() as conn:
            empty += claims.claim_next(conn, rng.randint(1, AGENTS), now, tz=UTC) is None
            conn.rollback()
        times.append((time.perf_counter() - started) * 1000)
    return times, empty


def summary(values):
    return {"claims": len(values), "p50": round(statistics.median(values), 2),
            "p99": round(percentile(values, 0.99), 2), "max": round(max(values), 2)}


def moments(filled):
    """(naive UTC moment, what is open then) of the bench's week, after `filled` (leads all due)."""
    day = filled.date() + timedelta(days=1)
    while day.weekday() != 1:  # a Tuesday
        day += timedelta(days=1)
    sunday = day + timedelta(days=5)
    christmas = datetime(filled.year if filled < datetime(filled.year, 12, 25) else filled.year + 1, 12, 25)
    at = lambda d, hour: datetime.combine(d, datetime.min.time()) + timedelta(hours=hour)  # noqa: E731
    return [(at(day, 18), "weekday 12:00 Chicago: every state open"),
            (at(day, 1), "weekday 19:00 Chicago: the east past 20:00/21:00, RI closed"),
            (at(day, 4), "weekday 22:00 Chicago: only the west and Hawaii open"),
            (at(sunday, 18), "Sunday noon Chicago: AL, LA, MS, RI banned, Texas from noon"),
            (at(christmas, 18), "Christmas Day: AL, LA, MS, RI, UT barred")]


def main():
    url = prepare(clock.now(UTC))
    conn = connect(url)
    with conn.cursor() as cur:
        cur.execute("SELECT MAX(created_at) AS filled FROM sales_master")
        filled = cur.fetchone()["filled"]
    conn.close()
    rng = random.Random(68)
    results = []
    db = Database(url, pool_size=2)
    try:
        for now, note in moments(filled):
            print(f"{now} UTC ({note}) ...", flush=True)
            figures = {"off": [], "on": []}
            empty = {"off": 0, "on": 0}
            for state in ("off", "on", "on", "off") * ROUNDS:
                switch(url, state == "on", now)
                times, none = block(db, now, rng)
                figures[state] += times
                empty[state] += none
            off, on = summary(figures["off"]), summary(figures["on"])
            results.append({"now_utc": str(now), "note": note, "claim_off_ms": off, "claim_on_ms": on,
                            "empty_answers_on": empty["on"], "p99_ratio": round(on["p99"] / off["p99"], 2)})
    finally:
        db.close()
        switch(url, False, filled)
    result = {
        "date": datetime.now().isoformat(timespec="seconds"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "leads": LEADS, "states": len(STATE_CODES), "rules": [rule.name for rule in state_table.RULES],
        "claims_each_way_per_moment": 2 * BLOCK * ROUNDS, "target_ratio": TARGET_RATIO, "moments": results,
        "worst_p99_ratio": max(m["p99_ratio"] for m in results),
    }
    result["target_met"] = result["worst_p99_ratio"] <= TARGET_RATIO
    print(f"\nclaims with every state rule on ({len(state_table.RULES)} rows), beside off; {2 * BLOCK * ROUNDS} claims each "
          f"way at each moment (off, on, on, off, {ROUNDS} times); {LEADS:,} leads over {len(STATE_CODES)} states")
    print(f"{'now (UTC)':21}{'off p50':>9}{'off p99':>9}{'on p50':>9}{'on p99':>9}{'ratio':>7}{'empty on':>10}  moment")
    for m in results:
        off, on = m["claim_off_ms"], m["claim_on_ms"]
        print(f"{m['now_utc']:21}{off['p50']:>9}{off['p99']:>9}{on['p50']:>9}{on['p99']:>9}{m['p99_ratio']:>7}"
              f"{m['empty_answers_on']:>10}  {m['note']}")
    print(f"worst p99 on / off: {result['worst_p99_ratio']} (target <= {TARGET_RATIO} at every moment)")
    print(f"target: {'met' if result['target_met'] else 'NOT met'}")
    with open("bench-results-state-rules.json", "w") as out:
        json.dump(result, out, indent=2)


if __name__ == "__main__":
    main()
