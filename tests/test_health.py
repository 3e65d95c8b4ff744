"""Health (decisions.md D8): the AMI check against a fake AMI on loopback, GET /health and
/api/health (200 / 503 and their fields), and /healthz while the database is stopped or hung."""

import socket
import threading
import time
from datetime import datetime

import pytest

from conftest import SECRET, make_app, release_version, utc_text
from dialerapi.plumbing import ami
from dialerapi.upkeep import health
from dialerapi.plumbing import db as db_module
from dialerapi.plumbing.config import database_nodes
from fake_ami import FakeAmi, closed_port

AMI_SECRET = "ami-secret-not-for-bodies"


@pytest.fixture
def fake_ami():
    server = FakeAmi(secret=AMI_SECRET)
    yield server
    server.close()


def ami_app(database_url, port, secret=AMI_SECRET):
    return make_app(database_url, AMI_HOST="127.0.0.1", AMI_PORT=port, AMI_USERNAME="dialerapi", AMI_SECRET=secret)


def test_ami_up(database_url, fake_ami):
    app = ami_app(database_url, fake_ami.port)
    assert health.check_ami(app) is True
    deadline = time.monotonic() + 2
    while len(fake_ami.actions) < 3 and time.monotonic() < deadline:
        time.sleep(0.01)  # the client does not wait for Goodbye; the fake may still be reading Logoff
    assert fake_ami.actions == ["Login", "Ping", "Logoff"]
    state = app.extensions["dialerapi.health"]
    assert state.ami is True and state.ami_latency_ms >= 0 and state.ami_error is None
    assert app.test_client().get("/healthz").get_json()["ami"] is True


def test_ami_refusing_the_login(database_url, fake_ami):
    app = ami_app(database_url, fake_ami.port, secret="wrong")
    assert health.check_ami(app) is False
    assert "login refused: Authentication failed" in app.extensions["dialerapi.health"].ami_error
    assert fake_ami.actions == ["Login"]


def test_ami_down(database_url):
    app = ami_app(database_url, closed_port())
    started = time.monotonic()
    assert health.check_ami(app) is False
    assert time.monotonic() - started < 2
    assert "cannot reach AMI" in app.extensions["dialerapi.health"].ami_error


def test_ami_that_never_answers_times_out_under_2_seconds():
    server = FakeAmi(mode="silent")
    try:
        started = time.monotonic()
        with pytest.raises(ami.AmiError, match="timed out"):
            ami.ping("127.0.0.1", server.port, "u", "s")
        assert time.monotonic() - started < 2
    finally:
        server.close()


def test_something_that_is_not_ami():
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)

    def serve():
        conn, _ = listener.accept()
        conn.sendall(b"SSH-2.0-OpenSSH_9.2\r\n")
        time.sleep(0.5)
        conn.close()

    threading.Thread(target=serve, daemon=True).start()
    with pytest.raises(ami.AmiError, match="not an AMI banner"):
        ami.ping("127.0.0.1", listener.getsockname()[1], "u", "s")
    listener.close()


def test_ami_not_configured_is_not_checked(app):
    assert health.check_ami(app) is False
    body, status = health.report(app)
    assert status == 200 and body["checks"]["ami"]["configured"] is False


# --- /health ---------------------------------------------------------------------------------------

@pytest.mark.clock
def test_detailed_health_healthy(database_url, fake_ami, auth, sql, new_lead, make_live, client):
    app = ami_app(database_url, fake_ami.port)
    health.check_ami(app)
    new_lead("OLI-1")
    make_live("OLI-1")
    client.post("/api/pending-dispositions", json={"oliId": "OLI-1", "reason": "DND"}, headers=auth)
    sql("INSERT INTO sales_agents (id, extension, name, outbound_blocked) VALUES (501, '4501', 'A', 1)")
    sql("INSERT INTO dialerapi_job_runs (name, last_started_at, last_result) VALUES ('sweep', '2026-11-21 10:00:00', 'x')")
    import logging

    logging.getLogger("dialerapi.test").error("a line for the health log\nwith a second line")
    test_client = app.test_client()
    test_client.get("/healthz")
    test_client.get("/api/nothing", headers=auth)
    for path in ("/health", "/api/health"):
        response = test_client.get(path, headers=auth)
        assert response.status_code == 200
        body = response.get_json()
        assert body["ok"] is True and body["status"] == "healthy"
        assert body["checks"]["db"]["ok"] is True and body["checks"]["db"]["host"] == "127.0.0.1"
        (host, port), = database_nodes(app.config["DATABASE_URL"])
        assert body["checks"]["db"]["node"] == f"{host}:{port}" and body["checks"]["db"]["cluster"] is None
        assert body["checks"]["db"]["latency_ms"] >= 0 and body["checks"]["db"]["error"] is None
        assert body["checks"]["ami"] == {"ok": True, "configured": True, "host": "127.0.0.1",
                                         "latency_ms": body["checks"]["ami"]["latency_ms"], "error": None}
        metrics = body["metrics"]
        assert metrics["pending_actions"] == {"pending": 1} and metrics["blocked_agents"] == 1
        assert metrics["open_missed_activities"] == 0
        assert metrics["last_sweep_at"] == utc_text(datetime(2026, 11, 21, 10, 0))
        assert metrics["requests"]["2xx"] >= 1 and metrics["requests"]["4xx"] >= 1 and metrics["uptime_seconds"] >= 0
        assert any(line.endswith("a line for the health log") for line in body["logs"]) and len(body["logs"]) <= 20
        assert body["version"] == release_version()
        assert SECRET not in response.text and AMI_SECRET not in response.text


