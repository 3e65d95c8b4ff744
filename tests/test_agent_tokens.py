"""Each caller's credential opens what it needs and nothing else (issue #28; decisions.md D3, D9;
lead-intake-api.md "Authentication"): agent tokens, the monitor's read-only key, the service key
kept out of URLs, browser origins, and key rotation. Through a real gunicorn where the rule lives
in the handshake or the HTTP layer; in-process where the service clock must move (D2)."""

import json
import threading
import time
from datetime import timedelta

import pytest
import requests

from conftest import (DEFAULT_NOW, ENGINE_SECRET, MONITOR_SECRET, SECRET, cli, make_app, mint_token, set_clock,
                      start_gunicorn, utc_text)
from dialerapi.web import agent_tokens
from dialerapi.plumbing.config import ConfigError, load
from wsclient import Client, ConnectionClosed

AUTH = {"X-API-Key": SECRET}
LEAD = {"oli_id": "CRM-2026-000042", "phone_number": "9876543210", "client_name": "Meena Sundaram",
        "form_type": "home_loan", "priority_id": 2}
CRM_PATHS = [
    ("POST", "/api/leads", LEAD), ("POST", "/api/master", LEAD),
    ("POST", "/api/send-callback-request", {"oliId": "CRM-2026-000042", "scheduledAt": "2026-11-23 11:30:00"}),
    ("POST", "/api/pending-callbacks", {"oliId": "CRM-2026-000042", "scheduledAt": "2026-11-23 11:30:00"}),
    ("POST", "/api/pending-dispositions", {"oliId": "CRM-2026-000042", "reason": "DND"}),
    ("POST", "/api/agent-tokens", {"agentId": 501}),
]
MONITOR_PATHS = [("GET", "/health", None), ("GET", "/api/health", None), ("GET", "/metrics", None)]
ENGINE_PATHS = [("POST", f"/engine/{name}", {}) for name in ("claim", "bridge", "call-connected", "settle", "agent-state")]
PUBLIC_PATHS = [("GET", "/healthz", None), ("GET", "/api/pause-reasons", None), ("GET", "/openapi.json", None),
                ("GET", "/panel/", None), ("GET", "/panel/panel.js", None), ("GET", "/docs/", None),
                ("GET", "/favicon.ico", None)]


@pytest.fixture
def floor(sql):
    sql("INSERT INTO sales_agents (id, extension, name) VALUES (501, '4501', 'Kavya Iyer'), (502, '4502', 'Arun Raja')")


def call(server, method, path, body=None, headers=None):
    return requests.request(method, server.url(path), json=body, headers=headers or {}, timeout=10)


def bearer(token):
    return {"Authorization": f"Bearer {token}"}


def ws(server, query, headers=None):
    return Client.connect(server.base_url.replace("http://", "ws://") + "/ws?" + query, headers=headers or {})


def first_frames(client):
    """The frames the server sends before it waits: [event or reason..., close code]."""
    got = []
    try:
        while len(got) < 2:
            raw = client.receive(timeout=5)
            if raw is None:
                break
            frame = json.loads(raw)
            got.append(frame["data"]["reason"] if frame["event"] == "server_error" else frame["event"])
        if got and got[0] not in ("dialer.outbound_blocked",):
            client.receive(timeout=5)
    except ConnectionClosed as closed:
        got.append(closed.reason)
    finally:
        try:
            client.close()
        except ConnectionClosed:
            pass
    return got


def refused(client):
    frames = first_frames(client)
    assert len(frames) == 2 and frames[1] == 1008, frames
    return frames[0]


STATE = ["dialer.outbound_blocked", "dialer.missed_activities"]


# --- what a token opens -------------------------------------------------------------------------


@pytest.mark.parametrize("method, path, body", CRM_PATHS + MONITOR_PATHS + ENGINE_PATHS)
def test_a_token_opens_no_crm_monitor_or_engine_path(live_server, floor, method, path, body):
    token = mint_token(live_server.base_url, 501)
    answer = call(live_server, method, path, body, bearer(token))
    assert (answer.status_code, answer.json()) == (403, {"ok": False, "error": "forbidden"})


@pytest.mark.parametrize("method, path, body", PUBLIC_PATHS)
def test_a_token_leaves_the_public_paths_open(live_server, floor, method, path, body):
    assert call(live_server, method, path, body, bearer(mint_token(live_server.base_url, 501))).status_code == 200


