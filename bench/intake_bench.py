"""Intake benchmark (issue #51): the push beside the least code and the database's own speed, a
worker's memory, the floor state and the CRM actions, each beside the previous release.

    make bench            (or: scripts/devdb.sh with .venv/bin/python bench/intake_bench.py)

PREVIOUS (a git worktree, bench/results_bench.previous_release) is the release before issue #51, on
the same schema; each of its figures is measured in the same minutes as this release's, in
alternating order, because this 2-core machine's speed drifts through the hour.

1. Lead push (wrk, bench/push.lua, 500-lead batches from CONNECTIONS connections for SECONDS per
   run, inside working hours), ROUNDS rounds, each running every side once on a table refilled
   with the same UPDATE_POOL leads (their phone facts worked out, as after their first push), the
   order of the sides rotating:
   - `raw`: bench/reference_app.py POST /raw, one plain INSERT ... ON DUPLICATE KEY UPDATE of the
     same rows through PyMySQL (the database's own speed);
   - `reference`: bench/reference_app.py POST /push, the least code making the service's writes,
     parsing every number;
   - `service` and `previous`: POST /api/leads of this release and the one before.
   Kinds: `new` (new oli_ids) and `same` (the pool's oli_ids, each with the number it has). Figures
   are medians of the rounds' ratios. Targets: same, service / reference >= 1.3; new, service /
   raw >= 0.65.
2. Memory: one gunicorn worker (deploy/gunicorn.conf.py, GUNICORN_WORKERS=1) of each release:
   resident after start and one 1-lead push (idle), then after 100,000 distinct new numbers (200
   batches of 500; valid mobile and fixed-line numbers of 20 countries, as tests/test_phone_facts.py
   draws them). Targets: <= 60 MB idle, <= 80 MB after.
3. POST /engine/floor at 50/s (wrk, bench/engine_floor.lua) for FLOOR_SECONDS per run on
   claim_bench's 1,000,000 leads with LIVE_CALLS live reservations and abandon_bench's 30 days of
   history, BLOCKS runs per release (previous, this, this, previous, ...). Target: p99 < 20 ms
   (median of the runs' p99).
4. CRM actions (send-callback-request, pending-callbacks, missed-activities) at 200 requests/s
   each for LATENCY_SECONDS (bench/crm_latency.lua, as bench/service_bench.py), with PANELS agent
   panels open on a socket pool, BLOCKS runs per release alternating. Target: p99 < 25 ms (median
   of the runs' p99) for each.

Prints tables and writes bench-results-intake.json.
"""

import json
import os
import platform
import statistics
import sys
from contextlib import ExitStack
from datetime import datetime, timezone

import requests

from abandon_bench import build_history
from claim_bench import ENGINE_SECRET, LIVE_CALLS, RATE, UTC, phone_facts, prepare
from common import (FILL, ROOT, bench_database, empty_table, gunicorn, wait_for_purge, wait_until_idle, worker_rss_mb,
                    wrk)
from dialerapi.plumbing import clock
from dialerapi.plumbing.db import connect
from floor_bench import Floor
from results_bench import previous_release
from service_bench import (CONNECTIONS, FIRST_PANEL, PANELS, SECONDS, SECRET, UPDATE_POOL, crm_latency, fresh_floor,
                           set_hours)

sys.path.insert(0, str(ROOT / "tests"))
from test_phone_facts import random_numbers  # noqa: E402 (valid numbers of 20 countries)

PREVIOUS = os.environ.get("BENCH_PREVIOUS", "0a8b214")  # main before issue #51
DB_NAME = "dialerapi_bench_intake"
ROUNDS = int(os.environ.get("BENCH_INTAKE_ROUNDS", 4))
BLOCKS = int(os.environ.get("BENCH_INTAKE_BLOCKS", 4))
FLOOR_SECONDS = int(os.environ.get("BENCH_FLOOR_STATE_SECONDS", 20))
MEMORY_NUMBERS = 100_000
PUSH_SIDES = ("raw", "reference", "service", "previous")
TARGETS = {"same_over_reference": 1.3, "new_over_raw": 0.65, "idle_mb": 60, "after_mb": 80, "floor_p99_ms": 20,
           "crm_p99_ms": 25}


