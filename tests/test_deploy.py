"""deploy/: nginx (Debian's, started privately on loopback with deploy/nginx/dialerapi.conf) in front
of gunicorn (deploy/gunicorn.conf.py): a push, 413 at the proxy, the websocket through the proxy,
and the client address from X-Forwarded-For for rate limiting; the systemd unit and cron line."""

import http.client
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from conftest import ENGINE_SECRET, ROOT, SECRET, require_program, free_port, mint_token, start_gunicorn, start_nginx
from wsclient import Client

# Each module here takes 8 s or more (setup.cfg `slow`): handed out first in a parallel run.
pytestmark = pytest.mark.slow

SITE = ROOT / "deploy" / "nginx" / "dialerapi.conf"
# Where the private nginx of `proxied` writes the shipped site's access log.
ACCESS_LOG = {}
LEAD = {"oli_id": "NG-1", "phone_number": "+91 98765 43210", "client_name": "Asha", "form_type": "f", "priority_id": 2}


@pytest.fixture(scope="module")
def proxied(database_url, tmp_path_factory):
    """gunicorn with TRUSTED_PROXY_COUNT=1 behind nginx running deploy/nginx/dialerapi.conf; yields nginx's port."""
    workdir = tmp_path_factory.mktemp("nginx")
    gunicorn = start_gunicorn(database_url, workdir / "gunicorn.log", workers=1, TRUSTED_PROXY_COUNT="1")
    nginx = start_nginx(gunicorn, workdir)
    ACCESS_LOG["path"] = nginx.access_log
    yield nginx.port
    nginx.stop()
    gunicorn.stop()


