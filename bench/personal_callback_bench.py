"""Progressive claims with 5% of the due leads personal callbacks, beside none (issue #40).

    make bench            (or: scripts/devdb.sh exec .venv/bin/python bench/personal_callback_bench.py)

On claim_bench's database (1,000,000 leads, 200 agents with 2 of 10 form_types each; built by it
when missing), in alternating blocks (none, personal, personal, none, in the same minutes, since
this machine's speed drifts; twice over), each of BLOCK rounds: a progressive claim for a random agent
(claims.claim_next) in its own transaction, rolled back, timed. Between blocks, SHARE of the due
leads (one in twenty, by a hash of the id) become personal callbacks of an agent with their skill, due at some
moment of the last two hours (so a quarter are inside the 30-minute fallback: only their owner may
take them), in one statement; the "none" blocks run with them put back as they were. Every claim
thus looks for its agent's own callbacks first (callbacks.sql personal_due, from
ix_callback_agent), and the other agents' claims pass the callbacks still waiting for their owners.

Target (issue #40): claim p99 with personal callbacks within 1.1x of without.
Prints a table and writes bench-results-personal.json.
"""

import json
import os
import platform
import random
from datetime import datetime

from claim_bench import AGENTS, UTC, claim_block, claim_figures, prepare
from dialerapi.plumbing import clock
from dialerapi.plumbing.db import Database, connect

BLOCK = int(os.environ.get("BENCH_PERSONAL_BLOCK", 750))
# none, personal, personal, none, twice over: the p99 of 3,000 claims each.
ORDER = (False, True, True, False) * 2
SHARE = 0.05
TARGET_RATIO = 1.1

# One due lead in twenty (by a hash of its id: the bench's statuses follow the id) becomes a personal callback of an agent with its skill, due in
# the last two hours. Its previous state is kept in a table of its own to put it back.
SAVE = """
CREATE TABLE bench_personal_saved ENGINE=InnoDB AS
SELECT id, dial_status, callback_scheduled_at, priority_id FROM sales_master
WHERE claim_bucket IS NOT NULL AND (claim_due IS NULL OR claim_due <= %(now)s) AND CRC32(id) %% 20 = 7
"""
MARK = """
UPDATE sales_master AS m JOIN bench_personal_saved AS s ON s.id = m.id
SET m.dial_status = 'Callback', m.priority_id = 1,
    m.callback_scheduled_at = %(now)s - INTERVAL (m.id %% 120) MINUTE,
    m.callback_agent_id = (SELECT k.agent_id FROM sales_agent_skills AS k WHERE k.form_type = m.form_type
                           ORDER BY (k.agent_id * 7919 + m.id) %% 1009 LIMIT 1)
"""
UNMARK = """
UPDATE sales_master AS m JOIN bench_personal_saved AS s ON s.id = m.id
SET m.dial_status = s.dial_status, m.callback_scheduled_at = s.callback_scheduled_at, m.priority_id = s.priority_id,
    m.callback_agent_id = NULL
"""


def mark(conn, personal, now):
    with conn.cursor() as cur:
        cur.execute(MARK if personal else UNMARK, {"now": now})
    conn.commit()


def main():
    now = clock.now(UTC)
    url = prepare(now)
    conn = connect(url, io_timeout=600)
    with conn.cursor() as cur:
        cur.execute("DROP TABLE IF EXISTS bench_personal_saved")
        cur.execute(SAVE, {"now": now})
        cur.execute("SELECT COUNT(*) AS n FROM bench_personal_saved")
        personal_leads = cur.fetchone()["n"]
        cur.execute("SELECT COUNT(*) AS n FROM sales_master WHERE claim_bucket IS NOT NULL"
                    " AND (claim_due IS NULL OR claim_due <= %s)", (now,))
        due = cur.fetchone()["n"]
    conn.commit()
    db = Database(url, pool_size=2)
    rng = random.Random(40)
    times = {False: [], True: []}
    empty = {False: 0, True: 0}
    owned_due = None
    try:
        for personal in ORDER:
            mark(conn, personal, now)
            if personal and owned_due is None:
                with conn.cursor() as cur:
                    cur.execute("SELECT COUNT(*) AS n, SUM(callback_scheduled_at > %s - INTERVAL 30 MINUTE) AS waiting"
                                " FROM sales_master WHERE callback_agent_id IS NOT NULL", (now,))
                    owned_due = cur.fetchone()
                conn.commit()
            print(f"block: {'5% personal callbacks' if personal else 'none'} ...", flush=True)
            ms, nothing = claim_block(db, rng, now, BLOCK)
            times[personal] += ms
            empty[personal] += nothing
    finally:
        mark(conn, False, now)
        with conn.cursor() as cur:
            cur.execute("DROP TABLE bench_personal_saved")
        conn.commit()
        conn.close()
        db.close()

    none, with_personal = claim_figures(times[False]), claim_figures(times[True])
    ratio = round(with_personal["p99_ms"] / none["p99_ms"], 2)
    result = {
        "date": datetime.now().isoformat(timespec="seconds"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "leads_due": due, "personal_callbacks": personal_leads, "share_of_due": round(personal_leads / due, 3),
        "waiting_for_their_owner": int(owned_due["waiting"] or 0), "agents": AGENTS,
        "none": {**none, "empty_answers": empty[False]},
        "personal": {**with_personal, "empty_answers": empty[True]},
        "p99_ratio": ratio, "target_ratio": TARGET_RATIO, "target_met": ratio <= TARGET_RATIO,
    }
    print(f"\npersonal callbacks: {personal_leads:,} of {due:,} due leads ({result['share_of_due']:.1%}), "
          f"{result['waiting_for_their_owner']:,} inside their fallback; {AGENTS} agents ({result['machine']})")
    print(f"{'progressive claim':32}{'p50 ms':>10}{'p95 ms':>10}{'p99 ms':>10}{'max ms':>10}")
    for name, row in (("no personal callbacks", none), ("5% personal callbacks", with_personal)):
        print(f"{name:32}{row['p50_ms']:>10}{row['p95_ms']:>10}{row['p99_ms']:>10}{row['max_ms']:>10}")
    print(f"p99 ratio {ratio} (target <= {TARGET_RATIO}): {'met' if result['target_met'] else 'NOT met'}")
    with open("bench-results-personal.json", "w") as out:
        json.dump(result, out, indent=2)


if __name__ == "__main__":
    main()