@pytest.mark.parametrize("query, status", [
    ("", 200), ("?agentId=501", 200), ("?extension=4501", 200), ("?agentId=502", 403), ("?extension=4502", 403),
])
def test_a_token_reads_its_own_agents_missed_activities_only(live_server, floor, query, status):
    answer = call(live_server, "GET", "/api/missed-activities" + query, headers=bearer(mint_token(live_server.base_url, 501)))
    assert answer.status_code == status, answer.text
    assert answer.json()["agent_id" if status == 200 else "error"] == (501 if status == 200 else "forbidden")


@pytest.mark.parametrize("query, expected", [
    ("token={token}", STATE),
    ("token={token}&agentId=501", STATE),
    ("token={token}&extension=4501", STATE),
    ("token={token}&agentId=502", ["agent_mismatch", 1008]),
    ("token={token}&extension=4502", ["agent_mismatch", 1008]),
])
def test_a_token_opens_its_own_agents_socket_only(live_server, floor, query, expected):
    token = mint_token(live_server.base_url, 501)
    assert first_frames(ws(live_server, query.format(token=token))) == expected


def test_the_socket_serves_the_tokens_agent(live_server, floor, sql):
    client = ws(live_server, "token=" + mint_token(live_server.base_url, extension="4502"))
    try:
        first = json.loads(client.receive(timeout=5))
        assert first == {"event": "dialer.outbound_blocked", "data": {"agent_id": 502, "blocked": False}}
    finally:
        client.close()


# --- tokens that open nothing -------------------------------------------------------------------


def forged(payload_token):
    """The same payload signed with a key the service never had."""
    return agent_tokens.mint({"WS_SECRET": "a-key-the-service-never-had", "AGENT_TOKEN_SECONDS": 3600}, 501)[0]


def expired(_token):
    set_clock(DEFAULT_NOW - timedelta(days=2))
    try:
        return agent_tokens.mint({"WS_SECRET": SECRET, "AGENT_TOKEN_SECONDS": 3600}, 501)[0]
    finally:
        set_clock(DEFAULT_NOW)


def tampered(token):
    """The payload changed to name agent 502, the signature kept."""
    payload, _, signature = token.partition(".")
    other = agent_tokens.mint({"WS_SECRET": SECRET, "AGENT_TOKEN_SECONDS": 3600}, 502)[0].partition(".")[0]
    assert other != payload
    return f"{other}.{signature}"


@pytest.mark.parametrize("spoil, reason", [
    (expired, "token_expired"), (tampered, "invalid_token"), (forged, "invalid_token"),
    (lambda token: token[:-2] + ("AA" if token[-2:] != "AA" else "BB"), "invalid_token"),
    (lambda token: "x" * 300 + "." + token, "invalid_token"),
    (lambda token: "not.a-token", "invalid_token"),
])
def test_a_bad_token_is_refused_with_its_reason(live_server, floor, spoil, reason):
    token = spoil(mint_token(live_server.base_url, 501))
    answer = call(live_server, "GET", "/api/missed-activities", headers=bearer(token))
    assert (answer.status_code, answer.json()) == (401, {"ok": False, "error": "unauthorized", "reason": reason})
    assert refused(ws(live_server, f"token={token}")) == reason


def test_a_removed_agents_token_opens_nothing(live_server, floor, sql):
    token = mint_token(live_server.base_url, 501)
    sql("DELETE FROM sales_agents WHERE id = 501")
    assert refused(ws(live_server, f"token={token}")) == "unknown_agent"
    answer = call(live_server, "GET", "/api/missed-activities", headers=bearer(token))
    assert (answer.status_code, answer.json()["error"]) == (404, "unknown_agent")


def test_a_token_expires_on_the_service_clock(client, floor, frozen_clock):
    frozen_clock(DEFAULT_NOW)
    minted = client.post("/api/agent-tokens", json={"agentId": 501, "lifetimeSeconds": 60}, headers=AUTH).get_json()
    assert minted["expires_in"] == 60
    frozen_clock(DEFAULT_NOW + timedelta(seconds=59))
    assert client.get("/api/missed-activities", headers=bearer(minted["token"])).status_code == 200
    frozen_clock(DEFAULT_NOW + timedelta(seconds=60))
    answer = client.get("/api/missed-activities", headers=bearer(minted["token"]))
    assert (answer.status_code, answer.get_json()["reason"]) == (401, "token_expired")


