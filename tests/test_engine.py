"""The engine API, /engine/ (issue: claim, bridge, call-connected and settle over HTTP for a dialing
engine in any language): its own key, the rules of claims/dialstate/agents unchanged, idempotent
retries, and whole calls played by a non-Python client (curl) through a real gunicorn."""

import subprocess
import threading
from datetime import datetime, timedelta

import pytest
import requests

from conftest import DEFAULT_NOW, ENGINE_SECRET, ROOT, SECRET, make_app, shell_env, start_gunicorn
from dialerapi.plumbing import config
from dialerapi.plumbing.db import queries
from dialerapi.rules.dialing import engine
from dialerapi.upkeep import jobs

NOW = DEFAULT_NOW
ENGINE_PATHS = ("/engine/claim", "/engine/bridge", "/engine/call-connected", "/engine/settle", "/engine/agent-state")


@pytest.fixture
def call(client, engine_auth):
    """POST to /engine/<operation> with the engine key; returns (status, body)."""

    def post(operation, body, headers=None):
        response = client.post(f"/engine/{operation}", json=body, headers=headers or engine_auth)
        return response.status_code, response.get_json()

    return post


@pytest.fixture
def floor(sql, new_lead):
    """Agent 501 (home_loan), available; leads A and B due (Pending)."""
    sql("INSERT INTO sales_agents (id, extension, name, panel_active, ami_idle) VALUES (501, '4501', 'Kavya', 1, 1)")
    sql("INSERT INTO sales_agent_skills (agent_id, form_type) VALUES (501, 'home_loan')")
    new_lead("A", phone_number="+91 98765 43210")
    new_lead("B")


def claim(call, request_id="r-1", **body):
    return call("claim", {"mode": "progressive", "agent_id": 501, "request_id": request_id, **body})


def live(sql):
    return sorted(r["oli_id"] for r in sql("SELECT oli_id FROM sales_master WHERE dial_status = 'Calling'"
                                          " AND isReserved = 1"))


# --- keys ----------------------------------------------------------------------------------------

def test_the_engine_key_opens_only_the_engine_paths(client, floor, auth, engine_auth):
    for path in ENGINE_PATHS:
        assert client.post(path, json={}, headers=auth).get_json() == {"ok": False, "error": "unauthorized"}, path
        assert client.post(path, json={}, headers=engine_auth).status_code == 400, path
    lead = {"oli_id": "X", "phone_number": "9876543210", "client_name": "X", "form_type": "f", "priority_id": 2}
    assert client.post("/api/leads", json=lead, headers=engine_auth).status_code == 401
    assert client.get("/health", headers=engine_auth).status_code == 401
    assert client.post("/engine/nothing", json={}, headers=engine_auth).get_json()["error"] == "not_found"
    assert client.post("/engine/nothing", json={}, headers=auth).status_code == 401
    assert client.get("/engine/claim", headers=engine_auth).get_json()["error"] == "method_not_allowed"


@pytest.mark.parametrize("header", ["Authorization", "X-API-Key", "X-Access-Key"])
def test_the_engine_key_in_any_of_the_three_headers(client, floor, header):
    value = f"Bearer {ENGINE_SECRET}" if header == "Authorization" else ENGINE_SECRET
    body = {"mode": "progressive", "agent_id": 501, "request_id": header}
    assert client.post("/engine/claim", json=body, headers={header: value}).status_code == 200


def test_without_an_engine_secret_nothing_opens_the_engine_paths(database_url, floor, auth):
    closed = make_app(database_url, ENGINE_SECRET="").test_client()
    for headers in (auth, {"Authorization": "Bearer "}, {}):
        assert closed.post("/engine/claim", json={}, headers=headers).status_code == 401


def test_the_engine_secret_must_differ_from_the_crm_secret():
    with pytest.raises(config.ConfigError, match="^ENGINE_SECRET must differ from WS_SECRET"):
        config.load({"DATABASE_URL": "mysql://u@h/d", "WS_SECRET": SECRET, "ENGINE_SECRET": SECRET})


# --- a whole progressive call ------------------------------------------------------------------------

