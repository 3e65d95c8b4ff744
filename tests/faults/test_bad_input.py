"""Bad input (issue: fault tests): hypothesis fuzzing of every write endpoint, thousands of cases
with no 5xx; oversized and slowly sent bodies; malformed UTF-8; deeply nested JSON; header tricks
on auth. schemathesis at depth, every operation, is tests/faults/test_contract.py."""

import json
import socket
import threading
import time

import pytest
import requests
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import ENGINE_SECRET, SECRET

pytestmark = pytest.mark.faults
AUTH = {"X-API-Key": SECRET}
WRITES = ["/api/leads", "/api/master", "/api/send-callback-request", "/api/pending-callbacks",
          "/api/pending-dispositions", "/engine/claim", "/engine/bridge", "/engine/call-connected", "/engine/settle",
          "/engine/agent-state"]
FUZZ = settings(max_examples=600, deadline=None, suppress_health_check=list(HealthCheck))


@pytest.fixture
def unlimited_app(database_url):
    """The app with rate limits off, so the fuzzers reach validation and the database every time."""
    from conftest import make_app
    from dialerapi.plumbing.limits import limiter

    app = make_app(database_url, RATELIMIT_ENABLED=False)
    yield app
    limiter.enabled = True


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
                    lambda children: st.lists(children, max_size=5) | st.dictionaries(st.text(), children, max_size=5),
                    max_leaves=30)
LEAD_KEYS = ["oli_id", "phone_number", "client_name", "form_type", "priority_id", "callback_scheduled_at", "leads",
             "oliId", "scheduledAt", "ScheduledAt", "reason", "agentId", "extension", "callbackType", "remarks",
             "mode", "request_id", "agent_id", "outcome", "started_at", "call_type", "call_id", "wrapup_seconds"]


def key_for(path):
    return {"X-API-Key": ENGINE_SECRET} if path.startswith("/engine/") else AUTH


@pytest.mark.parametrize("path", WRITES)
def test_arbitrary_bytes_never_5xx(unlimited_app, path):
    client = unlimited_app.test_client()

    @FUZZ
    @given(st.binary(max_size=2000))
    def fuzz(body):
        status = client.post(path, data=body, headers=key_for(path)).status_code
        assert status < 500 and status in (201, 200, 202, 400, 404, 409)

    fuzz()


@pytest.mark.parametrize("path", WRITES)
def test_arbitrary_json_objects_never_5xx(unlimited_app, path):
    client = unlimited_app.test_client()

    @FUZZ
    @given(st.dictionaries(st.sampled_from(LEAD_KEYS) | st.text(max_size=10), JSON, max_size=8))
    def fuzz(body):
        response = client.post(path, json=body, headers=key_for(path))
        assert response.status_code < 500, response.get_data(as_text=True)
        assert response.get_json()["ok"] is (response.status_code < 300)

    fuzz()


# --- raw HTTP against gunicorn -----------------------------------------------------------------------

def raw(live_server, payload, read_timeout=10):
    host, port = live_server.base_url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=read_timeout) as sock:
        sock.sendall(payload)
        chunks = []
        try:
            while chunk := sock.recv(65536):
                chunks.append(chunk)
        except TimeoutError:
            pass
    return b"".join(chunks)


def test_a_slowly_sent_body_does_not_hold_up_others(live_server):
    body = json.dumps({"oli_id": "SLOW-1", "phone_number": "9876543210", "client_name": "Slow", "form_type": "f",
                       "priority_id": 2}).encode()
    host, port = live_server.base_url.removeprefix("http://").split(":")
    slow = socket.create_connection((host, int(port)), timeout=30)
    slow.sendall(f"POST /api/leads HTTP/1.1\r\nHost: x\r\nX-API-Key: {SECRET}\r\nContent-Type: application/json\r\n"
                 f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode())
    for byte in body[:20]:
        slow.sendall(bytes([byte]))
        time.sleep(0.05)
        started = time.monotonic()
        assert requests.get(live_server.url("/healthz"), timeout=5).status_code == 200
        assert time.monotonic() - started < 1, "other requests are served while one body trickles in"
    slow.sendall(body[20:])
    answer = b""
    while chunk := slow.recv(65536):
        answer += chunk
    slow.close()
    assert answer.startswith(b"HTTP/1.1 201")


