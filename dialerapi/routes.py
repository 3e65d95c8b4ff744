"""HTTP views, one blueprint per resource area (lead-intake-api.md, "Endpoints").

A view reads the request, validates it with a schema, calls one function that does the work in a
transaction, and returns the JSON body. Errors are raised and rendered by errors.py.
"""

import json
import re
from pathlib import Path

from flask import Blueprint, Response, current_app, g, redirect, request, send_from_directory
from werkzeug.exceptions import RequestEntityTooLarge

from . import (actions, agent_tokens, agents, auth, catalog, clock, engine, health, leads, limits, observability,
               openapi, schemas)
from .auth import AGENT, CRM, MONITOR, opens, public
from .db import get_db
from .errors import ApiError

leads_bp = Blueprint("leads", __name__)
callbacks_bp = Blueprint("callbacks", __name__)
agents_bp = Blueprint("agents", __name__)
catalog_bp = Blueprint("catalog", __name__)
health_bp = Blueprint("health", __name__)
docs_bp = Blueprint("api_docs", __name__)
engine_bp = Blueprint("engine", __name__, url_prefix="/engine")
panel_bp = Blueprint("panel", __name__)

blueprints = (leads_bp, callbacks_bp, agents_bp, catalog_bp, health_bp, docs_bp, engine_bp, panel_bp)


# Every object or array parsed costs about 60 bytes: 1 MiB of `{},` is 350,000 of them, 25 MB per
# request (issue #17). The largest valid body, a batch of 500 leads, has 502; anything with more is
# refused before it is parsed.
MAX_JSON_CONTAINERS = 1024
JSON_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"')


def _containers(data):
    """How many JSON objects and arrays `data` (bytes) opens, braces inside strings not counted.

    Strings are only stripped when the bare count is over the limit, the rare case.
    """
    if data.count(b"{") + data.count(b"[") > MAX_JSON_CONTAINERS:
        data = JSON_STRING.sub(b"", data)
    return data.count(b"{") + data.count(b"[")


def json_body():
    """The request body parsed as JSON whatever its Content-Type (D3); 400 `invalid_json` otherwise.

    Bodies over MAX_CONTENT_LENGTH (1 MiB, chunked ones too) are 413 before they are parsed.
    """
    data = request.get_data(cache=True)
    # Werkzeug stops reading a chunked body (no Content-Length) at the limit without raising, so a
    # body that fills the whole limit was cut short: refuse it rather than parse a truncated batch.
    if request.content_length is None and len(data) >= current_app.config["MAX_CONTENT_LENGTH"]:
        raise RequestEntityTooLarge()
    if _containers(data) > MAX_JSON_CONTAINERS:
        raise ApiError(400, "validation_failed", [{
            "field": "body", "message": f"more than {MAX_JSON_CONTAINERS} JSON objects and arrays "
                                        f"(a batch holds at most {schemas.MAX_BATCH} leads)"}])
    try:
        # Strict UTF-8 (RFC 8259): json.loads on bytes would let CESU-encoded lone surrogates through.
        return json.loads(data.decode("utf-8"))
    except (ValueError, RecursionError):
        raise ApiError(400, "invalid_json") from None


def db_timezone():
    return current_app.config["DB_TIMEZONE"]


def load(loader, body):
    """Validate `body` with `loader` (a schema's load) inside a RequestContext of the time zone and now."""
    tz = db_timezone()
    with schemas.RequestContext({"tz": tz, "now": clock.now(tz)}):
        return loader(body)


@leads_bp.post("/api/leads")
@leads_bp.post("/api/master")
def push_leads():
    """Upsert one lead or a batch of 1-500 (lead-intake-api.md, POST /api/leads; D4). 201 always."""
    tz = db_timezone()
    results = get_db().run(leads.push, json_body(), clock.now(tz), tz)
    observability.count_pushed(results)
    return {"ok": True, "leads": results}, 201


@callbacks_bp.post("/api/send-callback-request")
@limits.crm_actions
def send_callback_request():
    """Set a callback time on an existing lead now (lead-intake-api.md, POST /api/send-callback-request).

    200 {ok, lead}; 404 unknown_oli_id; 409 lead_in_flight while the lead is live.
    """
    callback = load(schemas.SendCallbackSchema().load, json_body())
    lead = get_db().run(
        actions.request_callback, callback["oli_id"], callback["scheduled_at"], clock.now(db_timezone())
    )
    return {"ok": True, "lead": lead}