@pytest.mark.clock
def test_a_progressive_call(call, floor, sql, client, auth):
    status, state = call("agent-state", {"agent_id": 501, "panel_active": True, "ami_idle": True})
    assert status == 200 and state["agent"]["available"] is True and state["agent"]["unavailable_reason"] is None
    status, claimed = claim(call)
    lead = claimed["lead"]
    assert status == 200 and lead["oli_id"] == "A" and lead["dial_status"] == "Calling" and lead["isReserved"] == 1
    assert lead["previous_dial_status"] == "Pending" and lead["lead_id"] == sql.lead("A")["id"]
    assert lead["phone_number"] == "919876543210" and lead["form_type"] == "home_loan"
    call("agent-state", {"agent_id": 501, "ami_idle": False})
    status, connected = call("call-connected", {"oli_id": "A", "agent_id": 501, "request_id": "m-1"})
    assert status == 200
    activity = sql.one("SELECT * FROM sales_missed_activities WHERE id = %s", connected["missed_activity_id"])
    assert (activity["agent_id"], activity["oli_id"], activity["ended_at"]) == (501, "A", None)
    # The CRM files a callback while the call is live: held, then applied at settle.
    held = client.post("/api/pending-callbacks", json={"oliId": "A", "scheduledAt": "2026-11-23 11:30"}, headers=auth)
    assert held.status_code == 202
    status, settled = call("settle", {"oli_id": "A", "outcome": "answered", "agent_id": 501, "call_id": "c-1",
                                      "started_at": "2026-11-21 09:59:40", "hangup_by": "customer", "hangup_cause": "16"})
    assert status == 200 and settled["ok"] is True
    assert settled["lead"]["dial_status"] == "Callback" and settled["lead"]["callback_scheduled_at"] == "2026-11-23 11:30:00"
    assert settled["applied"] == {"id": held.get_json()["pending"]["id"], "action": "callback",
                                  "scheduled_at": "2026-11-23 11:30:00", "reason": None}
    attempt = sql.one("SELECT * FROM sales_call_attempts")
    assert (attempt["agent_id"], attempt["call_type"], attempt["result"], attempt["hangup_by"]) == (
        501, "outbound", "ANSWER", "customer")
    assert attempt["started_at"] == datetime(2026, 11, 21, 9, 59, 40) and attempt["ended_at"] == NOW
    # The CRM's callback cleared the missed activity before the hangup: there is no grace window to start.
    activity = sql.one("SELECT ended_at, due_at, cleared_by FROM sales_missed_activities")
    assert activity == {"ended_at": None, "due_at": None, "cleared_by": "callback"}
    status, state = call("agent-state", {"agent_id": 501, "ami_idle": True, "wrapup_seconds": 45})
    assert state["agent"]["wrapup_until"] == "2026-11-21 10:00:45" and state["agent"]["unavailable_reason"] == "wrap_up"
    assert claim(call, request_id="r-2") == (409, {"ok": False, "error": "not_claimable", "reason": "wrap_up"})


@pytest.mark.parametrize("outcome, status_after", [
    ("no_answer", "Not Connected"), ("busy", "Not Connected"), ("congestion", "Not Connected"), ("rejected", "Rejected"),
    ("cancelled", "Rejected"),
    ("abandoned", "Abandoned"), ("originate_failed", "Pending"),
])
def test_every_outcome_of_the_state_table(call, floor, sql, outcome, status_after):
    claim(call)
    status, settled = call("settle", {"oli_id": "A", "outcome": outcome, "started_at": "2026-11-21 09:59:50"})
    assert status == 200 and settled["lead"]["dial_status"] == sql.lead("A")["dial_status"] == status_after
    assert settled["lead"]["isReserved"] == 0 and settled["applied"] is None


# --- a whole predictive call ---------------------------------------------------------------------------

def test_a_predictive_call(call, floor, sql):
    status, claimed = call("claim", {"mode": "predictive", "request_id": "p-1"})
    assert status == 200 and claimed["lead"]["oli_id"] == "A"
    assert call("bridge", {"oli_id": "A", "request_id": "b-1"}) == (200, {"ok": True, "oli_id": "A", "agent_id": 501})
    assert sql.one("SELECT ami_idle FROM sales_agents WHERE id = 501")["ami_idle"] == 0, "the agent is taken"
    call("call-connected", {"oli_id": "A", "agent_id": 501, "request_id": "m-1"})
    status, settled = call("settle", {"oli_id": "A", "outcome": "answered", "agent_id": 501,
                                      "started_at": "2026-11-21 09:59:30"})
    assert status == 200 and settled["lead"]["dial_status"] == "Received"