# --- minting ------------------------------------------------------------------------------------


def test_minting_answers_the_token_and_its_expiry(client, floor, frozen_clock):
    frozen_clock(DEFAULT_NOW)
    answer = client.post("/api/agent-tokens", json={"extension": "4501"}, headers=AUTH)
    body = answer.get_json()
    assert answer.status_code == 201 and body["ok"] is True and body["agent_id"] == 501
    assert body["expires_in"] == 43200
    assert agent_tokens.verify({"WS_SECRET": SECRET}, body["token"]) == 501
    assert body["expires_at"] == utc_text(DEFAULT_NOW + timedelta(hours=12))


@pytest.mark.parametrize("body, status, error, field", [
    ({"agentId": 999}, 404, "unknown_agent", None),
    ({"extension": "4999"}, 404, "unknown_extension", None),
    ({}, 400, "validation_failed", "agentId"),
    ({"agentId": 501, "extension": "4501"}, 400, "validation_failed", "agentId"),
    ({"agentId": 501, "lifetimeSeconds": 86401}, 400, "validation_failed", "lifetimeSeconds"),
    ({"agentId": 501, "lifetimeSeconds": 0}, 400, "validation_failed", "lifetimeSeconds"),
    ({"agentId": 501, "lifetimeSeconds": "600"}, 400, "validation_failed", "lifetimeSeconds"),
    ({"agentId": 501, "role": "crm"}, 400, "validation_failed", "role"),
])
def test_minting_refuses_what_it_cannot_mint(client, floor, body, status, error, field):
    answer = client.post("/api/agent-tokens", json=body, headers=AUTH)
    assert (answer.status_code, answer.get_json()["error"]) == (status, error)
    if field:
        assert field in {detail["field"] for detail in answer.get_json()["details"]}


def test_one_apps_lifetime_limit_never_sticks_to_the_schema(database_url, client, floor):
    """AgentTokenRequest adds AGENT_TOKEN_MAX_SECONDS per request: the Range must not pile up on the
    class's field, or every later request (and the OpenAPI document) would carry the smallest limit."""
    short = make_app(database_url, AGENT_TOKEN_SECONDS=300, AGENT_TOKEN_MAX_SECONDS=600).test_client()
    for _ in range(3):
        refused = short.post("/api/agent-tokens", json={"agentId": 501, "lifetimeSeconds": 3600}, headers=AUTH)
        assert refused.status_code == 400
    minted = client.post("/api/agent-tokens", json={"agentId": 501, "lifetimeSeconds": 3600}, headers=AUTH)
    assert minted.status_code == 201 and minted.get_json()["expires_in"] == 3600
    document = client.get("/openapi.json").get_json()
    lifetime = document["components"]["schemas"]["AgentTokenRequest"]["properties"]["lifetimeSeconds"]
    # The document says the default AGENT_TOKEN_MAX_SECONDS (issue #66), never one app's 600.
    assert (lifetime["type"], lifetime["minimum"], lifetime["maximum"]) == ("integer", 1, 86400)


@pytest.mark.parametrize("key", [ENGINE_SECRET, MONITOR_SECRET, "wrong"])
def test_only_the_crm_key_mints(client, floor, key):
    answer = client.post("/api/agent-tokens", json={"agentId": 501}, headers={"X-API-Key": key})
    assert (answer.status_code, answer.get_json()) == (401, {"ok": False, "error": "unauthorized"})


@pytest.mark.long
def test_the_cli_mints_a_token_the_service_accepts(database_url, floor, client):
    result = cli(database_url, "agents", "token", "501", "--lifetime", "600")
    assert result.returncode == 0, result.stderr
    token = result.stdout.strip()
    assert "expires" in result.stderr
    assert client.get("/api/missed-activities", headers=bearer(token)).get_json()["agent_id"] == 501
    too_long = cli(database_url, "agents", "token", "501", "--lifetime", "86401")
    assert too_long.returncode == 2 and "AGENT_TOKEN_MAX_SECONDS" in too_long.stderr
    unknown = cli(database_url, "agents", "token", "999")
    assert unknown.returncode == 1 and "no agent has id 999" in unknown.stderr