@callbacks_bp.post("/api/pending-callbacks")
@limits.crm_actions
def pending_callback():
    """CRM callback, held while the lead is live (lead-intake-api.md, POST /api/pending-callbacks; D5).

    200 {ok, pending: {id, oli_id, scheduled_at, status: applied}} when applied now, 202 with
    status pending when held until settle; 404 unknown_oli_id.
    """
    action = load(schemas.PendingCallbackSchema().load, json_body())
    stored = get_db().run(actions.submit_action, action, clock.now(db_timezone()), db_timezone())
    pending = {key: stored[key] for key in ("id", "oli_id", "scheduled_at", "status")}
    pending["scheduled_at"] = clock.format_wall_clock(pending["scheduled_at"])
    return {"ok": True, "pending": pending}, 200 if stored["status"] == "applied" else 202


@callbacks_bp.post("/api/pending-dispositions")
@limits.crm_actions
def pending_disposition():
    """CRM final disposition, held while the lead is live (lead-intake-api.md, POST /api/pending-dispositions; D5).

    200 {ok, pending: {id, oli_id, action: dispose, reason, status: applied}} when applied now,
    202 with status pending when held; 404 unknown_oli_id.
    """
    action = load(schemas.PendingDispositionSchema().load, json_body())
    stored = get_db().run(actions.submit_action, action, clock.now(db_timezone()), db_timezone())
    pending = {key: stored[key] for key in ("id", "oli_id", "action", "reason", "status")}
    return {"ok": True, "pending": pending}, 200 if stored["status"] == "applied" else 202


@agents_bp.get("/api/missed-activities")
@opens(CRM, AGENT)
@limits.missed_activities
def missed_activities():
    """One agent's open missed activities (lead-intake-api.md, GET /api/missed-activities; D7).

    Query: exactly one of agentId and extension (with an agent token, neither: the token's agent).
    200 {ok, agent_id, blocked, grace_minutes, items}; 404 unknown_agent / unknown_extension; 400 for
    neither, both, or a malformed extension; 403 forbidden for an agent token of another agent (#28).
    """
    args = request.args.to_dict()
    caller = g.caller
    if caller.role == AGENT and not {"agentId", "extension"} & args.keys():
        lookup = {"agent_id": caller.agent_id}
    else:
        lookup = load(schemas.MissedActivitiesQuery().load, args)
    grace_minutes = current_app.config["MISSED_ACTIVITY_GRACE_MINUTES"]
    answer = get_db().run(agents.missed_activities, clock.now(db_timezone()), db_timezone(), grace_minutes, **lookup)
    # Checked on the answer, so an extension is resolved by the same read; nothing is written.
    auth.require_own_agent(answer["agent_id"])
    return answer


@agents_bp.post("/api/agent-tokens")
@limits.agent_tokens
def mint_agent_token():
    """A token for one agent's panel (issue #28; decisions.md D9), for the agent desktop's server.

    Body: exactly one of agentId and extension, optional lifetimeSeconds. 201 {ok, agent_id, token,
    expires_at (ISO 8601 UTC), expires_in (seconds)}; 404 unknown_agent / unknown_extension; 400.
    """
    config = current_app.config
    wanted = load(schemas.AgentTokenRequest(config["AGENT_TOKEN_MAX_SECONDS"]).load, json_body())
    lifetime = wanted.pop("lifetime_seconds")
    agent = get_db().run(agents.find_agent, **wanted)
    token, expires_at = agent_tokens.mint(config, agent["id"], lifetime)
    return {"ok": True, "agent_id": agent["id"], "token": token, "expires_at": clock.format_utc(expires_at),
            "expires_in": lifetime or config["AGENT_TOKEN_SECONDS"]}, 201

@catalog_bp.get("/api/pause-reasons")
@public
def pause_reasons():
    """The pause-reason catalog (lead-intake-api.md, GET /api/pause-reasons). Public."""
    return get_db().run(catalog.pause_reasons)


@health_bp.get("/healthz")
@public
def healthz():
    """Liveness from cached checks: exactly {"ok": true, "ami": BOOL, "db": BOOL} (D8). Public."""
    return current_app.extensions["dialerapi.health"].snapshot()


@health_bp.get("/health")
@health_bp.get("/api/health")
@opens(CRM, MONITOR)
def detailed_health():
    """Detailed health for the sysadmin's cron (D8): 200 healthy, 503 unhealthy; same body either way."""
    return health.report(current_app._get_current_object())


