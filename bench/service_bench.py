"""Service benchmark (issue #33): lead push against the least code that makes the same writes, and
the CRM actions' latency at a fixed rate, inside and outside working hours, with agent panels open.

    make bench            (runs this, then bench/claim_bench.py and bench/floor_bench.py)

- Serving model (issue #27): the service's HTTP pool (deploy/gunicorn.conf.py, 2 gthread workers)
  and its socket pool (gevent) holding PANELS agent panels open all along, as a CRM meets it on a
  staffed floor. The reference (bench/reference_app.py: plain PyMySQL, the service's statements
  written out, no code of the service's) runs under the same gunicorn settings beside it.
- Both sides of the clock: the bench database's work window is set so that "now" falls inside it
  (pushes write next_retry_at NULL) and then outside it (the next work_start); DB_TIMEZONE is UTC.
- Lead push: wrk (bench/push.lua builds each 500-lead batch) sends batches from CONNECTIONS
  connections for SECONDS to the reference and to the service back to back (a pair), PAIRS pairs
  per kind (new leads, updates of existing ones), alternating which goes first, each run on a
  table refilled with the same UPDATE_POOL leads. A pair's ratio is the service's leads/s over the
  reference's (and its p99 per batch over the reference's); the figure is the median of the pairs'
  ratios with their min and max, marked "wide" when either lies more than SPREAD from the median.
  Targets: median ratio >= 0.9, median p99 ratio <= 1.2.
- Latency: send-callback-request, pending-callbacks and missed-activities at 200 requests per
  second for LATENCY_SECONDS each (wrk, 4 connections at 50/s each on a fixed schedule), each
  request from its own client address (X-Forwarded-For). Target: p99 < 25 ms.
- Resident memory of each HTTP-pool worker after the run.

wrk, the panels' client, gunicorn and MariaDB share the machine's 2 cores. Prints tables and
writes bench-results.json.
"""

import json
import os
import platform
import statistics
from datetime import datetime, timedelta, timezone

from common import FILL, bench_database, empty_table, gunicorn, wait_for_purge, wait_until_idle, worker_rss_mb, wrk
from dialerapi.plumbing.db import connect
from floor_bench import Floor

DB_NAME = "dialerapi_bench_service"
SECRET = "bench-secret-0123456789"
SECONDS = int(os.environ.get("BENCH_PUSH_SECONDS", 8))
PAIRS = int(os.environ.get("BENCH_PAIRS", 5))
PANELS = int(os.environ.get("BENCH_PANELS", 1000))
CONNECTIONS = 8
UPDATE_POOL = 50_000
LATENCY_SECONDS = 10
TARGET_RATIO, TARGET_P99_RATIO, SPREAD = 0.9, 1.2, 0.15
FIRST_PANEL = 10_000
HOURS = ("inside", "outside")
BATCHES = ("new", "update")


def fresh_table(url):
    """sales_master with exactly the UPDATE_POOL leads U-000000.. (the agents and their panels stay)."""
    empty_table(url, FILL.format(last=UPDATE_POOL - 1))


def fresh_floor(url):
    """Agent 501 (the missed-activities read) and the PANELS agents whose panels stay open."""
    conn = connect(url, io_timeout=600)
    with conn.cursor() as cur:
        cur.execute("DELETE FROM sales_agents")
        cur.execute("INSERT INTO sales_agents (id, extension, name) VALUES (501, '4501', 'Bench agent')")
        cur.execute("INSERT INTO sales_agents (id, extension, name) SELECT seq, CONCAT('5', seq), CONCAT('Agent ', seq)"
                    f" FROM seq_{FIRST_PANEL}_to_{FIRST_PANEL + PANELS - 1}")
    conn.commit()
    conn.close()


