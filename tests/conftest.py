"""Test fixtures: a real MariaDB (the one `make test` starts), a throwaway database per run,
emptied and re-seeded before each test, the app built with a test config, and a real gunicorn.

Time (decisions.md D2): no test reads the machine's clock. Every test starts with the service
clock frozen at DEFAULT_NOW, wall-clock time in TZ (the DB_TIMEZONE of the environment, as the
apps under test see it), and moves it with `frozen_clock`. Subprocesses (CLI commands, gunicorn)
get their clock from libfaketime, started at a moment the test chose (`faketime.environment`).
`make test-clock` runs the suite with the machine's clock and DB_TIMEZONE moved (clock_matrix.py).
"""

import configparser
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from collections import Counter
from datetime import datetime, timedelta, timezone
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import cachetools
import pymysql
import pytest
import requests
from pymysql.constants import CLIENT
from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service

import faketime
from dialerapi import create_app
from dialerapi.plumbing import clock, migrate
from dialerapi.plumbing import config as settings
from dialerapi.plumbing.db import connect, connect_params, get_db
from dialerapi.plumbing.limits import limiter
from dialerapi.rules.caller_ids import choice as caller_id_choice
from dialerapi.rules.caller_ids import numbers as caller_id_numbers
from dialerapi.rules.compliance import claim_checks

ROOT = Path(__file__).resolve().parent.parent
SECRET = "test-secret-1234567890-abcdef"
ENGINE_SECRET = "test-engine-secret-0987654321"
MONITOR_SECRET = "test-monitor-secret-5555555555"
SUPERVISOR_SECRET = "test-supervisor-secret-4949494949"
# The zone the apps under test run in: DB_TIMEZONE from the environment or .env, as create_app reads it.
TZ = settings.load({"DATABASE_URL": "mysql://tests@127.0.0.1/unused", "WS_SECRET": SECRET})["DB_TIMEZONE"]
# "Now" for every test that does not set its own: a Saturday mid-morning, inside the work window.
DEFAULT_NOW = datetime(2026, 11, 21, 10, 0, 0)
DATA_TABLES = (
    "sales_master", "sales_pending_actions", "sales_call_attempts", "sales_agents", "sales_agent_skills",
    "sales_agent_priorities", "sales_missed_activities", "sales_dialer_config", "sales_priorities",
    "sales_pause_reasons", "dialerapi_job_runs", "dialerapi_outbox", "dialerapi_engine_replies",
    "dialerapi_socket_hosts", "dialerapi_dnc", "dialerapi_call_zones", "dialerapi_counters", "dialerapi_abandon_counts",
    "dialerapi_lead_events", "dialerapi_webhook_endpoints", "dialerapi_webhook_deliveries", "dialerapi_webhook_attempts",
    "dialerapi_agent_states", "dialerapi_agent_days", "dialerapi_contact_caps", "dialerapi_contact_numbers",
    "dialerapi_contact_capped", "dialerapi_outcome_retries", "dialerapi_campaigns", "dialerapi_campaign_changes",
    "dialerapi_calling_rules", "dialerapi_restrictions", "dialerapi_held_counts", "dialerapi_caller_ids",
    "dialerapi_caller_id_pools", "dialerapi_caller_id_changes",
)


def pytest_addoption(parser):
    parser.addoption("--suite-part", metavar="K/N", help="make test-clock: the tests of the K-th (0-based) of N "
                     "parts of the test files, split to even test counts, and every test marked clock")
    parser.addoption("--serial-group", choices=("with", "without", "only"), default="with",
                     help="the tests marked `serial`: run them with the others (default), leave them out (the "
                     "parallel run of scripts/pytest_groups.sh) or run only them (its serial run, -n0)")


def pytest_xdist_auto_num_workers(config):
    """`-n auto`: two workers a core, at least four. The suite mostly waits (on MariaDB, gunicorn,
    Chromium, subprocesses), so on the project's 2-core machine four workers overlap those waits;
    more only add workers' start-up and memory (issue #47)."""
    return max(4, 2 * (os.cpu_count() or 1))


