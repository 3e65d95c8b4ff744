"""Progressive claims with 200 campaigns, each with its own calendar, beside the same floor with no
campaign settings (issue #67 item 7).

    make bench            (or: scripts/devdb.sh exec .venv/bin/python bench/campaign_bench.py)

Builds (once) a database `dialerapi_bench_campaigns` as bench/claim_bench.py builds its own:
1,000,000 leads in every claimable status, here spread over 200 form_types (camp_0 ... camp_199,
5,000 leads each), and 200 available agents with 2 of those skills each. "On": each of the 200
form_types is a campaign with its own calendar (open hours on every day of the week, from a start
hour of its own to 24:00, open at the bench's moment; three restricted dates in the coming weeks;
a start and an end date around now), its own retry_seconds and personal-callback fallback, set with
`operations.update` as the CLI and the API do. "Off": no campaign row at all, the floor alone.

In alternating blocks (off, on, on, off, three times over, in the same minutes, since this
machine's speed drifts), each of BLOCK rounds: a progressive claim for a random agent
(claims.claim_next) in its own transaction, rolled back, timed. Both read the campaigns'
generation and take the claim's shared lock on the config row (operations.check_locked): "off" is
this release with no campaign set, the floor the issue compares with.

Target (issue #67): claim p99 with the 200 campaigns within 1.1x of off. Prints a table and writes
bench-results-operations.json.
"""

import json
import os
import platform
import random
from datetime import datetime, timedelta

from claim_bench import AGENTS, UTC, claim_block, claim_figures, prepare

from dialerapi.plumbing import clock
from dialerapi.plumbing.db import Database, connect
from dialerapi.rules.campaigns import operations

LEADS = 1_000_000
CAMPAIGNS = 200
FORM_TYPES = [f"camp_{n}" for n in range(CAMPAIGNS)]
DB_NAME = "dialerapi_bench_campaigns"
BLOCK = int(os.environ.get("BENCH_CAMPAIGN_BLOCK", 1000))
ORDER = (False, True, True, False) * 3
TARGET_RATIO = 1.1
DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")


def settings_of(n, now):
    """Campaign n's own settings: open now, every day from its own hour (at most the bench's) to 24:00."""
    opens = min(now.hour, n % 9)
    day = now.date()
    return {
        "open_hours": {name: [f"{opens:02d}:00-24:00"] for name in DAYS},
        "restricted_dates": [{"date": (day + timedelta(days=7 * k + 1 + n % 5)).isoformat(), "note": f"closed {k}"}
                             for k in range(3)],
        "start_date": (day - timedelta(days=30)).isoformat(), "end_date": (day + timedelta(days=90)).isoformat(),
        "retry_seconds": 1800 + 60 * (n % 30), "personal_callback_fallback_minutes": 15 + n % 30,
    }


def switch(conn, on, now):
    with conn.cursor() as cur:
        cur.execute("DELETE FROM dialerapi_campaigns")
        cur.execute("DELETE FROM dialerapi_campaign_changes")
        cur.execute("DELETE FROM dialerapi_lead_events WHERE type LIKE 'campaign.%%'")
    if on:
        for n, form_type in enumerate(FORM_TYPES):
            operations.update(conn, form_type, settings_of(n, now), now, "bench")
    conn.commit()


def main():
    now = clock.now(UTC)
    url = prepare(now, DB_NAME, FORM_TYPES)
    conn = connect(url, io_timeout=600)
    db = Database(url, pool_size=2)
    rng = random.Random(67)
    times = {False: [], True: []}
    empty = {False: 0, True: 0}
    try:
        for on in ORDER:
            switch(conn, on, now)
            print(f"block: {'200 campaigns' if on else 'no campaign'} ...", flush=True)
            ms, nothing = claim_block(db, rng, now, BLOCK)
            times[on] += ms
            empty[on] += nothing
    finally:
        switch(conn, False, now)
        conn.close()
        db.close()

    off, on = claim_figures(times[False]), claim_figures(times[True])
    ratio = round(on["p99_ms"] / off["p99_ms"], 2)
    result = {
        "date": datetime.now().isoformat(timespec="seconds"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "leads": LEADS, "campaigns": CAMPAIGNS, "agents": AGENTS,
        "off": {**off, "empty_answers": empty[False]}, "on": {**on, "empty_answers": empty[True]},
        "p99_ratio": ratio, "target_ratio": TARGET_RATIO, "target_met": ratio <= TARGET_RATIO,
    }
    print(f"\ncampaigns: {LEADS:,} leads over {CAMPAIGNS} form_types; {AGENTS} agents ({result['machine']})")
    print(f"{'progressive claim':32}{'p50 ms':>10}{'p95 ms':>10}{'p99 ms':>10}{'max ms':>10}{'empty':>8}")
    for name, row, nothing in (("no campaign", off, empty[False]), (f"{CAMPAIGNS} campaigns", on, empty[True])):
        print(f"{name:32}{row['p50_ms']:>10}{row['p95_ms']:>10}{row['p99_ms']:>10}{row['max_ms']:>10}{nothing:>8}")
    print(f"p99 ratio {ratio} (target <= {TARGET_RATIO}): {'met' if result['target_met'] else 'NOT met'}")
    with open("bench-results-operations.json", "w") as out:
        json.dump(result, out, indent=2)


if __name__ == "__main__":
    main()