@pytest.mark.clock
def test_a_predictive_call_holds_and_ends_abandoned_when_nobody_is_free(call, floor, sql):
    assert call("claim", {"mode": "predictive", "request_id": "p-1"})[1]["lead"]["oli_id"] == "A"
    call("agent-state", {"agent_id": 501, "ami_idle": False})
    assert call("bridge", {"oli_id": "A", "request_id": "b-1"}) == (200, {"ok": True, "oli_id": "A", "agent_id": None})
    status, settled = call("settle", {"oli_id": "A", "outcome": "abandoned", "started_at": "2026-11-21 09:59:00"})
    assert settled["lead"]["dial_status"] == "Abandoned" and settled["lead"]["next_retry_at"] == "2026-11-21 11:00:00"


def test_a_dial_ahead_claim_calls_the_customer_while_the_agent_is_still_on_a_call(call, floor, sql):
    call("agent-state", {"agent_id": 501, "ami_idle": False})
    assert call("claim", {"mode": "predictive", "request_id": "p-1"}) == (
        409, {"ok": False, "error": "not_claimable", "reason": "no_free_agent"})
    status, claimed = call("claim", {"mode": "predictive", "request_id": "p-2", "ahead": True})
    assert status == 200 and claimed["lead"]["oli_id"] == "A" and sql.lead("A")["isReserved"] == 1
    assert call("bridge", {"oli_id": "A", "request_id": "b-1"})[1]["agent_id"] is None, "holds until 501 is free"
    call("agent-state", {"agent_id": 501, "ami_idle": True})
    assert call("bridge", {"oli_id": "A", "request_id": "b-2"})[1]["agent_id"] == 501


def test_bridge_needs_a_live_call(call, floor):
    assert call("bridge", {"oli_id": "A", "request_id": "b-1"}) == (409, {"ok": False, "error": "lead_not_live"})
    assert call("bridge", {"oli_id": "ghost", "request_id": "b-2"}) == (404, {"ok": False, "error": "unknown_oli_id"})


# --- redial, inbound and refusals ---------------------------------------------------------------------

def test_redial_and_inbound_reopen_a_finished_lead(call, floor, sql):
    sql("UPDATE sales_master SET dial_status = 'Disposed', disposeRemark = 'CRM: DND' WHERE oli_id = 'B'")
    status, claimed = call("claim", {"mode": "redial", "agent_id": 501, "oli_id": "B", "request_id": "r-1"})
    assert status == 200 and claimed["lead"]["dial_status"] == "Calling" and claimed["lead"]["disposeRemark"] is None
    call("settle", {"oli_id": "B", "outcome": "answered", "call_type": "redial", "started_at": "2026-11-21 09:59:00"})
    status, claimed = call("claim", {"mode": "inbound", "agent_id": 501, "oli_id": "B", "request_id": "r-2"})
    assert status == 200 and claimed["lead"]["previous_dial_status"] == "Received"


@pytest.mark.parametrize("body, status, answer", [
    ({"mode": "redial", "agent_id": 501, "oli_id": "A"}, 409, {"ok": False, "error": "lead_in_flight"}),
    ({"mode": "redial", "agent_id": 502, "oli_id": "B"}, 409, {"ok": False, "error": "not_claimable",
                                                               "reason": "ami_busy"}),
    ({"mode": "progressive", "agent_id": 999}, 404, {"ok": False, "error": "unknown_agent"}),
    ({"mode": "inbound", "agent_id": 501, "oli_id": "ghost"}, 404, {"ok": False, "error": "unknown_oli_id"}),
])
def test_claim_refusals(call, floor, sql, body, status, answer):
    sql("INSERT INTO sales_agents (id, extension, name, panel_active, ami_idle) VALUES (502, '4502', 'Arun', 1, 0)")
    claim(call, request_id="first")
    assert call("claim", {**body, "request_id": "second"}) == (status, answer)