def pytest_collection_modifyitems(config, items):
    kept = items
    part = config.getoption("--suite-part")
    if part:
        k, n = (int(x) for x in part.split("/"))
        # Whole files, so a module's gunicorn starts in one part only; the most tests first, each to the
        # part with the fewest so far, so the parts take about as long.
        counts = Counter(item.path for item in items)
        parts = [[] for _ in range(n)]
        for path in sorted(counts, key=lambda path: (-counts[path], path)):
            min(parts, key=lambda part: sum(counts[p] for p in part)).append(path)
        mine = set(parts[k])
        kept = [item for item in kept if item.path in mine or item.get_closest_marker("clock")]
    if len(kept) != len(items):
        config.hook.pytest_deselected(items=[item for item in items if item not in kept])
    # The tests marked `slow` first (a stable sort: modules stay together), so the parallel run hands
    # them out to its workers at the start instead of ending on one of them.
    kept.sort(key=lambda item: item.get_closest_marker("slow") is None)
    for item in kept:
        # The tests of a module that share a module-scoped fixture (a gunicorn, Chromium, the built
        # docs site) run on one worker (`--dist loadgroup`), which sets the fixture up once.
        definitions = getattr(item, "_fixtureinfo", None)
        if definitions and any(defs[-1].scope == "module" for defs in definitions.name2fixturedefs.values()):
            item.add_marker(pytest.mark.xdist_group(item.module.__name__))
    items[:] = kept


class SerialGroup:
    """`--serial-group`: keeps the tests marked `serial` or leaves them out. Last among the
    collection hooks, so it counts what `-m`, `-k` and `--suite-part` left (a conftest's own hook
    runs before pytest's `-m`)."""

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config, items):
        group = config.getoption("--serial-group")
        if group == "with":
            return
        serial = [item for item in items if item.get_closest_marker("serial") is not None]
        kept = serial if group == "only" else [item for item in items if item not in serial]
        if group == "without" and os.environ.get("SERIAL_TESTS_FILE"):
            # scripts/pytest_groups.sh skips its serial run (a pytest start-up) when this says 0.
            Path(os.environ["SERIAL_TESTS_FILE"]).write_text(str(len(serial)))
        if len(kept) != len(items):
            config.hook.pytest_deselected(items=[item for item in items if item not in kept])
            items[:] = kept


def pytest_configure(config):
    config.pluginmanager.register(SerialGroup(), "dialerapi-serial-group")