def fresh_pool(url):
    """sales_master with exactly the UPDATE_POOL leads U-000000.., their phone facts worked out."""
    empty_table(url, FILL.format(last=UPDATE_POOL - 1))
    conn = connect(url, io_timeout=600)
    phone_facts(conn)
    conn.commit()
    conn.close()


def push_run(url, base, path, kind, run):
    wait_until_idle(url)
    fresh_pool(url)
    # Refilling the table leaves InnoDB a purge and a flush to do; the run measured next would share
    # the cores with them, and whichever side ran first in a round paid for it.
    wait_for_purge(url, limit=60)
    report = wrk("push.lua", base, SECONDS, connections=CONNECTIONS, BENCH_PATH=path, BENCH_KIND=kind,
                 BENCH_RUN=run, BENCH_POOL=UPDATE_POOL, BENCH_THREADS=1, WS_SECRET=SECRET)
    if report["status_errors"] or report["socket_errors"]:
        raise SystemExit(f"{path} {kind}: {report}")
    return {"leads_per_s": round(report["rate_per_s"] * 500), "p50_ms": report["p50_ms"], "p99_ms": report["p99_ms"]}


def push(url, bases):
    paths = {"raw": "/raw", "reference": "/push", "service": "/api/leads", "previous": "/api/leads"}
    runs = {kind: {side: [] for side in PUSH_SIDES} for kind in ("new", "same")}
    for kind in runs:
        for round_no in range(ROUNDS):
            order = PUSH_SIDES[round_no % 4:] + PUSH_SIDES[:round_no % 4]
            for side in order:
                runs[kind][side].append(push_run(url, bases[side], paths[side], kind, f"{kind[0]}{round_no}{side[:2]}"))
            print(f"push {kind:4} round {round_no + 1}: " + ", ".join(
                f"{side} {runs[kind][side][-1]['leads_per_s']:,}/s" for side in PUSH_SIDES), flush=True)
    figures = {}
    for kind, sides in runs.items():
        figures[kind] = {side: {"leads_per_s": round(statistics.median(r["leads_per_s"] for r in side_runs)),
                                "p99_ms": round(statistics.median(r["p99_ms"] for r in side_runs), 1),
                                "runs": [r["leads_per_s"] for r in side_runs]} for side, side_runs in sides.items()}
        for release in ("service", "previous"):
            for base_side in ("raw", "reference"):
                figures[kind][f"{release}_over_{base_side}"] = round(statistics.median(
                    s["leads_per_s"] / b["leads_per_s"] for s, b in zip(sides[release], sides[base_side])), 2)
    return figures


