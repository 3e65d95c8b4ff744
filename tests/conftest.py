"""Test fixtures: a real MariaDB (the one `make test` starts), a throwaway database per run,
emptied and re-seeded before each test, the app built with a test config, and a real gunicorn.
"""

import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pymysql
import pytest
import requests

from dialerapi import clock, create_app, migrate
from dialerapi.db import connect
from dialerapi.limits import limiter

ROOT = Path(__file__).resolve().parent.parent
SECRET = "test-secret-1234567890-abcdef"
DATA_TABLES = (
    "sales_master", "sales_pending_actions", "sales_call_attempts", "sales_agents", "sales_agent_skills",
    "sales_agent_priorities", "sales_missed_activities", "sales_dialer_config", "sales_priorities",
    "sales_pause_reasons", "dialerapi_job_runs",
)


def _with_database(url, name):
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"/{name}"))


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
        self.conn = connect(url)
        self.conn.autocommit(True)

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


@pytest.fixture(scope="session")
def sql_session(database_url):
    sql = Sql(database_url)
    yield sql
    sql.conn.close()


@pytest.fixture(autouse=True)
def clean_database(sql_session, database_url):
    """Every test starts from a freshly seeded database and the real clock."""
    for table in DATA_TABLES:
        sql_session(f"DELETE FROM {table}")
    migrate.seed(database_url)
    yield
    clock.set_utc_source(None)


@pytest.fixture
def sql(sql_session):
    return sql_session


def make_app(database_url, **overrides):
    config = {"DATABASE_URL": database_url, "WS_SECRET": SECRET, "JOBS_ENABLED": False, "TESTING": True}
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
def frozen_clock():
    """Set the service's clock: `frozen_clock(datetime(..., tzinfo=timezone.utc))`."""

    def freeze(moment):
        assert moment.tzinfo is not None, "give an aware datetime"
        clock.set_utc_source(lambda: moment.astimezone(timezone.utc))

    yield freeze
    clock.set_utc_source(None)


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class LiveServer:
    def __init__(self, base_url, process):
        self.base_url = base_url
        self.process = process

    def url(self, path):
        return self.base_url + path


@pytest.fixture(scope="session")
def live_server(database_url, tmp_path_factory):
    """gunicorn serving wsgi:app (2 gthread workers) on a free loopback port."""
    port = free_port()
    log = tmp_path_factory.mktemp("gunicorn") / "gunicorn.log"
    env = {
        **os.environ, "DATABASE_URL": database_url, "WS_SECRET": SECRET, "JOBS_ENABLED": "false",
        "GUNICORN_BIND": f"127.0.0.1:{port}", "GUNICORN_WORKERS": "2",
    }
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [str(Path(sys.executable).with_name("gunicorn")), "wsgi:app"],
            cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            requests.get(base + "/healthz", timeout=1)
            break
        except requests.ConnectionError:
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail("gunicorn did not start:\n" + log.read_text())
            time.sleep(0.1)
    yield LiveServer(base, process)
    os.killpg(process.pid, signal.SIGTERM)
    process.wait(timeout=30)