def pytest_sessionfinish(session, exitstatus):
    """One group of scripts/pytest_groups.sh finding nothing of its kind in the selection (no `serial`
    test in it, or nothing but) is no failure: the other group ran the selection."""
    if exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED and session.config.getoption("--serial-group") != "with":
        session.exitstatus = pytest.ExitCode.OK


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """How many tests this run ran, added to TEST_COUNT_FILE when it is set: scripts/pytest_groups.sh
    sums its two runs' for the `make test` row of docs/performance.md's table (bench/figures.py)."""
    if os.environ.get("TEST_COUNT_FILE") and not hasattr(config, "workerinput"):
        ran = sum(len(terminalreporter.stats.get(kind, []))
                  for kind in ("passed", "failed", "error", "skipped", "xfailed", "xpassed"))
        with open(os.environ["TEST_COUNT_FILE"], "a") as out:
            out.write(f"{ran}\n")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A failed test that used the session's live gunicorn shows the end of that gunicorn's log (CI's
    make test-clock once met a worker that stopped answering, and the log went with the moment's
    temporary directory)."""
    outcome = yield
    report = outcome.get_result()
    server = item.funcargs.get("live_server") if hasattr(item, "funcargs") else None
    if report.failed and isinstance(server, LiveServer) and Path(server.log).exists():
        state = "running" if server.process.poll() is None else f"exited with {server.process.returncode}"
        tail = "\n".join(Path(server.log).read_text(errors="replace").splitlines()[-60:])
        report.sections.append((f"live gunicorn ({state}): the end of its log", tail))


def _with_database(url, name):
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"/{name}"))


@pytest.fixture(scope="session", autouse=True)
def faketime_segments():
    """Leave no libfaketime shared memory behind (processes the tests kill cannot remove their own)."""
    yield
    faketime.remove_leftovers()


@pytest.fixture(scope="session")
def server_url():
    url = os.environ.get("DATABASE_URL")
    if not url:
        pytest.exit("DATABASE_URL is not set: run the tests with `make test`", returncode=2)
    return url


@pytest.fixture(scope="session")
def database_url(server_url):
    """A new database on the test server, migrated and seeded; dropped after the run."""
    name = f"dialerapi_test_{os.getpid()}_{secrets.token_hex(3)}"
    admin = connect(server_url)
    with admin.cursor() as cur:
        cur.execute(f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci")
    url = _with_database(server_url, name)
    migrate.upgrade(url)
    yield url
    with admin.cursor() as cur:
        cur.execute(f"DROP DATABASE IF EXISTS `{name}`")
    admin.close()


class Sql:
    """Direct SQL on the test database (autocommit), for arranging rows and checking results."""

    def __init__(self, url):
        self.conn = pymysql.connect(**connect_params(url), client_flag=CLIENT.MULTI_STATEMENTS)
        self.conn.autocommit(True)

    def empty(self, tables):
        """Delete every row of `tables` in one round trip."""
        with self.conn.cursor() as cur:
            cur.execute("".join(f"DELETE FROM {table};" for table in tables))
            while cur.nextset():
                pass

    def __call__(self, statement, *params):
        with self.conn.cursor() as cur:
            cur.execute(statement, params or None)
            return list(cur.fetchall())

    def one(self, statement, *params):
        rows = self(statement, *params)
        assert len(rows) == 1, rows
        return rows[0]

    def lead(self, oli_id):
        return self.one("SELECT * FROM sales_master WHERE oli_id = %s", oli_id)


@pytest.fixture
def fresh_database(server_url):
    """An empty database of its own, for migrations: its URL."""
    name = f"dialerapi_fresh_{os.getpid()}"
    admin = connect(server_url)
    with admin.cursor() as cur:
        cur.execute(f"DROP DATABASE IF EXISTS `{name}`")
        cur.execute(f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4")
    yield _with_database(server_url, name)
    with admin.cursor() as cur:
        cur.execute(f"DROP DATABASE IF EXISTS `{name}`")
    admin.close()


@pytest.fixture(scope="session")
def sql_session(database_url):
    sql = Sql(database_url)
    yield sql
    sql.conn.close()


def aware(moment, tz=TZ):
    """An aware datetime: naive `moment` is wall-clock time in `tz` (fold 0: a repeated time's first occurrence)."""
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=tz)


def set_clock(moment, tz=TZ):
    """Freeze the service clock at `moment` (naive: wall-clock in `tz`; aware: that instant)."""
    utc = aware(moment, tz).astimezone(timezone.utc)
    clock.set_utc_source(lambda: utc)


def utc_text(moment, tz=TZ):
    """ISO 8601 UTC with a Z of a naive wall-clock time in `tz`, computed with zoneinfo (not the code under test)."""
    return aware(moment, tz).astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def utc_naive(moment, tz=TZ):
    """Naive UTC of a naive wall-clock time in `tz`, as the service stores it in a `*_utc` column."""
    return aware(moment, tz).astimezone(timezone.utc).replace(tzinfo=None)


@pytest.fixture(autouse=True)
def clean_database(sql_session, database_url, monkeypatch):
    """Every test starts from a freshly seeded database, with the service clock at DEFAULT_NOW, in a
    process that knows none of another test's call zones: a process keeps its copy of
    dialerapi_call_zones, whose rows never change in a database's life, and the open zones it worked
    out from it for the minute (rules.compliance.claim_checks), which the emptied table would make
    another test's; nor another test's caller-ID pools (rules.caller_ids.choice.directory, by the
    last change's id, which an emptied history starts again).
    """
    monkeypatch.setattr(claim_checks, "_zones", {})
    monkeypatch.setattr(caller_id_choice, "_directories", cachetools.LRUCache(maxsize=256))
    monkeypatch.setattr(claim_checks, "_open_memo", {})
    sql_session.empty(DATA_TABLES)
    migrate.seed_rows(sql_session.conn)
    set_clock(DEFAULT_NOW)
    yield
    set_clock(DEFAULT_NOW)