# --- the monitor's key --------------------------------------------------------------------------


@pytest.mark.parametrize("method, path, body", MONITOR_PATHS)
def test_the_monitor_key_opens_health_and_metrics(live_server, method, path, body):
    assert call(live_server, method, path, headers={"X-API-Key": MONITOR_SECRET}).status_code in (200, 503)
    assert call(live_server, method, path, headers=AUTH).status_code in (200, 503)


@pytest.mark.parametrize("method, path, body", CRM_PATHS + ENGINE_PATHS + [("GET", "/api/missed-activities?agentId=501", None)])
def test_the_monitor_key_opens_nothing_else(live_server, floor, method, path, body):
    answer = call(live_server, method, path, body, {"X-API-Key": MONITOR_SECRET})
    assert (answer.status_code, answer.json()) == (401, {"ok": False, "error": "unauthorized"})


# --- the service key in a URL, and origins -------------------------------------------------------


@pytest.fixture(scope="module")
def migration_server(database_url, tmp_path_factory):
    """A server in a migration window: the key in the URL allowed, and one allowed desktop origin."""
    log = tmp_path_factory.mktemp("migration") / "gunicorn.log"
    server = start_gunicorn(database_url, log, workers=1, WS_ALLOW_KEY_IN_URL="true",
                            WS_ALLOWED_ORIGINS="https://desk.example.com")
    yield server
    server.stop()


def test_a_key_in_the_url_works_in_a_migration_window_with_a_warning(migration_server, floor):
    assert first_frames(ws(migration_server, f"agentId=501&key={SECRET}")) == STATE
    assert "WS_SECRET in a /ws URL" in migration_server.log.read_text()


def test_a_foreign_origin_is_refused(live_server, floor):
    token = mint_token(live_server.base_url, 501)
    assert refused(ws(live_server, f"token={token}", {"Origin": "https://evil.example"})) == "origin_not_allowed"
    assert refused(ws(live_server, "agentId=501", {**AUTH, "Origin": "http://localhost:1"})) == "origin_not_allowed"


def test_the_services_own_origin_is_allowed_by_default(live_server, floor):
    token = mint_token(live_server.base_url, 501)
    assert first_frames(ws(live_server, f"token={token}", {"Origin": live_server.base_url})) == STATE


def test_an_allow_list_replaces_the_services_own_origin(migration_server, floor):
    token = mint_token(migration_server.base_url, 501)
    assert first_frames(ws(migration_server, f"token={token}", {"Origin": "https://desk.example.com"})) == STATE
    assert refused(ws(migration_server, f"token={token}", {"Origin": migration_server.base_url})) == "origin_not_allowed"


# --- rotation -----------------------------------------------------------------------------------


def test_rotating_every_key_keeps_the_old_one_until_it_is_removed(database_url, floor, frozen_clock):
    frozen_clock(DEFAULT_NOW)
    old = {"WS_SECRET": "old-crm-key-1234567890", "ENGINE_SECRET": "old-engine-key-1234567890",
           "MONITOR_SECRET": "old-monitor-key-1234567890", "AGENT_TOKEN_KEY": "old-token-key-1234567890"}
    new = {"WS_SECRET": "new-crm-key-1234567890", "ENGINE_SECRET": "new-engine-key-1234567890",
           "MONITOR_SECRET": "new-monitor-key-1234567890", "AGENT_TOKEN_KEY": "new-token-key-1234567890"}
    before = make_app(database_url, **old).test_client()
    old_token = before.post("/api/agent-tokens", json={"agentId": 501}, headers={"X-API-Key": old["WS_SECRET"]}).get_json()["token"]
    during = make_app(database_url, **new, **{f"{name}_PREVIOUS": value for name, value in old.items()}).test_client()
    after = make_app(database_url, **new).test_client()
    checks = [("/api/missed-activities?agentId=501", "WS_SECRET"), ("/health", "MONITOR_SECRET")]
    for app_client, opens_old in ((during, True), (after, False)):
        for path, name in checks:
            assert app_client.get(path, headers={"X-API-Key": new[name]}).status_code in (200, 503)
            assert (app_client.get(path, headers={"X-API-Key": old[name]}).status_code in (200, 503)) is opens_old
        engine = app_client.post("/engine/agent-state", json={"agent_id": 501, "ami_idle": True},
                                 headers={"X-API-Key": old["ENGINE_SECRET"]})
        assert (engine.status_code != 401) is opens_old, engine.get_json()
        answer = app_client.get("/api/missed-activities", headers=bearer(old_token))
        assert answer.status_code == (200 if opens_old else 401)
        new_token = app_client.post("/api/agent-tokens", json={"agentId": 501}, headers={"X-API-Key": new["WS_SECRET"]}).get_json()["token"]
        assert app_client.get("/api/missed-activities", headers=bearer(new_token)).status_code == 200
    assert after.get("/api/missed-activities", headers=bearer(old_token)).get_json()["reason"] == "invalid_token"