def request(method, port, path, body=None, headers=None, source="127.0.0.1"):
    """One HTTP request to nginx from the loopback address `source` (127.0.0.0/8 are all local)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10, source_address=(source, 0))
    try:
        conn.request(method, path, body=body, headers=headers or {})
        response = conn.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        conn.close()


def test_a_push_through_the_proxy(proxied, sql):
    status, headers, body = request("POST", proxied, "/api/leads", json.dumps(LEAD),
                                    {"X-API-Key": SECRET, "Content-Type": "application/json"})
    assert status == 201 and json.loads(body)["leads"][0]["status"] == "inserted"
    assert headers.get("X-Request-ID")
    assert sql.lead("NG-1")["phone_number"] == "919876543210"


def test_413_at_the_proxy_as_json(proxied, sql):
    body = b'{"leads": [' + b" " * (2 * 1024 * 1024) + b"]}"
    status, headers, answer = request("POST", proxied, "/api/leads", body, {"X-API-Key": SECRET})
    assert status == 413 and json.loads(answer) == {"ok": False, "error": "payload_too_large"}
    assert headers["Content-Type"].startswith("application/json")


def test_the_websocket_through_the_proxy(proxied, sql):
    sql("INSERT INTO sales_agents (id, extension, name) VALUES (501, '4501', 'Kavya')")
    token = mint_token(f"http://127.0.0.1:{proxied}", 501)
    client = Client.connect(f"ws://127.0.0.1:{proxied}/ws?token={token}")
    try:
        first = json.loads(client.receive(timeout=5))
        assert first == {"event": "dialer.outbound_blocked", "data": {"agent_id": 501, "blocked": False}}
        client.send(json.dumps({"event": "agent.pause", "data": {"code": "tea"}}))
        frames = [json.loads(client.receive(timeout=5)) for _ in range(3)]
        assert frames[-1]["event"] == "agent.paused"
    finally:
        client.close()
    # The agent's token travelled in the query string; the shipped site's access log keeps the path alone (#17).
    deadline = time.monotonic() + 5
    while "/ws" not in ACCESS_LOG["path"].read_text() and time.monotonic() < deadline:
        time.sleep(0.1)
    logged = ACCESS_LOG["path"].read_text()
    assert '"GET /ws HTTP/1.1" 101' in logged and token not in logged and "token=" not in logged


def test_the_board_socket_through_the_proxy(proxied, sql):
    """/board/ws (issue #49) is upgraded by the shipped site as /ws is, and its token stays out of the log."""
    sql("INSERT INTO sales_agents (id, extension, name) VALUES (501, '4501', 'Kavya')")
    status, _, answer = request("POST", proxied, "/api/supervisor-tokens", json.dumps({"name": "Priya"}).encode(),
                                {"X-API-Key": SECRET, "Content-Type": "application/json"})
    assert status == 201
    token = json.loads(answer)["token"]
    client = Client.connect(f"ws://127.0.0.1:{proxied}/board/ws?token={token}",
                            headers={"Origin": f"http://127.0.0.1:{proxied}"})
    try:
        snapshot = json.loads(client.receive(timeout=5))
        assert snapshot["event"] == "board.snapshot" and [row["agent_id"] for row in snapshot["data"]["agents"]] == [501]
    finally:
        client.close()
    deadline = time.monotonic() + 5
    while "/board/ws" not in ACCESS_LOG["path"].read_text() and time.monotonic() < deadline:
        time.sleep(0.1)
    logged = ACCESS_LOG["path"].read_text()
    assert '"GET /board/ws HTTP/1.1" 101' in logged and token not in logged


@pytest.mark.parametrize("origin, first", [
    ("http://127.0.0.1:{port}", "dialer.outbound_blocked"),
    ("http://127.0.0.1:1", "server_error"),
])
def test_the_proxy_keeps_the_port_so_a_browsers_own_origin_is_told_from_a_foreign_one(proxied, sql, origin, first):
    """nginx forwards the Host with its port ($http_host): the panel served through nginx on any port
    opens its socket, and a page of another origin (here another port) is refused (issue #28)."""
    sql("INSERT INTO sales_agents (id, extension, name) VALUES (501, '4501', 'Kavya')")
    token = mint_token(f"http://127.0.0.1:{proxied}", 501)
    client = Client.connect(f"ws://127.0.0.1:{proxied}/ws?token={token}", headers={"Origin": origin.format(port=proxied)})
    try:
        assert json.loads(client.receive(timeout=5))["event"] == first
    finally:
        client.close()


def test_rate_limits_count_the_address_nginx_saw(proxied, sql):
    path, body = "/api/pending-dispositions", json.dumps({"oliId": "ghost", "reason": "DND"})
    headers = {"X-API-Key": SECRET, "Content-Type": "application/json"}
    for _ in range(120):
        assert request("POST", proxied, path, body, headers, source="127.0.0.2")[0] == 404
    assert request("POST", proxied, path, body, headers, source="127.0.0.2")[0] == 429
    spoofed = {**headers, "X-Forwarded-For": "203.0.113.9"}
    assert request("POST", proxied, path, body, spoofed, source="127.0.0.2")[0] == 429, "a forged header does not help"
    assert request("POST", proxied, path, body, headers, source="127.0.0.3")[0] == 404, "another client, another counter"


def test_the_engine_api_only_from_the_engine_network(proxied, sql):
    body = json.dumps({"agent_id": 999, "ami_idle": True})
    headers = {"X-API-Key": ENGINE_SECRET, "Content-Type": "application/json"}
    status, _, answer = request("POST", proxied, "/engine/agent-state", body, headers, source="127.0.0.1")
    assert (status, json.loads(answer)) == (404, {"ok": False, "error": "unknown_agent"}), "allowed: reaches the service"
    status, headers_out, answer = request("POST", proxied, "/engine/agent-state", body, headers, source="127.0.0.2")
    assert (status, json.loads(answer)) == (403, {"ok": False, "error": "forbidden"})
    assert headers_out["Content-Type"].startswith("application/json")
    assert request("GET", proxied, "/healthz", source="127.0.0.2")[0] == 200, "the rest of the API stays open"


def test_the_systemd_unit_and_the_cron_line_use_the_shipped_files():
    unit = (ROOT / "deploy" / "systemd" / "dialerapi.service").read_text()
    exec_start = re.search(r"^ExecStart=(.+)$", unit, re.M).group(1).split()
    assert exec_start[1:] == ["-c", "deploy/gunicorn.conf.py", "wsgi:app"]
    assert (ROOT / exec_start[2]).exists() and (ROOT / "wsgi.py").exists()
    assert "EnvironmentFile=/etc/dialerapi/env" in unit and "Restart=on-failure" in unit
    # The socket pool (issue #27): the same app and settings file, GUNICORN_POOL=sockets, room for its sockets.
    sockets = (ROOT / "deploy" / "systemd" / "dialerapi-sockets.service").read_text()
    assert re.search(r"^ExecStart=(.+)$", sockets, re.M).group(1).split() == exec_start
    assert "Environment=GUNICORN_POOL=sockets" in sockets and "EnvironmentFile=/etc/dialerapi/env" in sockets
    assert int(re.search(r"^LimitNOFILE=(\d+)$", sockets, re.M).group(1)) > 2000 + 256
    site = SITE.read_text()
    assert "server 127.0.0.1:8001 max_fails=0;" in site and "proxy_pass http://dialerapi_sockets;" in site
    cron = (ROOT / "deploy" / "cron" / "dialerapi-health").read_text()
    line = [l for l in cron.splitlines() if l.startswith("* * * * *")][0]
    assert "/health" in line and "X-API-Key: $MONITOR_SECRET" in line and "curl -fsS" in line


def test_the_shipped_nginx_site_passes_nginx_t(tmp_path):
    nginx = require_program("nginx", "nginx")
    (tmp_path / "nginx.conf").write_text(
        f"pid {tmp_path}/nginx.pid;\nerror_log {tmp_path}/error.log;\nevents {{}}\n"
        f"http {{ include {SITE}; }}\n")
    result = subprocess.run([nginx, "-t", "-c", str(tmp_path / "nginx.conf"), "-p", str(tmp_path)],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert "syntax is ok" in result.stderr


def test_multiprocess_metrics_under_gunicorn(proxied):
    status, _, body = request("GET", proxied, "/metrics", headers={"X-API-Key": SECRET})
    assert status == 200 and b"dialerapi_request_duration_seconds_bucket" in body
    assert b'dialerapi_request_duration_seconds_count{method="GET",route="/healthz",status="200"}' in body


def raw_exchange(port, data):
    """Send raw bytes to a server on loopback; (status, headers text, body bytes) of its answer."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
        conn.sendall(data)
        answer = b""
        while True:
            chunk = conn.recv(65536)
            if not chunk:
                break
            answer += chunk
            head, sep, body = answer.partition(b"\r\n\r\n")
            length = re.search(rb"(?im)^content-length:\s*(\d+)", head)
            if sep and length and len(body) >= int(length.group(1)):
                break
    head, _, body = answer.partition(b"\r\n\r\n")
    status_line, _, headers = head.decode("latin-1").partition("\r\n")
    return int(status_line.split()[1]), headers, body


MALFORMED = {
    "bad-request-line": (b"GET /healthz HTTP/1.1 extra\r\nHost: x\r\n\r\n", 400, "validation_failed"),
    "bad-method": (b"G@T /healthz HTTP/1.1\r\nHost: x\r\n\r\n", 400, "validation_failed"),
    "uri-too-long": (b"GET /" + b"a" * 9000 + b" HTTP/1.1\r\nHost: x\r\n\r\n", 414, "request_uri_too_long"),
    "header-too-large": (b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + b"b" * 9000 + b"\r\n\r\n", 431,
                         "request_header_fields_too_large"),
    "too-many-headers": (b"GET /healthz HTTP/1.1\r\nHost: x\r\n" + b"".join(b"X-%d: 1\r\n" % n for n in range(120))
                         + b"\r\n", 431, "request_header_fields_too_large"),
    "unknown-transfer-coding": (b"POST /api/leads HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: bogus\r\n\r\n", 501,
                                "not_implemented"),
}


@pytest.mark.parametrize("name", MALFORMED)
def test_gunicorns_own_errors_are_d3_json(live_server, name):
    """Issue #17: requests gunicorn cannot parse were answered with its HTML pages."""
    data, status, code = MALFORMED[name]
    got, headers, body = raw_exchange(int(live_server.base_url.rsplit(":", 1)[1]), data)
    assert got == status, body
    assert re.search(r"(?im)^content-type: application/json", headers), headers
    answer = json.loads(body)
    assert answer["ok"] is False and answer["error"] == code
    assert set(answer) == ({"ok", "error", "details"} if status == 400 else {"ok", "error"})


def test_gunicorn_refuses_an_address_reachable_from_other_hosts(database_url, tmp_path):
    """Issue #17, finding 7: gunicorn has no request-read timeout, so the kit serves it only behind nginx."""
    env = {**os.environ, "DATABASE_URL": database_url, "WS_SECRET": SECRET, "JOBS_ENABLED": "false",
           "GUNICORN_BIND": f"0.0.0.0:{free_port()}", "GUNICORN_WORKERS": "1"}
    result = subprocess.run([str(Path(sys.executable).with_name("gunicorn")), "-c", "deploy/gunicorn.conf.py", "wsgi:app"],
                            cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode != 0
    assert "dialerapi: GUNICORN_BIND=0.0.0.0:" in result.stderr and "is not a loopback address" in result.stderr


@pytest.mark.parametrize("address, private_bind, allowed", [
    ("127.0.0.1:8000", "", True), ("unix:/run/dialerapi.sock", "", True), ("10.20.0.7:8000", "", False),
    ("10.20.0.7:8000", "1", True), ("[fd00::7]:8000", "1", True), ("0.0.0.0:8000", "1", False),
    ("8.8.8.8:8000", "1", False),
])
def test_a_private_address_for_an_nginx_on_another_host_only_when_asked(address, private_bind, allowed):
    """Issue #38: hosts behind one nginx on another machine bind a private address (GUNICORN_PRIVATE_BIND=1);
    never every interface, never a public address."""
    code = ("import runpy, sys; conf = runpy.run_path('deploy/gunicorn.conf.py');"
            f" sys.exit(0 if conf['_behind_nginx']({address!r}) else 3)")
    env = {**os.environ, "GUNICORN_PRIVATE_BIND": private_bind}
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == (0 if allowed else 3), result.stderr


def test_each_gunicorn_has_its_own_control_socket(live_server, database_url, tmp_path):
    """Issue #17: every gunicorn of a user shared one control socket path (~/.gunicorn/gunicorn.ctl)."""
    other = start_gunicorn(database_url, tmp_path / "gunicorn.log", workers=1)
    try:
        paths = [Path(tempfile.gettempdir()) / f"dialerapi-{server.base_url.rsplit(':', 1)[1]}.ctl"
                 for server in (live_server, other)]
        # The master opens its control socket once its workers are spawned, a moment after they serve.
        deadline = time.monotonic() + 10
        while not all(path.is_socket() for path in paths):
            assert time.monotonic() < deadline, f"missing: {[str(p) for p in paths if not p.is_socket()]}"
            time.sleep(0.1)
    finally:
        other.stop()


@pytest.mark.parametrize("name", MALFORMED)
def test_nginxs_own_errors_are_d3_json(proxied, name):
    """Issue #17: the shipped site answered requests it could not parse with nginx's HTML pages."""
    data, status, code = MALFORMED[name]
    got, headers, body = raw_exchange(proxied, data)
    if name == "too-many-headers":  # nginx has no count limit; gunicorn's answer comes through
        status, code = 431, "request_header_fields_too_large"
    assert re.search(r"(?im)^content-type: application/json", headers), (got, headers, body[:300])
    answer = json.loads(body)
    assert (got, answer["ok"], answer["error"]) == (status, False, code)


@pytest.mark.long
def test_nginx_drops_a_client_that_sends_its_request_slowly(proxied):
    """Issue #17, finding 7: a request line sent a byte every 2 s is cut off after client_header_timeout
    (10 s), long before nginx's default of 60 s, and never reaches gunicorn."""
    with socket.create_connection(("127.0.0.1", proxied), timeout=30) as conn:
        started = time.monotonic()
        ended = None
        for byte in b"GET /healthz HTTP/1.1\r\nHost: x\r\n":
            try:
                conn.sendall(bytes([byte]))
                conn.settimeout(2)
                if conn.recv(4096) == b"":
                    ended = time.monotonic()
                    break
            except TimeoutError:
                continue
            except OSError:
                ended = time.monotonic()
                break
    assert ended is not None and ended - started < 16, "the slow client was still connected"


def test_nginx_lets_an_idle_upstream_connection_go_before_any_gunicorn_would_close_it():
    """Issue #63: a request nginx sends on a connection gunicorn is closing is reset, and during a
    restart the other host may be the stopping one (a 502). nginx's upstream keepalive_timeout must
    be shorter than every gunicorn's keepalive: this release's, and gunicorn's default (2 s), which
    the release before issue #38 runs (the rolling upgrade's previous release)."""
    from gunicorn.config import Config

    site = (ROOT / "deploy" / "nginx" / "dialerapi.conf").read_text()
    upstream = re.search(r"upstream dialerapi \{(.*?)\n\}", site, re.S).group(1)
    seconds = int(re.search(r"^\s*keepalive_timeout (\d+)s;", upstream, re.M).group(1))
    shipped = subprocess.run([sys.executable, "-c", "import runpy; print(runpy.run_path('deploy/gunicorn.conf.py')"
                              "['keepalive'])"], cwd=ROOT, capture_output=True, text=True, check=True,
                             env={**os.environ, "GUNICORN_POOL": "http"})
    assert seconds < min(Config().keepalive, int(shipped.stdout))