@pytest.fixture
def sql(sql_session):
    return sql_session


def make_app(database_url, **overrides):
    config = {"DATABASE_URL": database_url, "WS_SECRET": SECRET, "ENGINE_SECRET": ENGINE_SECRET,
              "MONITOR_SECRET": MONITOR_SECRET, "SUPERVISOR_SECRET": SUPERVISOR_SECRET, "JOBS_ENABLED": False,
              "TESTING": True}
    config.update(overrides)
    return create_app(config)


@pytest.fixture(scope="session")
def session_app(database_url):
    return make_app(database_url)


@pytest.fixture
def app(session_app):
    limiter.reset()
    return session_app


@pytest.fixture
def client(app):
    return app.test_client()


@pytest.fixture
def auth():
    """Headers carrying the test secret."""
    return {"Authorization": f"Bearer {SECRET}"}


@pytest.fixture
def engine_auth():
    """Headers carrying the engine's test secret (ENGINE_SECRET, for /engine/)."""
    return {"Authorization": f"Bearer {ENGINE_SECRET}"}


@pytest.fixture
def frozen_clock():
    """Set the service's clock: `frozen_clock(datetime(2026, 11, 21, 22, 0))` (wall-clock in TZ) or an aware instant."""
    return set_clock


@pytest.fixture
def now(frozen_clock):
    """The moment a clock test runs at, wall-clock DB_TIMEZONE, the service's clock frozen there:
    under `make test-clock` the moment of the matrix (clock_matrix.MOMENT_VARIABLE), else DEFAULT_NOW.
    Read from the environment, never from the machine's clock (decisions.md D2)."""
    moment = os.environ.get("DIALERAPI_TEST_MOMENT")
    if moment:
        frozen_clock(datetime.fromisoformat(moment))
    return clock.now(TZ)


@pytest.fixture
def tz():
    """The apps' DB_TIMEZONE (a ZoneInfo)."""
    return TZ


def cli(database_url, *args, now=DEFAULT_NOW, stdin=None, **env):
    """Run `dialerapi ARGS` against the test database with its clock starting at `now` (wall-clock in TZ)."""
    environment = faketime.environment({**os.environ, "DATABASE_URL": database_url, "WS_SECRET": SECRET, **env},
                                       at=aware(now))
    return subprocess.run([str(Path(sys.executable).with_name("dialerapi")), *args], cwd=ROOT, env=environment,
                          input=stdin, capture_output=True, text=True, timeout=300)


@pytest.fixture
def command(app):
    """Run a `dialerapi` command in-process on the test app: `command("caps", "list")` returns click's
    Result (exit_code, output with stdout and stderr). For commands that read no clock of their own
    and need no process of their own; `cli` runs the installed program."""
    from dialerapi.cli import main

    runner = app.test_cli_runner()
    return lambda *args: runner.invoke(main, list(args))


def shell_env(live_server, at=DEFAULT_NOW, **extra):
    """The environment of a shell example run against `live_server` (examples/engine-call.sh, the
    README's tour): DIALER, the keys, curl and jq installed and curl on PATH, the clock at `at`
    (wall-clock in TZ)."""
    curl = require_program("curl", "curl")
    require_program("jq", "jq")
    return faketime.environment({**os.environ, "DIALER": live_server.base_url, "WS_SECRET": SECRET,
                                 "ENGINE_SECRET": ENGINE_SECRET, "PATH": f"{os.path.dirname(curl)}:{os.environ['PATH']}",
                                 **extra}, at=aware(at))


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class LiveServer:
    """A gunicorn serving wsgi:app on a loopback port, as `make run` does."""

    def __init__(self, base_url, process, log):
        self.base_url = base_url
        self.process = process
        self.log = log

    def url(self, path):
        return self.base_url + path

    def stop(self):
        os.killpg(self.process.pid, signal.SIGTERM)
        self.process.wait(timeout=30)