def test_an_oversized_content_length_is_refused_before_the_body_arrives(live_server):
    answer = raw(live_server, f"POST /api/leads HTTP/1.1\r\nHost: x\r\nX-API-Key: {SECRET}\r\n"
                              f"Content-Length: {50 * 1024 * 1024}\r\nConnection: close\r\n\r\n".encode() + b"{" * 1000)
    assert answer.startswith(b"HTTP/1.1 413") and b'"payload_too_large"' in answer


@pytest.mark.parametrize("depth", [100, 900, 5000, 100000])
def test_deeply_nested_json(live_server, depth):
    body = '{"oli_id": ' + "[" * depth + "]" * depth + "}"
    response = requests.post(live_server.url("/api/leads"), data=body, headers=AUTH, timeout=30)
    assert response.status_code == 400 and response.json()["error"] in ("invalid_json", "validation_failed")


@pytest.mark.parametrize("body", [b'{"oli_id": "\xff\xfe"}', b'\xc3\x28', b'{"client_name": "\xed\xa0\x80"}'])
def test_malformed_utf8(live_server, body):
    response = requests.post(live_server.url("/api/leads"), data=body, headers=AUTH, timeout=10)
    assert response.status_code == 400 and response.json() == {"ok": False, "error": "invalid_json"}


@pytest.mark.parametrize("headers, status", [
    ([("Authorization", "Bearer")], 401),
    ([("Authorization", "Bearer ")], 401),
    ([("Authorization", f"Bearer {SECRET} extra")], 401),
    ([("Authorization", f"Bearer  {SECRET}  ")], 201),
    ([("X-API-Key", f" {SECRET} ")], 201),
    ([("X-API-Key", SECRET.upper())], 401),
    ([("Authorization", "Bearer wrong"), ("Authorization", f"Bearer {SECRET}")], 401),
    ([("X-API-Key", SECRET), ("X-API-Key", SECRET)], 401),
    ([("Authorization", "Bearer wrong"), ("Authorization", "Bearer also-wrong")], 401),
    ([("X-API-Key", "x" * 7000)], 401),
    ([("X-API-Key", SECRET + "\u00e9".encode().decode("latin-1"))], 401),
    ([("Authorization", f"Basic {SECRET}")], 401),
])
def test_header_tricks_on_auth(live_server, sql, headers, status):
    body = json.dumps({"oli_id": "HDR-1", "phone_number": "9876543210", "client_name": "H", "form_type": "f",
                       "priority_id": 2})
    head = "".join(f"{name}: {value}\r\n" for name, value in headers)
    answer = raw(live_server, (f"POST /api/leads HTTP/1.1\r\nHost: x\r\n{head}Content-Type: application/json\r\n"
                               f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n{body}").encode("latin-1"))
    assert answer.startswith(f"HTTP/1.1 {status}".encode()), answer[:200]
    if status == 401:
        assert answer.endswith(b'{"ok":false,"error":"unauthorized"}\n')


def test_concurrent_fuzzing_through_gunicorn_keeps_answering(live_server):
    errors = []

    def hammer(seed):
        session = requests.Session()
        for n in range(60):
            payload = bytes((seed * 31 + n * 17 + i) % 256 for i in range(n * 7))
            response = session.post(live_server.url(WRITES[n % len(WRITES)]), data=payload, headers=AUTH, timeout=10)
            if response.status_code >= 500:
                errors.append(response.status_code)

    threads = [threading.Thread(target=hammer, args=(s,)) for s in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
