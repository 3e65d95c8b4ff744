"""Claims with the do-not-call list and the calling window on, beside off (issue #30).

    make bench            (or: scripts/devdb.sh exec .venv/bin/python bench/compliance_bench.py)

On claim_bench's database (1,000,000 leads, one in ten a US number in four zones; built by it when
missing), a list of 10,000,000 numbers is built once in `dnc_full` (SQL, the Sequence engine):
9,950,000 numbers no lead has and the phones of every 20th lead (50,000). "On" swaps it in as
dialerapi_dnc (RENAME TABLE, instant), marks those leads do_not_call as the list's commands would,
and sets obey_calling_window = 1 (09:00-21:00 in each lead's zone, "now" the machine's clock, so
whichever US zones are asleep are passed by). "Off" is the schema without a list (an empty
dialerapi_dnc, no lead marked) and without the window, as before the issue.

- In-process: claims_next for a random agent in its own transaction, rolled back, BLOCKS blocks of
  BLOCK claims, off and on alternately in the same minutes (the machine's speed drifts); p50/p99
  of each and the p99 ratio (target: on within 1.2x of off).
- A busy floor with the rules on: claim_bench.busy_floor, whose empty answers are each checked by
  claiming again (target: 0 while a lawful lead is due); and a check that no lead claimed on the
  busy floor was listed or outside its window.

Prints a table and writes bench-results-compliance.json.
"""

import json
import os
import platform
import random
import statistics
import time
from datetime import datetime, timezone
from zoneinfo import ZoneInfo

import phonenumbers
from phonenumbers.timezone import time_zones_for_number

from claim_bench import AGENTS, UTC, busy_floor, percentile, prepare
from dialerapi.plumbing import clock
from dialerapi.plumbing.db import Database, connect
from dialerapi.rules import claims

LIST_SIZE = int(os.environ.get("BENCH_DNC_NUMBERS", 10_000_000))
LISTED_EVERY = 20  # every 20th lead's phone is on the list
BLOCKS = int(os.environ.get("BENCH_COMPLIANCE_BLOCKS", 8))
BLOCK = int(os.environ.get("BENCH_COMPLIANCE_BLOCK", 250))
TARGET_RATIO = 1.2

FILL_LIST = """
INSERT INTO dnc_full (phone, source, oli_id, added_at)
SELECT 919000000000 + seq * 7, 'bench', NULL, %(now)s FROM seq_1_to_{count}
"""
LIST_LEADS = f"""
INSERT IGNORE INTO dnc_full (phone, source, oli_id, added_at)
SELECT phone_e164, 'bench', oli_id, %(now)s FROM sales_master WHERE id %% {LISTED_EVERY} = 7
"""


def build_list(conn, now):
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE IF NOT EXISTS dnc_full LIKE dialerapi_dnc")
        cur.execute("SELECT COUNT(*) AS n FROM dnc_full")
        if cur.fetchone()["n"] >= LIST_SIZE:
            return
        print(f"building a do-not-call list of {LIST_SIZE:,} numbers ...", flush=True)
        started = time.monotonic()
        cur.execute("TRUNCATE dnc_full")
        cur.execute(LIST_LEADS, {"now": now})
        cur.execute("SELECT COUNT(*) AS n FROM dnc_full")
        cur.execute(FILL_LIST.format(count=LIST_SIZE - cur.fetchone()["n"]), {"now": now})
        conn.commit()
        print(f"  built in {time.monotonic() - started:.1f} s", flush=True)


def rules(url, on):
    """Swap the full list in (on) or out (off), mark or clear its leads, obey the window or not.
    RENAME TABLE waits for every transaction that read the list, so no pool is open meanwhile."""
    conn = connect(url)
    with conn.cursor() as cur:
        cur.execute("SET SESSION lock_wait_timeout = 60")
        cur.execute("SELECT COUNT(*) AS n FROM dialerapi_dnc")
        listed_now = cur.fetchone()["n"] > 0
        if on != listed_now:
            cur.execute("RENAME TABLE dialerapi_dnc TO dnc_swap, dnc_full TO dialerapi_dnc, dnc_swap TO dnc_full")
        cur.execute(f"UPDATE sales_master SET do_not_call = %s WHERE id %% {LISTED_EVERY} = 7", (int(on),))
        cur.execute("UPDATE sales_dialer_config SET obey_calling_window = %s", (int(on),))
    conn.commit()
    conn.close()