def start_gunicorn(database_url, log, workers=2, now=DEFAULT_NOW, pool="http", port=None, release=None,
                   **settings):
    """Start gunicorn on `port` (a free one when None) with the test settings plus `settings`; wait
    until it serves.

    `pool`: "http" (gthread workers) or "sockets" (the socket pool, gevent workers), as
    deploy/gunicorn.conf.py runs them. Its clock starts at `now` (wall-clock in TZ) and runs on.
    `release`: a checkout of another release (a git worktree) to serve, with its own
    deploy/gunicorn.conf.py, instead of this one.
    """
    port = port or free_port()
    env = faketime.environment({
        **os.environ, "DATABASE_URL": database_url, "WS_SECRET": SECRET, "ENGINE_SECRET": ENGINE_SECRET,
        "MONITOR_SECRET": MONITOR_SECRET, "SUPERVISOR_SECRET": SUPERVISOR_SECRET, "JOBS_ENABLED": "false",
        "GUNICORN_POOL": pool,
        "GUNICORN_BIND": f"127.0.0.1:{port}", "GUNICORN_WORKERS": str(workers), **settings,
    }, at=aware(now))
    if release is not None:
        # Ahead of this checkout's editable install, whose finder Python consults after sys.path.
        env["PYTHONPATH"] = str(release)
    with open(log, "ab") as out:
        process = subprocess.Popen(
            [str(Path(sys.executable).with_name("gunicorn")), "-c", "deploy/gunicorn.conf.py", "wsgi:app"],
            cwd=release or ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )
    server = LiveServer(f"http://127.0.0.1:{port}", process, log)
    deadline = time.monotonic() + 30
    while True:
        try:
            requests.get(server.url("/healthz"), timeout=1)
            return server
        # Refused before the master listens, or a read that times out while a worker still boots.
        except requests.RequestException:
            if process.poll() is not None or time.monotonic() > deadline:
                server.stop()
                pytest.fail("gunicorn did not start:\n" + Path(log).read_text())
            time.sleep(0.1)


def mint_token(base_url, agent_id=None, key=SECRET, **body):
    """POST /api/agent-tokens on a live server for `agent_id` (or the body's extension); the token."""
    if agent_id is not None:
        body["agentId"] = agent_id
    response = requests.post(base_url + "/api/agent-tokens", json=body, headers={"X-API-Key": key}, timeout=10)
    assert response.status_code == 201, response.text
    return response.json()["token"]


class Nginx:
    """A private nginx serving the shipped site (deploy/nginx/dialerapi.conf) on a loopback port."""

    def __init__(self, port, process, access_log):
        self.port = port
        self.process = process
        self.access_log = access_log

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=10)


SHIPPED_ACCESS_LOG = "/var/log/nginx/dialerapi.access.log"


def _upstream_servers(site, address, pools):
    """`site` with the `server` line of `address` in an upstream replaced by one per LiveServer of
    `pools` (one, or a list: one per host), each with the line's parameters."""
    pools = pools if isinstance(pools, (list, tuple)) else [pools]
    line = re.search(rf"server {re.escape(address)}([^;]*);", site)
    assert line, f"no `server {address}` line in the shipped site"
    servers = "\n    ".join(f"server {pool.base_url.removeprefix('http://')}{line.group(1)};" for pool in pools)
    return site.replace(line.group(0), servers)