def test_detailed_health_is_503_when_ami_fails(database_url, auth):
    app = ami_app(database_url, closed_port())
    health.check_ami(app)
    response = app.test_client().get("/health", headers=auth)
    assert response.status_code == 503
    body = response.get_json()
    assert body["status"] == "unhealthy" and body["checks"]["ami"]["ok"] is False
    assert body["checks"]["db"]["ok"] is True


def test_detailed_health_needs_the_secret(client):
    assert client.get("/health").status_code == 401 and client.get("/api/health").status_code == 401


# --- a database that stops, and one that hangs -------------------------------------------------------

@pytest.mark.long
def test_health_with_the_database_stopped_and_restarted(own_mariadb, auth, monkeypatch):
    url, devdb = own_mariadb
    app = make_app(url)
    client = app.test_client()
    assert client.get("/health", headers=auth).status_code == 200
    assert health.check_database(app) is True
    devdb("stop")
    response = client.get("/health", headers=auth)
    assert response.status_code == 503
    body = response.get_json()
    assert body["status"] == "unhealthy" and body["checks"]["db"]["ok"] is False and body["checks"]["db"]["error"]
    assert client.get("/healthz").get_json() == {"ok": True, "ami": False, "db": False}
    lead = {"oli_id": "A", "phone_number": "9876543210", "client_name": "A", "form_type": "f", "priority_id": 2}
    monkeypatch.setattr(db_module, "FAILOVER_BUDGET_SECONDS", 1)
    refused = client.post("/api/leads", json=lead, headers=auth)
    # Not 500: nothing was stored and the client is told when to try again (issue #19).
    assert (refused.status_code, refused.headers["Retry-After"]) == (503, "2")
    assert refused.get_json() == {"ok": False, "error": "database_unavailable", "reason": "no_ready_node"}
    devdb("start")
    assert health.check_database(app) is True
    assert client.get("/health", headers=auth).status_code == 200
    assert client.post("/api/leads", json=lead, headers=auth).status_code == 201, "the pool reconnects by itself"


def test_healthz_does_not_wait_for_a_hung_database():
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(5)  # accepts TCP connections, never says a word: a hung server
    listener.settimeout(10)
    app = make_app(f"mysql://root@127.0.0.1:{listener.getsockname()[1]}/dialer")
    checking = threading.Thread(target=health.check_database, args=(app,))
    checking.start()
    connection, _ = listener.accept()  # the check has connected, and now waits for a greeting
    assert checking.is_alive(), "the background check is waiting on the database"
    started = time.monotonic()
    response = app.test_client().get("/healthz")
    answered_in = time.monotonic() - started
    assert response.get_json() == {"ok": True, "ami": False, "db": False}
    assert answered_in < 0.5, f"/healthz took {answered_in:.3f} s"
    checking.join(timeout=3)
    assert not checking.is_alive(), "the check gives up within its 2 s timeout"
    assert app.extensions["dialerapi.health"].db is False
    connection.close()
    listener.close()


@pytest.mark.clock
def test_health_reports_the_last_sweep_in_utc(database_url, auth, sql):
    sql("INSERT INTO dialerapi_job_runs (name, last_started_at) VALUES ('sweep', %s)", datetime(2026, 11, 21, 15, 30))
    app = make_app(database_url, DB_TIMEZONE="Asia/Kolkata")
    body = app.test_client().get("/health", headers=auth).get_json()
    assert body["metrics"]["last_sweep_at"] == "2026-11-21T10:00:00Z"
