"""Rate limits: lead-intake-api.md "Limits"; decisions.md D3 (429 body, Retry-After) and D5 (one
counter shared by the three CRM action endpoints, client IP, TRUSTED_PROXY_COUNT)."""

import http.client
import json
import os
import subprocess
import time

import pytest
import requests

import faketime
from conftest import SECRET, require_program, free_port, make_app, start_gunicorn

ENDPOINTS = (
    ("/api/send-callback-request", {"oliId": "ghost", "scheduledAt": "2026-11-22 10:00"}),
    ("/api/pending-callbacks", {"oliId": "ghost", "scheduledAt": "2030-11-22 10:00"}),
    ("/api/pending-dispositions", {"oliId": "ghost", "reason": "DND"}),
)


def post(client, n, auth, ip="10.1.1.1", headers=None):
    path, body = ENDPOINTS[n % 3]
    return client.post(path, json=body, headers={**auth, **(headers or {})}, environ_base={"REMOTE_ADDR": ip})


def test_the_three_endpoints_share_one_counter_of_120_per_ip(client, auth):
    statuses = [post(client, n, auth).status_code for n in range(120)]
    assert set(statuses) == {404}
    for n in range(3):
        response = post(client, n, auth)
        assert response.status_code == 429
        assert response.get_json() == {"ok": False, "error": "rate_limited"}
        assert 0 < int(response.headers["Retry-After"]) <= 60
    assert post(client, 0, auth, ip="10.2.2.2").status_code == 404, "another client IP has its own counter"


def test_a_simulator_run_in_the_same_process_leaves_the_limits_on(database_url, client, auth):
    """The simulator's app runs without limits (its day is compressed), and flask-limiter keeps that
    switch on its one extension object: before the run gave it back, every app of the process served
    unlimited after a run (found when a parallel worker ran test_simulate before this module)."""
    from dialerapi import simulate as sim

    sim.replicate(database_url, sim.load_scenario(None, agents=1, leads=5, hours=0.1, replications=1, seed=1))
    assert [post(client, n, auth).status_code for n in range(121)][-1] == 429


def test_lead_push_is_not_limited(client, auth):
    for n in range(120):
        post(client, n, auth)
    lead = {"oli_id": "X", "phone_number": "9876543210", "client_name": "A", "form_type": "f", "priority_id": 2}
    for _ in range(130):
        response = client.post("/api/leads", json=lead, headers=auth, environ_base={"REMOTE_ADDR": "10.1.1.1"})
        assert response.status_code == 201


def test_forwarded_for_is_ignored_without_trusted_proxies(client, auth):
    for n in range(120):
        post(client, n, auth, headers={"X-Forwarded-For": f"192.0.2.{n}"})
    assert post(client, 0, auth, headers={"X-Forwarded-For": "192.0.2.250"}).status_code == 429


def test_trusted_proxy_count_takes_the_client_from_x_forwarded_for(database_url, auth):
    from dialerapi.plumbing.limits import limiter

    client = make_app(database_url, TRUSTED_PROXY_COUNT=1).test_client()
    limiter.reset()
    proxy = "127.0.0.1"
    for n in range(120):
        assert post(client, n, auth, ip=proxy, headers={"X-Forwarded-For": "spoofed, 198.51.100.7"}).status_code == 404
    assert post(client, 0, auth, ip=proxy, headers={"X-Forwarded-For": "198.51.100.7"}).status_code == 429
    # Only the entry the trusted proxy added counts; what the client wrote before it does not.
    assert post(client, 0, auth, ip=proxy, headers={"X-Forwarded-For": "198.51.100.7, 198.51.100.8"}).status_code == 404



def test_forwarded_for_from_a_peer_that_is_not_a_trusted_proxy_is_ignored(database_url, auth):
    """Issue #17: with TRUSTED_PROXY_COUNT=1, a client reaching the service directly (not through a
    TRUSTED_PROXIES address) wrote a new X-Forwarded-For on each request and was never limited."""
    from dialerapi.plumbing.limits import limiter

    client = make_app(database_url, TRUSTED_PROXY_COUNT=1, TRUSTED_PROXIES="127.0.0.1,10.0.0.0/8").test_client()
    limiter.reset()
    for n in range(120):
        assert post(client, n, auth, ip="198.51.100.20", headers={"X-Forwarded-For": f"192.0.2.{n}"}).status_code == 404
    assert post(client, 0, auth, ip="198.51.100.20", headers={"X-Forwarded-For": "192.0.2.250"}).status_code == 429
    assert post(client, 0, auth, ip="10.1.2.3", headers={"X-Forwarded-For": "192.0.2.250"}).status_code == 404, \
        "a proxy in a trusted network still names its client"


def test_forwarded_for_sent_straight_to_gunicorn_does_not_bypass_the_limit(database_url, auth, tmp_path):
    """The attack as it was run: gunicorn reached from another address than the proxy's, a random
    X-Forwarded-For on every request. 127.0.0.2 is loopback, but not a TRUSTED_PROXIES address."""
    server = start_gunicorn(database_url, tmp_path / "gunicorn.log", workers=1, TRUSTED_PROXY_COUNT="1")
    try:
        port = int(server.base_url.rsplit(":", 1)[1])
        body = json.dumps({"oliId": "ghost", "reason": "DND"})
        statuses = []
        for n in range(121):
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10, source_address=("127.0.0.2", 0))
            conn.request("POST", "/api/pending-dispositions", body=body,
                         headers={**auth, "Content-Type": "application/json", "X-Forwarded-For": f"203.0.113.{n}"})
            statuses.append(conn.getresponse().status)
            conn.close()
        assert statuses[:120] == [404] * 120 and statuses[120] == 429
    finally:
        server.stop()


# --- one counter across processes (Redis) ---------------------------------------------------------

@pytest.fixture(scope="module")
def redis_url(tmp_path_factory):
    port = free_port()
    workdir = tmp_path_factory.mktemp("redis")
    # Redis keeps the real clock under `make test-clock`: it only times the counters' expiry.
    process = subprocess.Popen(
        [require_program("redis-server", "redis-server"), "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
         "--dir", str(workdir)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=faketime.real_clock(os.environ),
    )
    deadline = time.monotonic() + 10
    import redis

    try:
        while True:
            try:
                redis.Redis(port=port).ping()
                break
            except redis.ConnectionError:
                if time.monotonic() > deadline:
                    pytest.fail("redis-server did not start")
                time.sleep(0.05)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        process.terminate()
        process.wait(timeout=10)


@pytest.mark.long
def test_two_processes_share_one_redis_counter(database_url, redis_url, tmp_path):
    servers = [start_gunicorn(database_url, tmp_path / f"gunicorn{n}.log", workers=1, RATELIMIT_STORAGE_URI=redis_url)
               for n in range(2)]
    try:
        session = requests.Session()
        statuses = []
        for n in range(120):
            path, body = ENDPOINTS[n % 3]
            statuses.append(session.post(servers[n % 2].url(path), json=body, headers={"X-API-Key": SECRET}).status_code)
        assert set(statuses) == {404}
        for server in servers:
            response = session.post(server.url(ENDPOINTS[0][0]), json=ENDPOINTS[0][1], headers={"X-API-Key": SECRET})
            assert response.status_code == 429 and response.json()["error"] == "rate_limited"
            assert int(response.headers["Retry-After"]) > 0
    finally:
        for server in servers:
            server.stop()