def start_nginx(gunicorn, workdir, sockets=None):
    """Start Debian's nginx with the shipped site in front of `gunicorn` (a LiveServer, the HTTP pool,
    or a list of them: one per host) and `sockets` (the socket pools; `gunicorn` when None),
    listening on a free loopback port and logging to `workdir`; wait until it answers."""
    port = free_port()
    site = (ROOT / "deploy" / "nginx" / "dialerapi.conf").read_text()
    site = _upstream_servers(site, "127.0.0.1:8000", gunicorn)
    site = _upstream_servers(site, "127.0.0.1:8001", sockets or gunicorn)
    gunicorn = gunicorn[0] if isinstance(gunicorn, (list, tuple)) else gunicorn
    site = site.replace("listen 80;", f"listen 127.0.0.1:{port};")
    assert SHIPPED_ACCESS_LOG in site
    site = site.replace(SHIPPED_ACCESS_LOG, str(workdir / "access.log"))
    assert str(port) in site and gunicorn.base_url.rsplit(":", 1)[1] in site
    (workdir / "site.conf").write_text(site)
    temp = "\n".join(f"  {kind}_temp_path {workdir}/{kind};" for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    (workdir / "nginx.conf").write_text(
        f"user root;\ndaemon off;\npid {workdir}/nginx.pid;\nerror_log {workdir}/error.log warn;\n"
        f"worker_rlimit_nofile 40000;\nevents {{ worker_connections 16384; }}\n"
        f"http {{\n  access_log off;\n{temp}\n  include {workdir}/site.conf;\n}}\n"
    )
    process = subprocess.Popen([require_program("nginx", "nginx"), "-c", str(workdir / "nginx.conf"), "-p", str(workdir)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 10
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return Nginx(port, process, workdir / "access.log")
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"nginx did not start: {process.stderr.read() if process.stderr else ''}"
                            f"{(workdir / 'error.log').read_text() if (workdir / 'error.log').exists() else ''}")
            time.sleep(0.1)


@pytest.fixture(scope="session")
def live_server(database_url, tmp_path_factory):
    """gunicorn serving wsgi:app (2 gthread workers) on a free loopback port."""
    server = start_gunicorn(database_url, tmp_path_factory.mktemp("gunicorn") / "gunicorn.log")
    yield server
    server.stop()


def release_version():
    """The version setup.cfg gives the package: the one place a release's version is written."""
    parser = configparser.ConfigParser()
    parser.read(ROOT / "setup.cfg")
    return parser["metadata"]["version"]


def own_number(oli_id):
    """A lead's own Indian mobile number, the same for the same oli_id: leads of other customers
    have other numbers, and one live call per number (issue #65) keeps apart only leads that share one."""
    return f"+91 9{zlib.crc32(oli_id.encode()) % 10**9:09d}"


@pytest.fixture
def new_lead(client, auth):
    """Push one lead through the API: `new_lead("OLI-1", priority_id=1, ...)`; returns the stored
    data_id. Its phone_number is its own (own_number) unless given."""

    def push(oli_id, **fields):
        body = {"oli_id": oli_id, "phone_number": own_number(oli_id), "client_name": "Meena Sundaram",
                "form_type": "home_loan", "priority_id": 2, **fields}
        response = client.post("/api/leads", json=body, headers=auth)
        assert response.status_code == 201, response.get_json()
        return response.get_json()["leads"][0]["data_id"]

    return push


@pytest.fixture
def run(app):
    """Run a rules function in one transaction of the test app: run(claims.claim_next, 501, NOW)."""

    def run(work, *args, **kwargs):
        with app.app_context():
            return get_db().run(work, *args, **kwargs)

    return run


def set_presented(sql, number, calls, day=None):
    """Make the caller ID `number` (E.164 digits) have presented `calls` calls on `day` (the default
    clock's day), as claims would have counted them: on its row and its pools' ranks (migration 0027)."""
    day = day or DEFAULT_NOW.date()
    sql("UPDATE dialerapi_caller_ids AS c LEFT JOIN dialerapi_caller_id_pools AS p ON p.caller_id = c.id"
        " SET c.presented_day = %s, c.presented_today = %s, p.presented_rank = %s WHERE c.number = %s",
        day, calls, caller_id_numbers.day_key(day) + calls, number)


def contact_attempts(sql, phone_e164=None):
    """The contact attempts recorded (issue #50), oldest first per number: [(phone_e164, naive UTC
    moment, form_type, reservation_id)], of one number or of all; read from the JSON the service
    keeps, computed here with the standard library."""
    rows = sql("SELECT phone_e164, attempts FROM dialerapi_contact_numbers" +
               (" WHERE phone_e164 = %s" if phone_e164 else "") + " ORDER BY phone_e164",
               *([phone_e164] if phone_e164 else []))
    return [(row["phone_e164"], datetime(1970, 1, 1) + timedelta(seconds=at), form_type, reservation)
            for row in rows for at, form_type, reservation in json.loads(row["attempts"])]


def add_contact_attempts(sql, phone_e164, moments, form_type="home_loan"):
    """Record earlier dial attempts to a number at `moments` (wall-clock in TZ), as claims would have."""
    epochs = sorted(int((utc_naive(moment) - datetime(1970, 1, 1)).total_seconds()) for moment in moments)
    sql("INSERT INTO dialerapi_contact_numbers (phone_e164, version, attempts, last_at_utc) VALUES (%s, 1, %s, %s)",
        phone_e164, json.dumps([[at, form_type, None] for at in epochs]),
        datetime(1970, 1, 1) + timedelta(seconds=epochs[-1]))


def sixteen_at_once(app, errors, parties=16):
    """A runner of rules functions for `parties` threads, each in its own transaction begun on its
    own connection before all are released at once (a thread still connecting would otherwise come
    after the others are done). A retried transaction (deadlock) goes at once. Errors are collected."""
    start = threading.Barrier(parties)

    def run(work, *args, **kwargs):
        first = [True]

        def released(conn):
            conn.cursor().execute("SELECT 1")  # the transaction holds its connection now
            if first[0]:
                first[0] = False
                start.wait(timeout=60)
            return work(conn, *args, **kwargs)

        try:
            with app.app_context():
                return get_db().run(released)
        except Exception as exc:  # counted, not lost with the thread
            errors.append(repr(exc))
            return None

    return run


def progressive_claims_at_once(app, agent_ids, now):
    """claims.claim_next(agent, `now`, tz=TZ) for every agent of `agent_ids`, each in a thread and a
    transaction of its own, all released at once (sixteen_at_once). Returns (the oli_ids claimed,
    None for an empty answer, in no order; the errors)."""
    from dialerapi.rules.dialing import claims

    got, errors = [], []
    claimers = sixteen_at_once(app, errors, len(agent_ids))

    def claimer(agent_id):
        row = claimers(claims.claim_next, agent_id, now, tz=TZ)
        got.append(row and row["oli_id"])

    threads = [threading.Thread(target=claimer, args=(agent_id,)) for agent_id in agent_ids]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    return got, errors


@pytest.fixture
def floor_agent(sql):
    """An available agent: agent(501, skills=("home_loan",), priorities=(), **columns)."""

    def add(agent_id=501, skills=("home_loan",), priorities=(), **columns):
        sql("INSERT INTO sales_agents (id, extension, name, panel_active, ami_idle) VALUES (%s, %s, 'Agent', 1, 1)",
            agent_id, str(4000 + agent_id))
        for skill in skills:
            sql("INSERT INTO sales_agent_skills (agent_id, form_type) VALUES (%s, %s)", agent_id, skill)
        for priority in priorities:
            sql("INSERT INTO sales_agent_priorities (agent_id, priority_id) VALUES (%s, %s)", agent_id, priority)
        for column, value in columns.items():
            sql(f"UPDATE sales_agents SET {column} = %s WHERE id = %s", value, agent_id)
        return agent_id

    return add


@pytest.fixture
def make_live(sql):
    """Claim a lead as the dialing engine does: Calling, reserved, remembering the status it left."""

    def claim(oli_id, **columns):
        sql("UPDATE sales_master SET previous_dial_status = dial_status, dial_status = 'Calling', isReserved = 1"
            " WHERE oli_id = %s", oli_id)
        for column, value in columns.items():
            sql(f"UPDATE sales_master SET {column} = %s WHERE oli_id = %s", value, oli_id)
        return sql.lead(oli_id)

    return claim


@pytest.fixture
def open_missed_activity(sql):
    """Insert a missed activity of `agent_id` for a lead, as the service records one (wall-clock times
    in TZ and their UTC instants); `exact=False` leaves the UTC columns empty, as an engine writing
    SQL directly would."""

    def insert(oli_id, agent_id=501, connected_at=datetime(2026, 11, 21, 10, 0), ended_at=None, due_at=None,
               exact=True):
        lead = sql.lead(oli_id)
        times = [datetime.fromisoformat(t) if isinstance(t, str) else t for t in (connected_at, ended_at, due_at)]
        exact_times = [utc_naive(t) if exact and t is not None else None for t in times]
        sql("INSERT INTO sales_missed_activities (agent_id, lead_id, oli_id, call_type, extension, connected_at,"
            " ended_at, due_at, connected_at_utc, ended_at_utc, due_at_utc)"
            " VALUES (%s, %s, %s, 'outbound', '4501', %s, %s, %s, %s, %s, %s)",
            agent_id, lead["id"], oli_id, *times, *exact_times)
        return sql.one("SELECT * FROM sales_missed_activities WHERE id = LAST_INSERT_ID()")

    return insert


def require_program(program, package):
    """Path of `program`, from Debian's `package`; fails at once, naming the command that installs
    it, when it is missing. Tests never install anything: `make install` (scripts/system-packages.sh)
    installs every package before any test runs (issue #63)."""
    path = shutil.which(program) or next((p for p in (f"/usr/sbin/{program}", f"/usr/bin/{program}")
                                          if os.path.exists(p)), None)
    if path is None:
        pytest.fail(f"{program} is missing (Debian's {package}): run `make install`, which installs every "
                    f"package the targets need (scripts/system-packages.sh)", pytrace=False)
    return path


@pytest.fixture
def own_mariadb():
    """A MariaDB of this test's own (scripts/devdb.sh in a short temporary directory), to stop and restart."""
    directory = tempfile.mkdtemp(prefix="dh", dir="/tmp")
    env = {**os.environ, "DEVDB_DIR": directory, "DEVDB_PORT": str(free_port()), "DEVDB_NAME": "dialer"}

    def devdb(command):
        return subprocess.run([str(ROOT / "scripts" / "devdb.sh"), command], env=env, check=True,
                              capture_output=True, text=True).stdout.strip()

    devdb("start")
    url = devdb("url")
    migrate.upgrade(url)
    yield url, devdb
    devdb("stop")
    shutil.rmtree(directory, ignore_errors=True)


def start_chromium(profile_dir):
    """Headless Chromium (Debian's chromium and chromium-driver, installed when missing) on the real
    clock, with its profile in `profile_dir`: the browser is not the service, and libfaketime is for
    the service's processes. A Selenium driver; quit() it."""
    driver_path = require_program("chromedriver", "chromium-driver")
    options = Options()
    options.binary_location = require_program("chromium", "chromium")
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-quic",
                 "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 f"--user-data-dir={profile_dir}"):
        options.add_argument(flag)
    # The console, and the network's events (a request the page itself never makes, as the
    # favicon's), for driver.get_log.
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    service = Service(driver_path, env=faketime.real_clock(os.environ))
    driver = webdriver.Chrome(service=service, options=options)
    driver.execute_cdp_cmd("Network.enable", {})
    return driver


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    """start_chromium's browser for a module's tests."""
    driver = start_chromium(tmp_path_factory.mktemp("chromium"))
    yield driver
    driver.quit()


@pytest.fixture
def statements_sent(monkeypatch):
    """Count the statements this thread sends to the server (each query, BEGIN, COMMIT, ROLLBACK).

    The server's `Questions` counts every client's statements, the session's gunicorn tailing the
    outbox among them. A request sent through Flask's test client runs in the test's thread, so
    counting that thread's round trips at the driver counts exactly the request's."""
    counted = [0]
    me = threading.get_ident()
    for name in ("query", "begin", "commit", "rollback"):
        original = getattr(pymysql.connections.Connection, name)

        def counting(self, *args, _original=original, **kwargs):
            if threading.get_ident() == me:
                counted[0] += 1
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(pymysql.connections.Connection, name, counting)
    return lambda: counted[0]
