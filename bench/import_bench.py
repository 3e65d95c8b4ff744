"""List import benchmark (issue #39): `dialerapi leads import` of a 1,000,000-row CSV with 1% bad
rows, in-process (straight to the database), against the HTTP lead push in the same run.

    make bench            (runs this after bench/service_bench.py)

- The list: ROWS rows (BENCH_IMPORT_ROWS) written like bench/push.lua's batches (Devanagari names,
  punctuated phones, form_type home_loan, priority 2), one row in BAD_EVERY bad, cycling through a
  short phone, an unknown priority, an empty name and a row with too few cells.
- The import: `dialerapi leads import FILE --json` as its own process, defaults (batches of 500, 2
  push processes), on an empty table; leads/s is the leads it stored over its wall time, from its
  start to its exit (reading, line counting and the rejects file included); peak RSS is the
  largest of the import's process and its push processes (the kernel's ru_maxrss of children).
- The HTTP push: wrk with bench/push.lua (new leads, batches of 500 from 8 connections, SECONDS)
  against the service under deploy/gunicorn.conf.py (2 gthread workers), once on an empty table
  before the import and once on the table the import filled after it; the reference is their mean.
- Checks: the rejects file holds exactly the bad rows, with their line numbers.

Targets: import leads/s >= 0.8x the HTTP push's, peak RSS < 150 MB. Prints a table and writes
bench-results-import.json.
"""

import csv
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

from common import ROOT, bench_database, empty_table, gunicorn, wait_until_idle, wrk

DB_NAME = "dialerapi_bench_import"
SECRET = "bench-secret-0123456789"
ROWS = int(os.environ.get("BENCH_IMPORT_ROWS", 1_000_000))
BAD_EVERY = 100
SECONDS = int(os.environ.get("BENCH_PUSH_SECONDS", 8))
CONNECTIONS = 8
TARGET_RATIO, TARGET_RSS_MB = 0.8, 150
HEADER = ["oli_id", "phone_number", "client_name", "form_type", "priority_id", "callback_scheduled_at"]
BAD = (
    lambda n: [f"F-{n:07d}", "12", f"प्रिया शर्मा {n}", "home_loan", "2", ""],
    lambda n: [f"F-{n:07d}", f"+91 98{n % 1000:03d}-{n % 100000:05d}", f"प्रिया शर्मा {n}", "home_loan", "99", ""],
    lambda n: [f"F-{n:07d}", f"+91 98{n % 1000:03d}-{n % 100000:05d}", "", "home_loan", "2", ""],
    lambda n: [f"F-{n:07d}", f"+91 98{n % 1000:03d}-{n % 100000:05d}"],
)


def write_list(path):
    """The list file; returns the line numbers of its bad rows."""
    bad_lines = []
    with open(path, "w", newline="", encoding="utf-8") as file:
        writer = csv.writer(file)
        writer.writerow(HEADER)
        for n in range(ROWS):
            if n % BAD_EVERY == BAD_EVERY - 1:
                writer.writerow(BAD[(n // BAD_EVERY) % len(BAD)](n))
                bad_lines.append(n + 2)
            else:
                writer.writerow([f"F-{n:07d}", f"+91 98{n % 1000:03d}-{n % 100000:05d}", f"प्रिया शर्मा {n}",
                                 "home_loan", "2", ""])
    return bad_lines


def http_push(url, base, run):
    wait_until_idle(url)
    report = wrk("push.lua", base, SECONDS, connections=CONNECTIONS, BENCH_PATH="/api/leads", BENCH_KIND="new",
                 BENCH_RUN=run, BENCH_POOL=500, BENCH_THREADS=1, WS_SECRET=SECRET)
    if report["status_errors"] or report["socket_errors"]:
        raise SystemExit(f"HTTP push: {report}")
    return {"leads_per_s": round(report["rate_per_s"] * 500), "p99_ms": report["p99_ms"]}


def import_list(url, path):
    """Run the import; its summary, wall seconds and the peak RSS (MB) of its processes: the kernel's
    ru_maxrss over this bench's finished children and theirs, which are the import, its push
    processes and the wrk runs (a few MB); gunicorn still runs and is not counted."""
    wait_until_idle(url)
    env = {**os.environ, "DATABASE_URL": url, "WS_SECRET": SECRET, "LOG_LEVEL": "WARNING"}
    started = time.monotonic()
    process = subprocess.run([str(Path(sys.executable).with_name("dialerapi")), "leads", "import", str(path),
                              "--json"], cwd=ROOT, env=env, capture_output=True, text=True)
    seconds = time.monotonic() - started
    if process.returncode not in (0, 1):
        raise SystemExit(f"the import failed ({process.returncode}): {process.stderr[-2000:]}")
    rss_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return json.loads(process.stdout.strip().splitlines()[-1]), seconds, round(rss_mb, 1)


def main():
    url = bench_database(DB_NAME)
    workdir = Path(tempfile.mkdtemp(prefix="dialerapi-bench-import-"))
    path = workdir / "leads.csv"
    bad_lines = write_list(path)
    settings = {"DATABASE_URL": url, "WS_SECRET": SECRET}
    with gunicorn("wsgi:app", 19400 + os.getpid() % 400, **settings) as (base, _):
        empty_table(url)
        before = http_push(url, base, "b")
        empty_table(url)
        summary, seconds, rss_mb = import_list(url, path)
        after = http_push(url, base, "a")
    rejects = list(csv.reader(open(workdir / "leads.rejects.csv", newline="", encoding="utf-8")))[1:]
    exact = [int(row[0]) for row in rejects] == bad_lines
    reference = (before["leads_per_s"] + after["leads_per_s"]) / 2
    rate = summary["inserted"] / seconds
    results = {
        "at": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), "machine": platform.machine(),
        "cpus": os.cpu_count(), "rows": ROWS, "bad_rows": len(bad_lines), "import": {
            "seconds": round(seconds, 1), "leads_per_s": round(rate), "peak_rss_mb": rss_mb, **summary},
        "http_push": {"before": before, "after": after, "reference_leads_per_s": round(reference)},
        "ratio": round(rate / reference, 2), "rejects_exact": exact,
        "target_met": rate / reference >= TARGET_RATIO and rss_mb < TARGET_RSS_MB and exact,
    }
    (ROOT / "bench-results-import.json").write_text(json.dumps(results, indent=2))
    print(f"\nlead list import, {ROWS:,} rows ({len(bad_lines):,} bad), {results['at']}")
    print("| | leads/s | peak RSS | target |")
    print("|---|---|---|---|")
    print(f"| HTTP push, batches of 500 from {CONNECTIONS} connections (before / after the import) | "
          f"{before['leads_per_s']:,} / {after['leads_per_s']:,} | | |")
    print(f"| `dialerapi leads import` ({seconds:.1f} s, {summary['inserted']:,} stored, {summary['rejected']:,} "
          f"rejected{', rejects exact' if exact else ', REJECTS WRONG'}) | {round(rate):,} | {rss_mb} MB | "
          f"ratio **{results['ratio']}** (>= {TARGET_RATIO}), RSS < {TARGET_RSS_MB} MB: "
          f"{'met' if results['target_met'] else 'MISSED'} |")
    for leftover in workdir.iterdir():
        leftover.unlink()
    workdir.rmdir()


if __name__ == "__main__":
    main()