def test_settle_refusals(call, floor):
    assert call("settle", {"oli_id": "A", "outcome": "answered", "started_at": "2026-11-21 09:59:00"}) == (
        409, {"ok": False, "error": "lead_not_live"})
    assert call("settle", {"oli_id": "ghost", "outcome": "answered", "started_at": "2026-11-21 09:59:00"})[0] == 404


@pytest.mark.parametrize("operation, body, fields", [
    ("claim", {"mode": "progressive", "request_id": "x"}, {"agent_id"}),
    ("claim", {"mode": "predictive", "agent_id": 501, "request_id": "x"}, {"agent_id"}),
    ("claim", {"mode": "redial", "agent_id": 501, "request_id": "x"}, {"oli_id"}),
    ("claim", {"mode": "dial", "request_id": "x"}, {"mode"}),
    ("claim", {"mode": "predictive"}, {"request_id"}),
    ("claim", {"mode": "predictive", "request_id": ""}, {"request_id"}),
    ("claim", {"mode": "predictive", "request_id": "x", "agentId": 501}, {"agentId"}),
    ("claim", {"mode": "predictive", "request_id": "x", "ahead": "yes"}, {"ahead"}),
    ("bridge", {"oli_id": "A"}, {"request_id"}),
    ("call-connected", {"oli_id": "A", "agent_id": 501, "request_id": "x", "call_type": "inbound"}, {"call_type"}),
    ("settle", {"oli_id": "A", "outcome": "hung_up", "started_at": "2026-11-21 09:59"}, {"outcome"}),
    ("settle", {"oli_id": "A", "outcome": "busy"}, {"started_at"}),
    ("settle", {"oli_id": "A", "outcome": "busy", "started_at": "2026-11-21"}, {"started_at"}),
    ("settle", {"oli_id": "A", "outcome": "busy", "started_at": "2026-11-21 09:59", "hangup_cause": "x" * 65},
     {"hangup_cause"}),
    ("agent-state", {"agent_id": 501, "ami_idle": "yes"}, {"ami_idle"}),
    ("agent-state", {"agent_id": 501, "wrapup_seconds": -1}, {"wrapup_seconds"}),
    ("agent-state", {"agent_id": "501"}, {"agent_id"}),
])
def test_validation(call, floor, sql, operation, body, fields):
    status, answer = call(operation, body)
    assert status == 400 and answer["error"] == "validation_failed"
    assert {d["field"] for d in answer["details"]} == fields
    assert live(sql) == [] and sql("SELECT * FROM dialerapi_engine_replies") == []


def test_agent_state_of_an_unknown_agent(call, floor):
    assert call("agent-state", {"agent_id": 999, "ami_idle": True}) == (404, {"ok": False, "error": "unknown_agent"})


# --- retries --------------------------------------------------------------------------------------------

def test_a_claim_retried_with_its_request_id_reserves_nothing_more(call, floor, sql):
    first = claim(call, request_id="r-1")
    assert claim(call, request_id="r-1") == first, "the same answer"
    assert live(sql) == ["A"], "B is still free"
    assert claim(call, request_id="r-2")[1]["lead"]["oli_id"] == "B"
    conflict = call("claim", {"mode": "predictive", "request_id": "r-1"})
    assert conflict == (409, {"ok": False, "error": "idempotency_conflict"})


def test_an_empty_claim_retried_stays_empty_and_a_refusal_is_decided_anew(call, floor, sql):
    sql("UPDATE sales_master SET dial_status = 'Received'")
    assert claim(call) == (200, {"ok": True, "lead": None, "caller_id": None})
    sql("UPDATE sales_master SET dial_status = 'Pending'")
    assert claim(call) == (200, {"ok": True, "lead": None, "caller_id": None}), "a retry answers as the first time"
    sql("UPDATE sales_dialer_config SET isMaintainance = 1")
    assert claim(call, request_id="r-2") == (409, {"ok": False, "error": "maintenance"})
    sql("UPDATE sales_dialer_config SET isMaintainance = 0")
    assert claim(call, request_id="r-2")[1]["lead"]["oli_id"] == "A", "a refusal is not stored"


