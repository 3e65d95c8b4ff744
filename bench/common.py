"""What the benchmarks share: a migrated database of their own beside DATABASE_URL's, a gunicorn
serving it with the shipped settings, and wrk (a load generator in C) with a Lua script."""

import json
import os
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import requests

from dialerapi.plumbing import migrate
from dialerapi.plumbing.db import connect

ROOT = Path(__file__).resolve().parent.parent


# The UPDATE_POOL leads U-000000.. that update runs push again, in one statement (MariaDB's sequence engine).
FILL = """
INSERT INTO sales_master
  (oli_id, data_id, phone_number, client_name, form_type, priority_id, dial_status, call_count, isReserved,
   created_at, updated_at)
SELECT CONCAT('U-', LPAD(seq, 6, '0')), UUID(), CONCAT('9198', LPAD(seq, 8, '0')), CONCAT('Lead ', seq),
       'home_loan', 2, 'Pending', 0, 0, NOW(), NOW()
FROM seq_0_to_{last}
"""


def empty_table(url, fill=None):
    """sales_master emptied, with what refers to its leads (the agents and their panels stay); then
    `fill` (a statement, e.g. FILL) run in the same transaction."""
    conn = connect(url, io_timeout=600)
    with conn.cursor() as cur:
        for table in ("sales_pending_actions", "sales_missed_activities", "dialerapi_outbox"):
            cur.execute(f"DELETE FROM {table}")
        cur.execute("TRUNCATE sales_master")
        if fill:
            cur.execute(fill)
    conn.commit()
    conn.close()


def bench_database(name):
    """Create (if needed) and migrate database `name` on DATABASE_URL's server; return its URL."""
    server_url = os.environ.get("DATABASE_URL")
    if not server_url:
        sys.exit("DATABASE_URL is not set: run `make bench`")
    admin = connect(server_url)
    with admin.cursor() as cur:
        cur.execute(f"CREATE DATABASE IF NOT EXISTS `{name}` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci")
    admin.close()
    url = urlunsplit(urlsplit(server_url)._replace(path=f"/{name}"))
    migrate.upgrade(url)
    return url


@contextmanager
def gunicorn(app, port, workers=2, root=ROOT, **settings):
    """Serve `app` (e.g. "wsgi:app") with deploy/gunicorn.conf.py on 127.0.0.1:`port`; yields (base URL, master pid).

    `settings` are environment variables (DATABASE_URL, WS_SECRET, ...). `root`: the checkout whose
    code serves (another release's worktree: its package comes first on the path). Waits until
    /healthz answers (or, for an app without it, until the port accepts connections), and stops
    the server after.
    """
    env = {**os.environ, "JOBS_ENABLED": "false", "LOG_LEVEL": "WARNING", "GUNICORN_BIND": f"127.0.0.1:{port}",
           "GUNICORN_WORKERS": str(workers), **settings}
    if root != ROOT:
        env["PYTHONPATH"] = str(root)
    server = subprocess.Popen([str(Path(sys.executable).with_name("gunicorn")), "-c", "deploy/gunicorn.conf.py", app],
                              cwd=root, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                requests.get(base + "/healthz", timeout=1)
                break
            except requests.RequestException:
                if server.poll() is not None:
                    sys.exit(f"gunicorn serving {app} did not start")
                time.sleep(0.1)
        yield base, server.pid
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)


def wrk(script, base, seconds, connections=1, threads=1, **env):
    """Run wrk with bench/`script` against `base`; return the JSON line its done() prints (wrk_report.lua).

    `env` reaches the script through os.getenv. Latencies are wrk's own (microsecond histogram),
    measured in C on the client side.
    """
    result = subprocess.run(
        ["wrk", "-t", str(threads), "-c", str(connections), "-d", f"{seconds}s", "--timeout", "30s",
         "-s", f"bench/{script}", base],
        cwd=ROOT, env={**os.environ, **{k: str(v) for k, v in env.items()}}, capture_output=True, text=True,
    )
    lines = [line for line in result.stdout.splitlines() if line.startswith("{")]
    if result.returncode != 0 or not lines:
        sys.exit(f"wrk {script} failed:\n{result.stdout}\n{result.stderr}")
    return json.loads(lines[-1])


def wait_until_idle(url, quiet_checks=3, interval=0.1, limit=60):
    """Wait until no other client of `url`'s database runs a statement or holds a transaction.

    wrk stops at its deadline, but gunicorn finishes the requests it already took; a run that
    starts (or refills the table) before they end measures, or collides with, the last run's tail.
    """
    conn = connect(url)
    quiet, deadline = 0, time.monotonic() + limit
    with conn.cursor() as cur:
        while quiet < quiet_checks and time.monotonic() < deadline:
            cur.execute(
                "SELECT (SELECT COUNT(*) FROM information_schema.INNODB_TRX WHERE trx_mysql_thread_id <> CONNECTION_ID())"
                " + (SELECT COUNT(*) FROM information_schema.PROCESSLIST"
                "    WHERE DB = DATABASE() AND COMMAND <> 'Sleep' AND ID <> CONNECTION_ID()) AS busy"
            )
            quiet = quiet + 1 if cur.fetchone()["busy"] == 0 else 0
            conn.commit()
            time.sleep(interval)
    conn.close()


def wait_for_purge(url, limit=120, dirty_pages=1000):
    """Wait (at most `limit` seconds) until InnoDB has purged what was deleted and has fewer than
    `dirty_pages` written pages left to flush: its background threads would otherwise share the 2
    cores with the run measured next."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        conn = connect(url)
        with conn.cursor() as cur:
            cur.execute("SELECT (SELECT COUNT FROM information_schema.INNODB_METRICS WHERE NAME = 'trx_rseg_history_len')"
                        " AS history, (SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS"
                        " WHERE VARIABLE_NAME = 'INNODB_BUFFER_POOL_PAGES_DIRTY') AS dirty")
            row = cur.fetchone()
        conn.close()
        if int(row["history"]) < 100 and int(row["dirty"]) < dirty_pages:
            return
        time.sleep(1)


def worker_rss_mb(master_pid):
    """Resident memory of each gunicorn worker of `master_pid`, in MB."""
    children = open(f"/proc/{master_pid}/task/{master_pid}/children").read().split()
    sizes = []
    for pid in children:
        for line in open(f"/proc/{pid}/status"):
            if line.startswith("VmRSS:"):
                sizes.append(round(int(line.split()[1]) / 1024, 1))
    return sizes