def set_hours(url, hours):
    """Put the UTC "now" inside the work window (hours="inside") or before today's (or tomorrow's)
    start ("outside") for the next hours; returns the window as text."""
    now = datetime.now(timezone.utc).replace(tzinfo=None)
    start, end = ((now - timedelta(hours=3), now + timedelta(hours=3)) if hours == "inside"
                  else (now + timedelta(hours=3), now + timedelta(hours=5)))
    conn = connect(url)
    with conn.cursor() as cur:
        cur.execute("UPDATE sales_dialer_config SET work_start = %s, work_end = %s WHERE id = 1",
                    (start.strftime("%H:%M:%S"), end.strftime("%H:%M:%S")))
    conn.commit()
    conn.close()
    return f"{start:%H:%M}-{end:%H:%M} UTC, now {now:%H:%M}"


def push_run(url, base, path, kind, run):
    wait_until_idle(url)
    fresh_table(url)
    report = wrk("push.lua", base, SECONDS, connections=CONNECTIONS, BENCH_PATH=path, BENCH_KIND=kind,
                 BENCH_RUN=run, BENCH_POOL=UPDATE_POOL, BENCH_THREADS=1, WS_SECRET=SECRET)
    if report["status_errors"] or report["socket_errors"]:
        raise SystemExit(f"{path} {kind}: {report}")
    return {"leads_per_s": round(report["rate_per_s"] * 500), "p50_ms": report["p50_ms"], "p99_ms": report["p99_ms"],
            "batches": report["requests"]}


def pair_figures(pairs):
    """The median, min and max of the pairs' throughput and p99 ratios, and whether the spread is wide."""
    ratios = [pair["service"]["leads_per_s"] / pair["reference"]["leads_per_s"] for pair in pairs]
    p99_ratios = [pair["service"]["p99_ms"] / pair["reference"]["p99_ms"] for pair in pairs]
    median, p99_median = statistics.median(ratios), statistics.median(p99_ratios)
    return {"ratio": round(median, 2), "ratio_min": round(min(ratios), 2), "ratio_max": round(max(ratios), 2),
            "wide": max(ratios) - median > SPREAD or median - min(ratios) > SPREAD,
            "p99_ratio": round(p99_median, 2), "p99_ratio_min": round(min(p99_ratios), 2),
            "p99_ratio_max": round(max(p99_ratios), 2),
            "reference": summary([pair["reference"] for pair in pairs]),
            "service": summary([pair["service"] for pair in pairs]),
            "target_met": median >= TARGET_RATIO and p99_median <= TARGET_P99_RATIO}


def summary(runs):
    return {"leads_per_s": round(statistics.median(r["leads_per_s"] for r in runs)),
            "p50_ms": round(statistics.median(r["p50_ms"] for r in runs), 1),
            "p99_ms": round(statistics.median(r["p99_ms"] for r in runs), 1), "runs": runs}


def crm_latency(url, service):
    wait_until_idle(url)
    fresh_table(url)
    wait_for_purge(url, limit=60)
    latency = {}
    for endpoint in ("send-callback-request", "pending-callbacks", "missed-activities"):
        report = wrk("crm_latency.lua", service, LATENCY_SECONDS, connections=4, threads=4, BENCH_RATE=50,
                     BENCH_ENDPOINT=endpoint, BENCH_POOL=UPDATE_POOL, WS_SECRET=SECRET)
        latency[endpoint] = {k: report[k] for k in ("rate_per_s", "requests", "status_errors", "p50_ms", "p99_ms")}
        latency[endpoint]["target_met"] = report["p99_ms"] < 25 and not report["status_errors"]
    return latency