@health_bp.get("/metrics")
@opens(CRM, MONITOR)
def metrics():
    """Prometheus metrics (text exposition format); authenticated like every non-public path."""
    body = observability.exposition(current_app.config["DATABASE_URL"], db_timezone())
    return Response(body, mimetype="text/plain", headers={"Content-Type": "text/plain; version=0.0.4; charset=utf-8"})


@engine_bp.post("/claim")
def engine_claim():
    """Reserve a lead for the dialing engine (lead-intake-api.md, "Claim and retry rules"): 200 {ok, lead or null}.

    404 unknown_agent / unknown_oli_id; 409 maintenance, lead_in_flight, not_claimable (with
    `reason`), idempotency_conflict (README, "The engine API": the error table, mode by mode).
    """
    claim = load(schemas.load_engine_claim, json_body())
    return {"ok": True, **get_db().run(engine.claim, claim, clock.now(db_timezone()))}


@engine_bp.post("/bridge")
def engine_bridge():
    """Predictive: a free agent with the lead's skill and priority, or null (hold): 200 {ok, oli_id, agent_id}."""
    bridge = load(schemas.EngineBridgeSchema().load, json_body())
    return {"ok": True, **get_db().run(engine.bridge, bridge, clock.now(db_timezone()))}


@engine_bp.post("/call-connected")
def engine_call_connected():
    """A bridged outgoing or redial call connected: open the missed activity. 200 {ok, missed_activity_id}.

    404 unknown_oli_id / unknown_agent; 409 lead_not_live (no call to connect), idempotency_conflict.
    """
    connected = load(schemas.EngineCallConnectedSchema().load, json_body())
    tz = db_timezone()
    return {"ok": True, **get_db().run(engine.call_connected, connected, clock.now(tz), tz)}


@engine_bp.post("/settle")
def engine_settle():
    """The hangup of a live call (decisions.md D6): 200 {ok, lead, applied}.

    404 unknown_oli_id / unknown_agent; 409 lead_not_live, stale_reservation, idempotency_conflict.
    """
    hangup = load(schemas.EngineSettleSchema().load, json_body())
    tz, config = db_timezone(), current_app.config
    return {"ok": True, **get_db().run(
        engine.settle, hangup, clock.now(tz), tz, grace_minutes=config["MISSED_ACTIVITY_GRACE_MINUTES"],
        release_retry_ms=config["RELEASE_RETRY_MS"],
    )}


@engine_bp.post("/agent-state")
def engine_agent_state():
    """Panel, AMI idle and wrap-up as the engine learns them: 200 {ok, agent} with the availability."""
    state = load(schemas.EngineAgentStateSchema().load, json_body())
    tz = db_timezone()
    return {"ok": True, **get_db().run(engine.agent_state, state, clock.now(tz), tz)}


@docs_bp.get("/openapi.json")
@public
def openapi_document():
    """The OpenAPI 3.1 document (public, so Swagger UI at /docs can load it)."""
    document = current_app.extensions.get("dialerapi.openapi")
    if document is None:
        document = current_app.extensions["dialerapi.openapi"] = openapi.build()
    return document


PANEL_DIR = Path(__file__).resolve().parent / "panel"
PANEL_FILES = ("index.html", "panel.js", "panel.css")
# The panel's own files and its own origin only: no inline script, no third party, not framed.
PANEL_POLICY = "default-src 'self'; connect-src 'self'; frame-ancestors 'self'; base-uri 'none'; form-action 'none'"


@panel_bp.get("/panel")
@public
def panel_redirect():
    """/panel -> /panel/, keeping the fragment (a browser keeps it across a redirect)."""
    return redirect("/panel/", code=308)


@panel_bp.get("/panel/", defaults={"name": "index.html"})
@panel_bp.get("/panel/<name>")
@public
def panel(name):
    """The reference agent panel (issue #28): static HTML, JS and CSS shipped in the package. Public:
    it holds no secret; the agent's token reaches it in the URL fragment or from the host page."""
    if name not in PANEL_FILES:
        raise ApiError(404, "not_found")
    response = send_from_directory(PANEL_DIR, name, max_age=0)
    response.headers["Content-Security-Policy"] = PANEL_POLICY
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Referrer-Policy"] = "no-referrer"
    return response
