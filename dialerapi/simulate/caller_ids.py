"""A scenario's caller-ID pools in the floor simulator (docs/simulator.md, "Caller IDs"): the numbers
it adds to the run's floor, and what the report says of them: the calls presented per match tier,
the calls an exhausted pool refused (the same seeds played without the pools), and how many
numbers each area code would need for the run's calls under the daily cap, so a planner sizes a
pool before buying numbers.
"""

import math
from collections import Counter

from dialerapi.plumbing.db import queries
from dialerapi.rules.caller_ids import numbers

# A scenario names a pool's numbers by NANP area code (`+1 212`), so the simulator can make them.
AREA_CODE = r"^\+1 ?[2-9]\d\d$"
MAX_PER_AREA_CODE = 100


def numbers_of(pools):
    """[(number in E.164, pool)] of `pools` ({pool: {area code: count}}): pool k's numbers of area
    code AC are +1 AC 5kk 0000, 0001, ... (fictional lines, one exchange per pool)."""
    made = []
    for k, (pool, area_codes) in enumerate(sorted(pools.items())):
        for area_code, count in sorted(area_codes.items()):
            digits = area_code.replace(" ", "").removeprefix("+1")
            made += [(f"+1{digits}5{k:02d}{line:04d}", pool) for line in range(count)]
    return made


def add(conn, pools, now):
    """Add the numbers of `pools` to the run's floor, as `dialerapi caller-ids add` does."""
    for number, pool in numbers_of(pools):
        numbers.add(conn, number, [pool], now, "simulator")


def calls_by_area_code(conn):
    """{area code (`+1 212`): the most calls its leads had on one day} of the run's US leads."""
    return {f"+1 {str(row['prefix'])[1:]}": int(row["calls"]) for row in queries.sim_calls_by_area_code(conn)}


def report(scenario, runs, without):
    """The report's "caller_ids": {"daily_cap", "presented" ({match: mean calls a run}),
    "calls_refused" (the mean calls a run made without the pools less with them: the calls an
    exhausted pool refused), "numbers_needed" ({area code: the numbers its busiest day would need
    under the cap, the pools away}), "numbers" ({area code: the scenario's numbers, all pools})}."""
    cap = scenario.dialer["caller_id_daily_cap"]
    presented = Counter()
    for run in runs:
        presented.update(run["caller_id_matches"])
    demand = Counter()
    for run in without or runs:
        for area_code, calls in run["calls_by_area_code"].items():
            demand[area_code] = max(demand[area_code], calls)
    owned = Counter()
    for _, area_codes in scenario.caller_ids.items():
        owned.update({f"+1 {code.replace(' ', '').removeprefix('+1')}": count for code, count in area_codes.items()})

    def mean_calls(plays):
        return sum(run["kpis"]["calls"] for run in plays) / len(plays)

    return {
        "daily_cap": cap,
        "presented": {match: round(calls / len(runs), 1) for match, calls in sorted(presented.items())},
        "calls_refused": round(mean_calls(without) - mean_calls(runs), 1) if without else None,
        "numbers_needed": {code: math.ceil(calls / cap) for code, calls in sorted(demand.items())},
        "numbers": dict(sorted(owned.items())),
    }


def summary_lines(figures):
    """The summary's lines of `report`'s figures: the calls per match tier, those refused, and the
    numbers each area code would need against those the scenario has."""
    lines = [f"caller IDs (daily cap {figures['daily_cap']}): calls presented a run, by match: "
             + (", ".join(f"{match} {calls:g}" for match, calls in figures["presented"].items()) or "none")]
    if figures["calls_refused"] is not None:
        lines.append(f"calls an exhausted pool refused (the same seeds without the pools): {figures['calls_refused']:g}")
    lines.append(f"{'area code':<14}{'numbers':>10}{'needed':>10}")
    codes = sorted(set(figures["numbers"]) | set(figures["numbers_needed"]))
    lines += [f"{code:<14}{figures['numbers'].get(code, 0):>10}{figures['numbers_needed'].get(code, 0):>10}"
              for code in codes]
    return lines
