"""deploy/: nginx (Debian's, started privately on loopback with deploy/nginx/dialerapi.conf) in front
of gunicorn (deploy/gunicorn.conf.py): a push, 413 at the proxy, the websocket through the proxy,
and the client address from X-Forwarded-For for rate limiting; the systemd unit and cron line."""

import http.client
import json
import re
import subprocess
import time

import pytest
from simple_websocket import Client

from conftest import ENGINE_SECRET, ROOT, SECRET, ensure_program, free_port, start_gunicorn

SITE = ROOT / "deploy" / "nginx" / "dialerapi.conf"
SHIPPED_ACCESS_LOG = "/var/log/nginx/dialerapi.access.log"
# Where the private nginx of `proxied` writes the shipped site's access log.
ACCESS_LOG = {}
LEAD = {"oli_id": "NG-1", "phone_number": "+91 98765 43210", "client_name": "Asha", "form_type": "f", "priority_id": 2}


@pytest.fixture(scope="module")
def proxied(database_url, tmp_path_factory):
    """gunicorn with TRUSTED_PROXY_COUNT=1 behind nginx running deploy/nginx/dialerapi.conf; yields nginx's port."""
    workdir = tmp_path_factory.mktemp("nginx")
    gunicorn = start_gunicorn(database_url, workdir / "gunicorn.log", workers=1, TRUSTED_PROXY_COUNT="1")
    port = free_port()
    site = SITE.read_text()
    site = site.replace("server 127.0.0.1:8000;", f"server {gunicorn.base_url.removeprefix('http://')};")
    site = site.replace("listen 80;", f"listen 127.0.0.1:{port};")
    ACCESS_LOG["path"] = workdir / "access.log"
    assert SHIPPED_ACCESS_LOG in site
    site = site.replace(SHIPPED_ACCESS_LOG, str(ACCESS_LOG["path"]))
    assert str(port) in site and gunicorn.base_url.rsplit(":", 1)[1] in site
    (workdir / "site.conf").write_text(site)
    temp = "\n".join(f"  {kind}_temp_path {workdir}/{kind};" for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    (workdir / "nginx.conf").write_text(
        f"user root;\ndaemon off;\npid {workdir}/nginx.pid;\nerror_log {workdir}/error.log warn;\n"
        f"events {{ worker_connections 256; }}\n"
        f"http {{\n  access_log off;\n{temp}\n  include {workdir}/site.conf;\n}}\n"
    )
    nginx = subprocess.Popen([ensure_program("nginx", "nginx"), "-c", str(workdir / "nginx.conf"), "-p", str(workdir)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 10
    while True:
        try:
            request("GET", port, "/healthz")
            break
        except OSError:
            if nginx.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"nginx did not start: {nginx.stderr.read() if nginx.stderr else ''}"
                            f"{(workdir / 'error.log').read_text() if (workdir / 'error.log').exists() else ''}")
            time.sleep(0.1)
    yield port
    nginx.terminate()
    nginx.wait(timeout=10)
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
    client = Client.connect(f"ws://127.0.0.1:{proxied}/ws?agentId=501&key={SECRET}")
    try:
        first = json.loads(client.receive(timeout=5))
        assert first == {"event": "dialer.outbound_blocked", "data": {"agent_id": 501, "blocked": False}}
        client.send(json.dumps({"event": "agent.pause", "data": {"code": "tea"}}))
        frames = [json.loads(client.receive(timeout=5)) for _ in range(2)]
        assert frames[-1]["event"] == "agent.paused"
    finally:
        client.close()
    # The key travelled in the query string; the shipped site's access log keeps the path alone (#17).
    deadline = time.monotonic() + 5
    while "/ws" not in ACCESS_LOG["path"].read_text() and time.monotonic() < deadline:
        time.sleep(0.1)
    logged = ACCESS_LOG["path"].read_text()
    assert '"GET /ws HTTP/1.1" 101' in logged and SECRET not in logged and "key=" not in logged


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
    cron = (ROOT / "deploy" / "cron" / "dialerapi-health").read_text()
    line = [l for l in cron.splitlines() if l.startswith("* * * * *")][0]
    assert "/health" in line and "X-API-Key: $WS_SECRET" in line and "curl -fsS" in line


def test_the_shipped_nginx_site_passes_nginx_t(tmp_path):
    nginx = ensure_program("nginx", "nginx")
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