def main():
    url = bench_database(DB_NAME)
    fresh_floor(url)
    settings = {"DATABASE_URL": url, "WS_SECRET": SECRET, "TRUSTED_PROXY_COUNT": "1", "DB_TIMEZONE": "UTC"}
    port = 18000 + os.getpid() % 400
    push, latency, windows = {}, {}, {}
    started = datetime.now(timezone.utc)
    with gunicorn("wsgi:app", port, **settings) as (service, service_pid), \
            gunicorn("bench.reference_app:app", port + 1, **settings) as (reference, _), \
            gunicorn("wsgi:app", port + 2, workers=1, GUNICORN_POOL="sockets", **settings) as (sockets, _):
        floor = Floor(sockets.replace("http://", "ws://"), range(FIRST_PANEL, FIRST_PANEL + PANELS))
        panels_with_state = floor.with_state()
        try:
            for hours in HOURS:
                windows[hours] = set_hours(url, hours)
                for kind in BATCHES:
                    pairs = []
                    for pair_no in range(PAIRS):
                        sides = [("reference", reference, "/push"), ("service", service, "/api/leads")]
                        pair = {side: push_run(url, base, path, kind, f"{hours[0]}{pair_no}{side[0]}")
                                for side, base, path in (sides if pair_no % 2 == 0 else reversed(sides))}
                        pairs.append(pair)
                        print(f"{hours} working hours, {kind:6} pair {pair_no + 1}: reference "
                              f"{pair['reference']['leads_per_s']:>7,} leads/s, service {pair['service']['leads_per_s']:>7,}"
                              f" leads/s, ratio {pair['service']['leads_per_s'] / pair['reference']['leads_per_s']:.2f}",
                              flush=True)
                    push[f"{kind}, {hours}"] = pair_figures(pairs)
                latency[hours] = crm_latency(url, service)
            rss = worker_rss_mb(service_pid)
        finally:
            floor.close()

    result = {
        "date": started.isoformat(timespec="seconds"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
                   "wrk, the panels' client, gunicorn and MariaDB on the same cores",
        "panels_open": PANELS, "panels_with_state": panels_with_state, "work_windows": windows,
        "push": {"batch": 500, "connections": CONNECTIONS, "seconds_per_run": SECONDS, "pairs": PAIRS, **push,
                 "target_ratio": TARGET_RATIO, "target_p99_ratio": TARGET_P99_RATIO, "spread": SPREAD},
        "latency_at_200_rps": latency, "target_p99_ms": 25, "worker_rss_mb": rss,
    }
    print(f"\nservice benchmark, {started:%Y-%m-%d %H:%M} UTC ({result['machine']})")
    print(f"{panels_with_state} of {PANELS} agent panels open on the socket pool throughout")
    print(f"lead push, batches of 500 from {CONNECTIONS} wrk connections, {PAIRS} pairs of {SECONDS} s runs per kind,"
          " reference and service back to back:")
    print(f"  {'batches, working hours':<24}{'reference':>11}{'service':>11}  {'ratio (min..max)':<22}"
          f"{'p99 ms ref/svc':>16}  {'p99 ratio (min..max)':<22}target >= {TARGET_RATIO}, p99 <= {TARGET_P99_RATIO}x")
    for name, p in push.items():
        print(f"  {name:<24}{p['reference']['leads_per_s']:>9,}/s{p['service']['leads_per_s']:>9,}/s  "
              f"{p['ratio']:.2f} ({p['ratio_min']:.2f}..{p['ratio_max']:.2f}){' wide' if p['wide'] else '':<6}"
              f"{p['reference']['p99_ms']:>8}/{p['service']['p99_ms']:<7}  "
              f"{p['p99_ratio']:.2f} ({p['p99_ratio_min']:.2f}..{p['p99_ratio_max']:.2f})      "
              f"{'met' if p['target_met'] else 'NOT met'}")
    for hours in HOURS:
        print(f"\nlatency at 200 requests/s for {LATENCY_SECONDS} s (wrk, 4 connections), {hours} working hours:")
        print(f"  {'endpoint':<24}{'p50 ms':>8}{'p99 ms':>8}  target p99 < 25 ms")
        for name, figures in latency[hours].items():
            print(f"  {name:<24}{figures['p50_ms']:>8}{figures['p99_ms']:>8}  "
                  f"{'met' if figures['target_met'] else 'NOT met'}  ({figures['requests']} requests, "
                  f"{figures['status_errors']} errors)")
    print(f"\nresident memory per HTTP-pool worker after the run: {', '.join(f'{m} MB' for m in rss)}")
    with open("bench-results.json", "w") as out:
        json.dump(result, out, indent=2)


if __name__ == "__main__":
    main()