@pytest.mark.parametrize("settings, message", [
    ({"MONITOR_SECRET": SECRET}, "MONITOR_SECRET must differ from WS_SECRET"),
    ({"WS_SECRET_PREVIOUS": ENGINE_SECRET}, "must differ from"),
    ({"AGENT_TOKEN_SECONDS": "90000"}, "AGENT_TOKEN_SECONDS must not exceed AGENT_TOKEN_MAX_SECONDS"),
    ({"WS_ALLOWED_ORIGINS": "desk.example.com"}, "WS_ALLOWED_ORIGINS"),
    ({"WS_ALLOWED_ORIGINS": "https://desk.example.com/panel"}, "WS_ALLOWED_ORIGINS"),
])
def test_settings_that_would_mix_callers_or_cannot_work_are_refused(settings, message):
    with pytest.raises(ConfigError, match=message):
        load({"DATABASE_URL": "mysql://t@127.0.0.1/t", "WS_SECRET": SECRET, "ENGINE_SECRET": ENGINE_SECRET, **settings})


# --- a crowd ------------------------------------------------------------------------------------


def test_sixteen_agents_mint_and_connect_at_once(live_server, sql):
    agents = list(range(601, 617))
    for agent_id in agents:
        sql("INSERT INTO sales_agents (id, extension, name) VALUES (%s, %s, %s)", agent_id, str(4000 + agent_id), f"Agent {agent_id}")
    start = threading.Barrier(len(agents))
    seen, clients = {}, []
    lock = threading.Lock()

    def agent(agent_id):
        start.wait()
        token = mint_token(live_server.base_url, agent_id)
        client = ws(live_server, f"token={token}")
        with lock:
            clients.append(client)
        first = json.loads(client.receive(timeout=10))
        own = requests.get(live_server.url("/api/missed-activities"), headers=bearer(token), timeout=10).json()
        other = requests.get(live_server.url(f"/api/missed-activities?agentId={1217 - agent_id}"),
                             headers=bearer(token), timeout=10)
        seen[agent_id] = (first["data"]["agent_id"], own["agent_id"], other.status_code)

    threads = [threading.Thread(target=agent, args=(agent_id,)) for agent_id in agents]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    try:
        assert seen == {agent_id: (agent_id, agent_id, 403) for agent_id in agents}
        active = sql("SELECT id FROM sales_agents WHERE panel_active = 1 ORDER BY id")
        assert [row["id"] for row in active] == agents
    finally:
        for client in clients:
            client.close()
    deadline = time.monotonic() + 5
    while sql.one("SELECT COUNT(*) AS n FROM sales_agents WHERE panel_active = 1")["n"]:
        assert time.monotonic() < deadline, "the closed panels stayed active"
        time.sleep(0.05)


def test_the_panel_is_served_with_its_own_policy_and_nothing_else(live_server):
    page = call(live_server, "GET", "/panel/")
    assert page.status_code == 200 and page.headers["Content-Type"].startswith("text/html")
    assert "default-src 'self'" in page.headers["Content-Security-Policy"]
    assert '<script src="panel.js"></script>' in page.text
    moved = requests.get(live_server.url("/panel"), allow_redirects=False, timeout=10)
    assert (moved.status_code, moved.headers["Location"]) == (308, "/panel/")
    for path in ("/panel/../auth.py", "/panel/index.htm", "/panel/__init__.py"):
        answer = call(live_server, "GET", path)
        assert answer.status_code in (401, 404), (path, answer.status_code)
        assert "import" not in answer.text