def block_ms(url, now, rng):
    """BLOCK claims for random agents, each in its own transaction, rolled back: their times in ms."""
    db = Database(url, pool_size=2)
    times = []
    try:
        for _ in range(BLOCK):
            started = time.perf_counter()
            with db.transaction() as conn:
                claims.claim_next(conn, rng.randint(1, AGENTS), now, tz=UTC)
                conn.rollback()
            times.append((time.perf_counter() - started) * 1000)
    finally:
        db.close()
    return times


def summary(values):
    return {"claims": len(values), "p50": round(statistics.median(values), 2),
            "p99": round(percentile(values, 0.99), 2), "max": round(max(values), 2)}


def unlawful_claims(conn):
    """How many leads the busy floor reserved were listed or outside 09:00-21:00 in a zone of their
    number, worked out here with phonenumbers and zoneinfo, not the service's modules."""
    with conn.cursor() as cur:
        cur.execute("SELECT phone_number FROM sales_master WHERE dial_status = 'Calling' AND isReserved = 1")
        reserved = [row["phone_number"] for row in cur.fetchall()]
        cur.execute("SELECT COUNT(*) AS n FROM dialerapi_dnc WHERE phone IN %s", (reserved or ["0"],))
        listed = cur.fetchone()["n"]
    instant = datetime.now(timezone.utc)
    closed = 0
    for digits in reserved:
        zones = [zone for zone in time_zones_for_number(phonenumbers.parse("+" + digits)) if zone != "Etc/Unknown"]
        closed += not all(9 <= instant.astimezone(ZoneInfo(zone)).hour < 21 for zone in zones or ["UTC"])
    return listed + closed


def main():
    now = clock.now(UTC)
    url = prepare(now)
    conn = connect(url, io_timeout=1200)
    build_list(conn, now)
    conn.close()
    rng = random.Random(11)
    figures = {"off": [], "on": []}
    try:
        for block in range(BLOCKS):
            for state in (("off", "on") if block % 2 == 0 else ("on", "off")):
                rules(url, state == "on")
                figures[state].extend(block_ms(url, now, rng))
        rules(url, True)
        print(f"busy floor with the rules on: {AGENTS} agents claiming at once ...", flush=True)
        floor = busy_floor(url, now, unlawful_claims)
    finally:
        rules(url, False)
    off, on = summary(figures["off"]), summary(figures["on"])
    result = {
        "date": datetime.now().isoformat(timespec="seconds"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "list_numbers": LIST_SIZE, "listed_leads_share": 1 / LISTED_EVERY, "now_utc": str(now),
        "claim_off_ms": off, "claim_on_ms": on, "p99_ratio": round(on["p99"] / off["p99"], 2),
        "target_ratio": TARGET_RATIO, "busy_floor_on": floor,
    }
    result["target_met"] = (result["p99_ratio"] <= TARGET_RATIO
                            and floor["empty_answers_while_leads_were_due"] == 0 and floor["unlawful"] == 0)
    print(f"\nclaims with the do-not-call list ({LIST_SIZE:,} numbers, every {LISTED_EVERY}th lead listed) and "
          f"the calling window on, beside off; {BLOCKS} blocks of {BLOCK} each, alternating; now {now} UTC")
    print(f"{'':28}{'p50 ms':>10}{'p99 ms':>10}{'max ms':>10}")
    print(f"{'claim, rules off':28}{off['p50']:>10}{off['p99']:>10}{off['max']:>10}")
    print(f"{'claim, rules on':28}{on['p50']:>10}{on['p99']:>10}{on['max']:>10}")
    print(f"p99 on / off: {result['p99_ratio']} (target <= {TARGET_RATIO})")
    print(f"busy floor, rules on: {floor['claims']} claims, {floor['claims_per_s']} claims/s, p99 {floor['p99_ms']} ms,"
          f" {floor['empty_answers_while_leads_were_due']} empty answers while lawful leads were due (goal 0),"
          f" {floor['unlawful']} listed or outside their window (goal 0)")
    print(f"target: {'met' if result['target_met'] else 'NOT met'}")
    with open("bench-results-compliance.json", "w") as out:
        json.dump(result, out, indent=2)


if __name__ == "__main__":
    main()
