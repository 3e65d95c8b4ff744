"""Progressive claims with a contact cap on every number, beside caps off (issue #50).

    make bench            (or: scripts/devdb.sh exec .venv/bin/python bench/caps_bench.py)

On claim_bench's database (1,000,000 leads, 200 agents with 2 of 10 form_types each; built by it
when missing), the leads are made to share numbers as a CRM's do: every tenth lead takes the number
of the lead four ids before it (phone_number and phone_e164 both, so the claim's own check agrees),
so 10% of the leads have a number another lead also has. A week of contact attempts is written
once: the number of every seventh lead was dialed `id % 8` times in the last 7 days (0 to 7; one in
eight of them is at the cap). "On" enables the 7-in-7-days cap on every number (reg-f-7-in-7, the
widest shipped preset: every claim locks its number, reads its attempts and records one; a lead at
the cap is held, and the claim goes on to the next); "off" disables it, with the same leads and
attempts.

In alternating blocks (off, on, on, off, three times over, in the same minutes, since this machine's speed
drifts), each of BLOCK rounds: a progressive claim for a random agent (claims.claim_next) in its
own transaction, rolled back (so each claim meets the same floor), timed.

Target (issue #50): claim p99 with caps on within 1.1x of off. Then, beyond the target, one block
with the first HEAD due leads of every form_type at the cap, so every claim holds leads before it
takes one (and, rolled back, holds them again next time): what a hold costs.
Prints a table and writes bench-results-caps.json. The leads' numbers are put back afterwards.
"""

import json
import os
import platform
import random
from datetime import datetime

from claim_bench import AGENTS, UTC, claim_block, claim_figures, prepare

from dialerapi.plumbing import clock
from dialerapi.plumbing.db import Database, connect
from dialerapi.rules.compliance import contact_caps

BLOCK = int(os.environ.get("BENCH_CAPS_BLOCK", 1000))
ORDER = (False, True, True, False) * 3
TARGET_RATIO = 1.1
CAP = "reg-f-7-in-7"
HEAD = 3

SAVE = """
CREATE TABLE bench_caps_saved ENGINE=InnoDB AS
SELECT m.id, m.phone_number, m.phone_e164, o.phone_number AS shared_number, o.phone_e164 AS shared_e164
FROM sales_master AS m JOIN sales_master AS o ON o.id = m.id - 4
WHERE m.id %% 10 = 0
"""
SHARE = """
UPDATE sales_master AS m JOIN bench_caps_saved AS s ON s.id = m.id
SET m.phone_number = s.shared_number, m.phone_e164 = s.shared_e164
"""
UNSHARE = """
UPDATE sales_master AS m JOIN bench_caps_saved AS s ON s.id = m.id
SET m.phone_number = s.phone_number, m.phone_e164 = s.phone_e164
"""
ATTEMPTS = """
INSERT IGNORE INTO dialerapi_contact_numbers (phone_e164, version, attempts, last_at_utc)
SELECT m.phone_e164, 1,
       CONCAT('[', GROUP_CONCAT(CONCAT('[', TIMESTAMPDIFF(SECOND, '1970-01-01', %(now_utc)s
                                                          - INTERVAL (n.seq * 20 + m.id %% 19) HOUR),
                                       ',"', m.form_type, '",null]') ORDER BY n.seq DESC SEPARATOR ','), ']'),
       MAX(%(now_utc)s - INTERVAL (n.seq * 20 + m.id %% 19) HOUR)
FROM sales_master AS m JOIN seq_1_to_7 AS n ON n.seq <= m.id %% 8
WHERE m.id %% 7 = 0
GROUP BY m.phone_e164
"""


def cap_heads(conn, now):
    """Put the numbers of the first HEAD due leads of every form_type at the cap (7 attempts in the
    last 7 days); returns how many leads that was."""
    with conn.cursor() as cur:
        cur.execute("SELECT DISTINCT form_type FROM sales_master WHERE claim_bucket IS NOT NULL")
        heads = []
        for row in cur.fetchall():
            cur.execute("SELECT phone_e164 FROM sales_master FORCE INDEX (ix_claim_due) WHERE form_type = %s"
                        " AND claim_bucket IS NOT NULL AND (claim_due IS NULL OR claim_due <= %s)"
                        " ORDER BY claim_bucket, claim_due, id LIMIT %s", (row["form_type"], now, HEAD))
            heads += [lead["phone_e164"] for lead in cur.fetchall()]
        epoch = int((now - datetime(1970, 1, 1)).total_seconds())
        attempts = json.dumps([[epoch - 3600 * (8 - n), "x", None] for n in range(7)])
        cur.executemany("REPLACE INTO dialerapi_contact_numbers (phone_e164, version, attempts, last_at_utc)"
                        " VALUES (%s, 1, %s, %s)", [(phone, attempts, now) for phone in set(heads)])
    conn.commit()
    return len(heads)