@pytest.mark.parametrize("known_by", [{"call_id": "1732183205.42"}, {}], ids=["call_id", "oli_id+started_at"])
def test_a_settle_sent_twice_settles_once(call, floor, sql, client, auth, known_by):
    claim(call)
    client.post("/api/pending-dispositions", json={"oliId": "A", "reason": "DND"}, headers=auth)
    body = {"oli_id": "A", "outcome": "no_answer", "started_at": "2026-11-21 09:59:45", **known_by}
    first = call("settle", body)
    assert first[0] == 200 and first[1]["applied"]["action"] == "dispose"
    assert call("settle", body) == first
    assert len(sql("SELECT * FROM sales_call_attempts")) == 1
    assert sql.lead("A")["call_count"] == 1 and sql.lead("A")["dial_status"] == "Disposed"
    other_call = {**body, "started_at": "2026-11-21 09:59:46"} if not known_by else {**body, "call_id": "other"}
    assert call("settle", other_call) == (409, {"ok": False, "error": "lead_not_live"}), "a new call on a settled lead"
    assert call("settle", {**body, "outcome": "busy"}) == (409, {"ok": False, "error": "idempotency_conflict"})


def test_two_copies_of_a_settle_at_once_settle_once(app, floor, sql, engine_auth):
    client = app.test_client()
    client.post("/engine/claim", json={"mode": "progressive", "agent_id": 501, "request_id": "r-1"}, headers=engine_auth)
    body = {"oli_id": "A", "outcome": "busy", "started_at": "2026-11-21 09:59:45", "call_id": "c-1"}
    answers, barrier = [], threading.Barrier(4)

    def send():
        barrier.wait()
        response = app.test_client().post("/engine/settle", json=body, headers=engine_auth)
        answers.append((response.status_code, response.get_json()))

    threads = [threading.Thread(target=send) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(answers) == 4 and all(answer == answers[0] for answer in answers) and answers[0][0] == 200
    assert len(sql("SELECT * FROM sales_call_attempts")) == 1


def test_call_connected_and_bridge_retried_do_it_once(call, floor, sql):
    call("claim", {"mode": "predictive", "request_id": "p-1"})
    sql("INSERT INTO sales_agents (id, extension, name, panel_active, ami_idle) VALUES (502, '4502', 'Arun', 1, 1)")
    sql("INSERT INTO sales_agent_skills (agent_id, form_type) VALUES (502, 'home_loan')")
    first = call("bridge", {"oli_id": "A", "request_id": "b-1"})
    assert call("bridge", {"oli_id": "A", "request_id": "b-1"}) == first
    assert sql.one("SELECT SUM(ami_idle) AS idle FROM sales_agents")["idle"] == 1, "one agent taken, not two"
    body = {"oli_id": "A", "agent_id": first[1]["agent_id"], "request_id": "m-1"}
    assert call("call-connected", body) == call("call-connected", body)
    assert len(sql("SELECT * FROM sales_missed_activities")) == 1


def test_a_failed_request_stores_nothing_and_a_retry_does_it(app, call, floor, sql, monkeypatch):
    claim(call)
    before = sql.lead("A")

    def crash(*args, **kwargs):
        raise RuntimeError("the database host lost power")

    body = {"oli_id": "A", "outcome": "answered", "started_at": "2026-11-21 09:59:45", "call_id": "c-1"}
    monkeypatch.setattr(queries, "store_engine_reply", crash)
    assert call("settle", body) == (500, {"ok": False, "error": "internal_error"})
    assert sql.lead("A") == before and sql("SELECT * FROM sales_call_attempts") == []
    assert sql("SELECT * FROM dialerapi_engine_replies WHERE request_key LIKE 'settle%%'") == []
    monkeypatch.undo()
    assert call("settle", body)[1]["lead"]["dial_status"] == "Received"


@pytest.mark.clock
def test_replies_are_kept_a_day(app, call, floor, sql, frozen_clock):
    claim(call)
    assert len(sql("SELECT * FROM dialerapi_engine_replies")) == 1
    # socket_hosts is left out: a gunicorn another test started may write its heartbeat meanwhile.
    frozen_clock(NOW + timedelta(hours=23))
    assert jobs.prune_tick(app)["engine_replies"] == 0
    sql("DELETE FROM dialerapi_job_runs")
    frozen_clock(NOW + timedelta(hours=24, seconds=1))
    assert jobs.prune_tick(app)["engine_replies"] == 1


def test_a_settle_is_known_by_its_call_id_else_by_oli_id_and_started_at():
    assert engine.settle_key({"oli_id": "A", "started_at": datetime(2026, 11, 21, 9, 59)}) == "settle:A@2026-11-21 09:59:00"
    assert engine.settle_key({"oli_id": "A", "call_id": "x", "started_at": None}) == "settle:call:x"


# --- a non-Python engine through gunicorn -----------------------------------------------------------------

@pytest.mark.clock
def test_curl_plays_a_progressive_and_a_predictive_call_through_gunicorn(live_server, floor, sql):
    result = subprocess.run([str(ROOT / "examples" / "engine-call.sh"), "501"], env=shell_env(live_server, NOW),
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stderr.count(">> POST /engine/settle") == 2 and "== both calls settled" in result.stderr
    assert {r["dial_status"] for r in sql("SELECT dial_status FROM sales_master")} == {"Received"}
    attempts = sql("SELECT oli_id, agent_id, result FROM sales_call_attempts ORDER BY id")
    assert attempts == [{"oli_id": "A", "agent_id": 501, "result": "ANSWER"},
                        {"oli_id": "B", "agent_id": 501, "result": "ANSWER"}]
    activities = sql("SELECT oli_id, ended_at IS NOT NULL AS ended FROM sales_missed_activities ORDER BY id")
    assert activities == [{"oli_id": "A", "ended": 1}, {"oli_id": "B", "ended": 1}]
    agent = sql.one("SELECT ami_idle, panel_active FROM sales_agents WHERE id = 501")
    assert agent == {"ami_idle": 1, "panel_active": 1}


def test_the_tour_says_why_nothing_is_due(database_url, sql, tmp_path):
    """Issue #41: a lead pushed outside the work window is due at the next work start (lead-intake-api.md,
    "Dial-state reset"); engine-call.sh, the README's tour, says so, when, and how to try it now,
    instead of stopping without a word. A host whose clock reads 22:00, after the 09:00-21:00 window."""
    late = datetime(2026, 11, 21, 22, 0)
    server = start_gunicorn(database_url, tmp_path / "gunicorn.log", now=late)
    try:
        sql("INSERT INTO sales_agents (id, extension, name, panel_active, ami_idle) VALUES (501, '4501', 'Kavya', 1, 1)")
        sql("INSERT INTO sales_agent_skills (agent_id, form_type) VALUES (501, 'home_loan')")
        pushed = requests.post(server.url("/api/leads"), headers={"X-API-Key": SECRET}, timeout=10, json={
            "oli_id": "A", "phone_number": "9876543210", "client_name": "Meena", "form_type": "home_loan",
            "priority_id": 2})
        assert pushed.status_code == 201
        result = subprocess.run([str(ROOT / "examples" / "engine-call.sh"), "501"], env=shell_env(server, late),
                                capture_output=True, text=True, timeout=60)
    finally:
        server.stop()
    assert result.returncode == 1
    assert 'nothing to call: the claim answered "lead": null' in result.stderr
    assert "home_loan: 0 due" in result.stderr
    assert ("The work window is 09:00-21:00 (wall-clock in DB_TIMEZONE) and closed now: a lead pushed outside it is "
            "due at the next work start, 2026-11-22 09:00:00.") in result.stderr
    assert "dialerapi config set work_start=00:00 work_end=23:59:59" in result.stderr
    assert ">> POST /engine/settle" not in result.stderr
    assert live(sql) == []



def test_retries_through_gunicorn(live_server, floor, sql):
    headers = {"X-API-Key": ENGINE_SECRET}
    body = {"mode": "progressive", "agent_id": 501, "request_id": "gunicorn-1"}
    answers = [requests.post(live_server.url("/engine/claim"), json=body, headers=headers, timeout=10).json()
               for _ in range(3)]
    assert answers[0]["lead"]["oli_id"] == "A" and answers.count(answers[0]) == 3
    assert live(sql) == ["A"]