def memory(url, root, port):
    """(idle MB, MB after MEMORY_NUMBERS new numbers) of the one worker of a gunicorn serving `root`."""
    empty_table(url)
    headers = {"X-API-Key": SECRET}
    settings = {"DATABASE_URL": url, "WS_SECRET": SECRET, "DB_TIMEZONE": "UTC"}
    with gunicorn("wsgi:app", port, workers=1, root=root, **settings) as (base, pid):
        lead = {"client_name": "Memory", "form_type": "home_loan", "priority_id": 2}
        response = requests.post(f"{base}/api/leads", json={**lead, "oli_id": "MEM-0", "phone_number": "+91 9800000001"},
                                 headers=headers, timeout=60)
        response.raise_for_status()
        idle = worker_rss_mb(pid)[0]
        numbers = random_numbers(MEMORY_NUMBERS)
        for batch_no in range(MEMORY_NUMBERS // 500):
            leads = [{**lead, "oli_id": f"MEM-{batch_no}-{i}", "phone_number": number}
                     for i, number in enumerate(numbers[batch_no * 500:(batch_no + 1) * 500])]
            requests.post(f"{base}/api/leads", json={"leads": leads}, headers=headers, timeout=60).raise_for_status()
        after = worker_rss_mb(pid)[0]
    return {"idle_mb": idle, "after_mb": after}


def floor_state(bases, url):
    conn = connect(url)
    conn.autocommit(True)
    runs = {"previous": [], "service": []}
    with conn.cursor() as cur:
        cur.execute("UPDATE sales_master SET previous_dial_status = dial_status, dial_status = 'Calling',"
                    " isReserved = 1 WHERE dial_status = 'Pending' AND isReserved = 0 ORDER BY id LIMIT %s",
                    (LIVE_CALLS,))
    try:
        for block_no in range(BLOCKS):
            order = ("previous", "service") if block_no % 2 == 0 else ("service", "previous")
            for side in order:
                report = wrk("engine_floor.lua", bases[side], FLOOR_SECONDS, ENGINE_SECRET=ENGINE_SECRET, BENCH_RATE=RATE)
                if report["status_errors"] or report["socket_errors"]:
                    raise SystemExit(f"floor {side}: {report}")
                runs[side].append(report)
                print(f"floor block {block_no + 1}, {side}: p50 {report['p50_ms']} ms, p99 {report['p99_ms']} ms",
                      flush=True)
    finally:
        with conn.cursor() as cur:
            cur.execute("UPDATE sales_master SET dial_status = previous_dial_status, isReserved = 0,"
                        " previous_dial_status = NULL WHERE dial_status = 'Calling' AND isReserved = 1")
        conn.close()
    return {side: latency_figures(reports) for side, reports in runs.items()}


def latency_figures(reports):
    return {"p50_ms": round(statistics.median(r["p50_ms"] for r in reports), 2),
            "p99_ms": round(statistics.median(r["p99_ms"] for r in reports), 2),
            "p99_runs_ms": [r["p99_ms"] for r in reports], "requests": sum(r["requests"] for r in reports)}


def crm_actions(url, bases):
    runs = {"previous": {}, "service": {}}
    for block_no in range(BLOCKS):
        for side in ("previous", "service") if block_no % 2 == 0 else ("service", "previous"):
            for endpoint, report in crm_latency(url, bases[side]).items():
                if report["status_errors"]:
                    raise SystemExit(f"{endpoint} {side}: {report}")
                runs[side].setdefault(endpoint, []).append(report)
            print(f"CRM actions block {block_no + 1}, {side}: " + ", ".join(
                f"{endpoint} p99 {reports[-1]['p99_ms']} ms" for endpoint, reports in runs[side].items()), flush=True)
    return {side: {endpoint: latency_figures(reports) for endpoint, reports in endpoints.items()}
            for side, endpoints in runs.items()}


def main():
    started = datetime.now(timezone.utc)
    previous_root = previous_release(PREVIOUS)
    url = bench_database(DB_NAME)
    fresh_floor(url)
    set_hours(url, "inside")
    port = 18400 + os.getpid() % 300
    settings = {"DATABASE_URL": url, "WS_SECRET": SECRET, "TRUSTED_PROXY_COUNT": "1", "DB_TIMEZONE": "UTC"}
    result = {"date": started.isoformat(timespec="seconds"), "previous": PREVIOUS,
              "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
                         "wrk, gunicorn and MariaDB on the same cores", "targets": TARGETS}

    result["memory"] = {}
    for side, root in (("previous", previous_root), ("service", ROOT)):
        result["memory"][side] = memory(url, root, port + 10)
        print(f"memory, {side}: {result['memory'][side]}", flush=True)

    with ExitStack() as stack:
        bases = {
            "raw": stack.enter_context(gunicorn("bench.reference_app:app", port, **settings))[0],
            "service": stack.enter_context(gunicorn("wsgi:app", port + 1, **settings))[0],
            "previous": stack.enter_context(gunicorn("wsgi:app", port + 2, root=previous_root, **settings))[0],
        }
        bases["reference"] = bases["raw"]
        result["push"] = push(url, bases)
        sockets, _ = stack.enter_context(gunicorn("wsgi:app", port + 3, workers=1, GUNICORN_POOL="sockets", **settings))
        floor = Floor(sockets.replace("http://", "ws://"), range(FIRST_PANEL, FIRST_PANEL + PANELS))
        stack.callback(floor.close)
        result["panels_open"] = floor.with_state()
        result["crm_actions_at_200_rps"] = crm_actions(url, bases)

    now = clock.now(UTC)
    floor_url = prepare(now)
    build_history(floor_url, now)
    engine = {"DATABASE_URL": floor_url, "WS_SECRET": SECRET, "ENGINE_SECRET": ENGINE_SECRET, "DB_TIMEZONE": "UTC"}
    with gunicorn("wsgi:app", port + 4, **engine) as (service, _), \
            gunicorn("wsgi:app", port + 5, root=previous_root, **engine) as (previous, _):
        result["floor_state"] = floor_state({"service": service, "previous": previous}, floor_url)

    report(result)
    with open("bench-results-intake.json", "w") as out:
        json.dump(result, out, indent=2)


def report(result):
    push_figures, memory_figures = result["push"], result["memory"]
    floor_figures, crm = result["floor_state"], result["crm_actions_at_200_rps"]
    checks = {
        "update push (same numbers), service / reference": (push_figures["same"]["service_over_reference"],
                                                            push_figures["same"]["previous_over_reference"],
                                                            ">= 1.3", push_figures["same"]["service_over_reference"] >= 1.3),
        "new-lead push, service / raw INSERT": (push_figures["new"]["service_over_raw"],
                                                push_figures["new"]["previous_over_raw"], ">= 0.65",
                                                push_figures["new"]["service_over_raw"] >= 0.65),
        "worker MB, idle": (memory_figures["service"]["idle_mb"], memory_figures["previous"]["idle_mb"], "<= 60",
                            memory_figures["service"]["idle_mb"] <= 60),
        f"worker MB after {MEMORY_NUMBERS:,} new numbers": (memory_figures["service"]["after_mb"],
                                                            memory_figures["previous"]["after_mb"], "<= 80",
                                                            memory_figures["service"]["after_mb"] <= 80),
        "POST /engine/floor p99 ms": (floor_figures["service"]["p99_ms"], floor_figures["previous"]["p99_ms"], "< 20",
                                      floor_figures["service"]["p99_ms"] < 20),
    }
    for endpoint, figures in crm["service"].items():
        checks[f"{endpoint} p99 ms at 200/s"] = (figures["p99_ms"], crm["previous"][endpoint]["p99_ms"], "< 25",
                                                 figures["p99_ms"] < 25)
    result["checks"] = {name: {"this": this, "previous": previous, "target": target, "met": met}
                        for name, (this, previous, target, met) in checks.items()}
    result["target_met"] = all(met for *_, met in checks.values())
    print(f"\nintake benchmark, {result['date']} ({result['machine']}); previous release {result['previous']}")
    for kind in ("new", "same"):
        sides = push_figures[kind]
        print(f"  push {kind:4}: " + ", ".join(f"{side} {sides[side]['leads_per_s']:,}/s (p99 {sides[side]['p99_ms']} ms)"
                                               for side in PUSH_SIDES))
    print(f"  {'measure':<48}{'this':>10}{'previous':>10}  target")
    for name, (this, previous, target, met) in checks.items():
        print(f"  {name:<48}{this:>10}{previous:>10}  {target}: {'met' if met else 'NOT met'}")


if __name__ == "__main__":
    main()
