"""Configuration (decisions.md D10), the `dialerapi` CLI and migrations (D1)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, SECRET
from dialerapi.plumbing import config, migrate
from dialerapi.plumbing.db import connect

DIALERAPI = str(Path(sys.executable).with_name("dialerapi"))
GUNICORN = str(Path(sys.executable).with_name("gunicorn"))

# decisions.md D1: the tables and the columns that are a contract with the dialing engine.
D1_COLUMNS = {
    "sales_master": {
        "id", "oli_id", "data_id", "phone_number", "client_name", "form_type", "priority_id", "dial_status",
        "disposeRemark", "last_dial_result", "hangup_by", "hangup_cause", "last_attempt_at", "first_attempt_at",
        "next_retry_at", "callback_scheduled_at", "call_count", "isReserved", "created_at", "updated_at",
    },
    "sales_priorities": {"id", "name", "is_callback", "is_active"},
    "sales_dialer_config": {
        "id", "isMaintainance", "outbound_obey_work_hours", "retry_pattern", "retry_seconds", "max_tries",
        "work_start", "work_end", "disposed_priority_id",
    },
    "sales_pending_actions": {
        "id", "oli_id", "action", "scheduled_at", "reason", "status", "agentId", "extension", "callbackType",
        "workStatus", "subDisposition", "remarks", "created_at", "applied_at",
    },
    "sales_call_attempts": {
        "id", "lead_id", "oli_id", "agent_id", "call_type", "started_at", "ended_at", "result", "hangup_by",
        "hangup_cause",
    },
    "sales_agents": {"id", "extension", "name", "outbound_blocked", "pause_code", "reason_note"},
    "sales_agent_skills": {"agent_id", "form_type"},
    "sales_agent_priorities": {"agent_id", "priority_id"},
    "sales_missed_activities": {
        "id", "agent_id", "lead_id", "oli_id", "call_type", "extension", "connected_at", "ended_at", "due_at",
        "cleared_at", "cleared_by",
    },
    "sales_pause_reasons": {"code", "label", "kind", "needs_note"},
}


@pytest.fixture
def no_env(monkeypatch, tmp_path):
    """No D10 variable in the environment and no .env in the working directory."""
    for name in config.SETTINGS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)


GOOD = {"DATABASE_URL": "mysql://u:p%40ss@db.example:3306/dialer", "WS_SECRET": "s3cret"}


def test_defaults(no_env):
    settings = config.load(GOOD)
    assert settings["DB_TIMEZONE"].key == "UTC"
    assert settings["MISSED_ACTIVITY_GRACE_MINUTES"] == 10 and settings["RELEASE_RETRY_MS"] == 60000
    assert settings["RATELIMIT_STORAGE_URI"] == "memory://" and settings["TRUSTED_PROXY_COUNT"] == 0
    assert settings["AMI_PORT"] == 5038 and settings["LOG_LEVEL"] == "INFO"
    assert [str(network) for network in settings["TRUSTED_PROXIES"]] == ["127.0.0.1/32", "::1/128"]
    assert config.database_params(settings["DATABASE_URL"]) == {
        "host": "db.example", "port": 3306, "user": "u", "password": "p@ss", "database": "dialer",
    }


def test_dotenv_is_read_and_the_environment_wins(no_env, tmp_path, monkeypatch):
    (tmp_path / ".env").write_text("WS_SECRET=from-file\nDB_TIMEZONE=Asia/Kolkata\nDATABASE_URL=mysql://a@h/d\n")
    monkeypatch.setenv("DB_TIMEZONE", "Europe/London")
    settings = config.load()
    assert settings["WS_SECRET"] == "from-file" and settings["DB_TIMEZONE"].key == "Europe/London"


@pytest.mark.parametrize("overrides, variable", [
    ({"WS_SECRET": ""}, "WS_SECRET"),
    ({"WS_SECRET": "has space"}, "WS_SECRET"),
    ({"WS_SECRET": "sécret"}, "WS_SECRET"),
    ({"DATABASE_URL": ""}, "DATABASE_URL"),
    ({"DATABASE_URL": "postgres://x@y/z"}, "DATABASE_URL"),
    ({"DATABASE_URL": "mysql://x@y:notaport/z"}, "DATABASE_URL"),
    ({"DB_TIMEZONE": "Mars/Olympus"}, "DB_TIMEZONE"),
    ({"MISSED_ACTIVITY_GRACE_MINUTES": "ten"}, "MISSED_ACTIVITY_GRACE_MINUTES"),
    ({"RELEASE_RETRY_MS": "-5"}, "RELEASE_RETRY_MS"),
    ({"AMI_PORT": "0"}, "AMI_PORT"),
    ({"LOG_LEVEL": "LOUD"}, "LOG_LEVEL"),
    ({"JOBS_ENABLED": "maybe"}, "JOBS_ENABLED"),
    ({"TRUSTED_PROXIES": "10.0.0.0/33"}, "TRUSTED_PROXIES"),
    ({"TRUSTED_PROXIES": "nginx.local"}, "TRUSTED_PROXIES"),
])
def test_bad_configuration_names_the_variable_in_one_line(no_env, overrides, variable):
    with pytest.raises(config.ConfigError) as err:
        config.load({**GOOD, **overrides})
    assert str(err.value).startswith(variable) and "\n" not in str(err.value)


def test_missing_secret_is_required(no_env):
    with pytest.raises(config.ConfigError, match="^WS_SECRET is required"):
        config.load({"DATABASE_URL": GOOD["DATABASE_URL"]})


def run(args, env_overrides, cwd=ROOT, timeout=60):
    env = {**os.environ, **env_overrides}
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def test_gunicorn_refuses_to_start_without_a_secret(database_url):
    result = run([GUNICORN, "-c", "deploy/gunicorn.conf.py", "--bind", "127.0.0.1:0", "wsgi:app"],
                 {"DATABASE_URL": database_url, "WS_SECRET": ""})
    assert result.returncode != 0
    assert "dialerapi: WS_SECRET is required" in result.stderr
    assert "Traceback" not in result.stderr


def test_cli_reports_bad_configuration_in_one_line(database_url):
    result = run([DIALERAPI, "db", "upgrade"], {"DATABASE_URL": database_url, "WS_SECRET": "x", "DB_TIMEZONE": "Nowhere/Land"})
    assert result.returncode != 0
    assert "DB_TIMEZONE='Nowhere/Land' is not an IANA time zone" in result.stderr and "Traceback" not in result.stderr


def columns(url):
    conn = connect(url)
    with conn.cursor() as cur:
        cur.execute(
            "SELECT table_name AS t, column_name AS c, column_type AS ty, is_nullable AS n, column_default AS d,"
            " collation_name AS co FROM information_schema.columns WHERE table_schema = DATABASE()"
            " AND table_name NOT LIKE '%%yoyo%%' ORDER BY table_name, ordinal_position"
        )
        rows = cur.fetchall()
    conn.close()
    return rows


@pytest.mark.long
@pytest.mark.slow
def test_cli_upgrade_builds_the_d1_schema_and_is_idempotent(fresh_database, database_url, sql):
    env = {"DATABASE_URL": fresh_database, "WS_SECRET": SECRET}
    first = run([DIALERAPI, "db", "upgrade"], env)
    assert first.returncode == 0, first.stderr
    ids = sorted(p.name[:-4] for p in migrate.MIGRATIONS_DIR.glob("*.sql") if not p.name.endswith(".rollback.sql"))
    assert f"applied {len(ids)} migration(s): {', '.join(ids)}" in first.stdout
    assert run([DIALERAPI, "db", "pending"], env).stdout.strip() == "schema is up to date"
    second = run([DIALERAPI, "db", "upgrade"], env)
    assert second.returncode == 0 and "schema is up to date" in second.stdout

    found = {}
    for row in columns(fresh_database):
        found.setdefault(row["t"], set()).add(row["c"])
    for table, required in D1_COLUMNS.items():
        assert required <= found.get(table, set()), f"{table} lacks {required - found.get(table, set())}"
    # The session's database was built by the same migrations through the library call.
    assert columns(fresh_database) == columns(database_url)


def test_an_upgraded_database_ends_identical_to_a_fresh_one(fresh_database, database_url):
    from yoyo import get_backend, read_migrations

    backend = get_backend(fresh_database)
    with backend.lock():
        backend.apply_migrations(backend.to_apply(read_migrations(str(migrate.MIGRATIONS_DIR)))[:1])
    backend.connection.close()
    assert migrate.pending(fresh_database)
    migrate.upgrade(fresh_database)
    assert migrate.pending(fresh_database) == []
    assert columns(fresh_database) == columns(database_url)


def test_seed_rows_and_operator_changes_survive_an_upgrade(fresh_database):
    migrate.upgrade(fresh_database)
    conn = connect(fresh_database)
    conn.autocommit(True)
    with conn.cursor() as cur:
        cur.execute("SELECT id, name, is_callback, is_active FROM sales_priorities ORDER BY id")
        assert list(cur.fetchall()) == [
            {"id": 1, "name": "Callback Schedule", "is_callback": 1, "is_active": 1},
            {"id": 2, "name": "Fresh Assign", "is_callback": 0, "is_active": 1},
            {"id": 3, "name": "Final Disposal", "is_callback": 0, "is_active": 1},
        ]
        cur.execute("SELECT * FROM sales_dialer_config")
        [row] = cur.fetchall()
        assert row["retry_pattern"] == "4,4,3,2,1,1,1,1,1,1,1" and row["retry_seconds"] == 3600
        assert row["max_tries"] == 20 and row["disposed_priority_id"] == 3 and row["isMaintainance"] == 0
        assert str(row["work_start"]) == "9:00:00" and str(row["work_end"]) == "21:00:00"
        cur.execute("UPDATE sales_dialer_config SET retry_seconds = 1800")
        cur.execute("DELETE FROM sales_pause_reasons WHERE code = 'tea'")
    migrate.upgrade(fresh_database)
    with conn.cursor() as cur:
        cur.execute("SELECT retry_seconds FROM sales_dialer_config")
        assert cur.fetchone()["retry_seconds"] == 1800
        cur.execute("SELECT COUNT(*) AS n FROM sales_pause_reasons WHERE code = 'tea'")
        assert cur.fetchone()["n"] == 1
    conn.close()


def test_oli_id_is_case_sensitive(client, auth, sql):
    for oli_id in ("abc-1", "ABC-1"):
        body = {"oli_id": oli_id, "phone_number": "9876543210", "client_name": "A", "form_type": "f", "priority_id": 2}
        assert client.post("/api/leads", json=body, headers=auth).get_json()["leads"][0]["status"] == "inserted"
    assert sql.one("SELECT COUNT(*) AS n FROM sales_master")["n"] == 2


def test_every_operator_command_has_a_useful_help():
    import click

    from dialerapi.cli import main

    ours = {"db", "settle", "sweep", "call-connected", "agents", "claim", "bridge", "simulate", "dnc", "floor"}
    assert ours <= set(main.commands)

    def walk(command, path):
        yield path, command
        if isinstance(command, click.Group):
            for name, sub in command.commands.items():
                yield from walk(sub, [*path, name])

    checked = 0
    for path, command in walk(main, []):
        if path and path[0] not in ours:
            continue  # Flask's own run / shell / routes
        text = command.help or ""
        assert len(text.split()) >= 5, f"`dialerapi {' '.join(path)} --help` says too little: {text!r}"
        for param in command.params:
            if isinstance(param, click.Option) and param.name != "help" and not param.is_flag:
                assert param.help or param.show_default, f"{' '.join(path)} {param.opts} has no help"
        checked += 1
    assert checked >= 15


def test_make_run_generates_each_callers_key_once(tmp_path):
    (tmp_path / "scripts").mkdir()
    script = tmp_path / "scripts" / "ensure-secret.sh"
    script.write_bytes((ROOT / "scripts" / "ensure-secret.sh").read_bytes())
    script.chmod(0o755)
    (tmp_path / ".env").write_text("WS_SECRET=kept-crm-secret-123456\n")
    env = {key: value for key, value in os.environ.items() if key not in ("WS_SECRET", "ENGINE_SECRET", "MONITOR_SECRET")}
    first = subprocess.run([str(script)], env=env, capture_output=True, text=True, check=True)
    assert "ENGINE_SECRET=" in first.stdout and "MONITOR_SECRET=" in first.stdout
    assert "\n  WS_SECRET=" not in first.stdout
    written = (tmp_path / ".env").read_text()
    subprocess.run([str(script)], env=env, capture_output=True, text=True, check=True)
    assert (tmp_path / ".env").read_text() == written, "a second run changes nothing"
    values = dict(line.split("=", 1) for line in written.splitlines())
    assert values["WS_SECRET"] == "kept-crm-secret-123456" and len(values["ENGINE_SECRET"]) >= 40
    assert len(values["MONITOR_SECRET"]) >= 40 and values["MONITOR_SECRET"] != values["ENGINE_SECRET"]
    assert oct((tmp_path / ".env").stat().st_mode)[-3:] == "600"