def holds_per_claim(db, rng, now):
    """Leads held per claim in 100 claims of the head-capped floor (each rolled back)."""
    holds = [0]
    hold = contact_caps.hold

    def counted(*args):
        holds[0] += 1
        return hold(*args)

    contact_caps.hold = counted
    try:
        claim_block(db, rng, now, 100)
    finally:
        contact_caps.hold = hold
    return holds[0] / 100


def switch(conn, on):
    with conn.cursor() as cur:
        cur.execute("UPDATE dialerapi_contact_caps SET enabled = %s WHERE name = %s", (int(on), CAP))
    conn.commit()


def main():
    now = clock.now(UTC)
    url = prepare(now)
    conn = connect(url, io_timeout=600)
    with conn.cursor() as cur:
        cur.execute("DROP TABLE IF EXISTS bench_caps_saved")
        cur.execute(SAVE, {})
        cur.execute(SHARE)
        cur.execute("DELETE FROM dialerapi_contact_numbers")
        cur.execute(ATTEMPTS, {"now_utc": now})
        cur.execute("SELECT SUM(JSON_LENGTH(attempts)) AS n, COUNT(*) AS numbers,"
                    " SUM(JSON_LENGTH(attempts) >= 7) AS at_cap FROM dialerapi_contact_numbers")
        attempts = cur.fetchone()
        at_cap = int(attempts["at_cap"])
        cur.execute("SELECT COUNT(*) AS n FROM (SELECT phone_e164 FROM sales_master GROUP BY phone_e164"
                    " HAVING COUNT(*) > 1) AS shared")
        shared_numbers = cur.fetchone()["n"]
        cur.execute("ANALYZE TABLE dialerapi_contact_numbers")
    conn.commit()
    db = Database(url, pool_size=2)
    rng = random.Random(50)
    times = {False: [], True: []}
    empty = {False: 0, True: 0}
    try:
        for on in ORDER:
            switch(conn, on)
            print(f"block: caps {'on' if on else 'off'} ...", flush=True)
            ms, nothing = claim_block(db, rng, now, BLOCK)
            times[on] += ms
            empty[on] += nothing
        # Beyond the target: every form_type's first due leads at the cap, so each claim holds
        # (and, rolled back, holds again) the leads ahead of the one it takes: the cost of a hold.
        switch(conn, True)
        capped_heads = cap_heads(conn, now)
        print(f"block: caps on, {capped_heads} leads at the head of the due order at the cap ...", flush=True)
        holding, _ = claim_block(db, rng, now, BLOCK)
        holds = holds_per_claim(db, rng, now)
    finally:
        switch(conn, False)
        with conn.cursor() as cur:
            cur.execute(UNSHARE)
            cur.execute("DROP TABLE bench_caps_saved")
            cur.execute("DELETE FROM dialerapi_contact_numbers")
        conn.commit()
        conn.close()
        db.close()

    off, on = claim_figures(times[False]), claim_figures(times[True])
    ratio = round(on["p99_ms"] / off["p99_ms"], 2)
    result = {
        "date": datetime.now().isoformat(timespec="seconds"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "leads": 1_000_000, "shared_numbers": shared_numbers, "attempts": int(attempts["n"]),
        "numbers_dialed": attempts["numbers"], "numbers_at_cap": at_cap, "agents": AGENTS, "cap": CAP,
        "off": {**off, "empty_answers": empty[False]}, "on": {**on, "empty_answers": empty[True]},
        "p99_ratio": ratio, "target_ratio": TARGET_RATIO, "target_met": ratio <= TARGET_RATIO,
        "head_capped": {**claim_figures(holding), "leads_at_cap": capped_heads, "holds_per_claim": holds},
    }
    print(f"\ncontact caps: {shared_numbers:,} numbers shared by two leads or more; {int(attempts['n']):,} attempts on "
          f"{attempts['numbers']:,} numbers in 7 days, {at_cap:,} at the cap; {AGENTS} agents ({result['machine']})")
    print(f"{'progressive claim':32}{'p50 ms':>10}{'p95 ms':>10}{'p99 ms':>10}{'max ms':>10}")
    for name, row in (("caps off", off), (f"{CAP} on", on)):
        print(f"{name:32}{row['p50_ms']:>10}{row['p95_ms']:>10}{row['p99_ms']:>10}{row['max_ms']:>10}")
    row = result["head_capped"]
    print(f"{'on, head of the order capped':32}{row['p50_ms']:>10}{row['p95_ms']:>10}{row['p99_ms']:>10}"
          f"{row['max_ms']:>10}  ({holds:.1f} leads held per claim)")
    print(f"p99 ratio {ratio} (target <= {TARGET_RATIO}): {'met' if result['target_met'] else 'NOT met'}")
    with open("bench-results-caps.json", "w") as out:
        json.dump(result, out, indent=2)


if __name__ == "__main__":
    main()
