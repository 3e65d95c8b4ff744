"""The engine side's HTTP surface, /engine/ (docs/engine/api.md, "The engine API"): claim, bridge,
call-connected, settle, agent state and the floor state, opened by ENGINE_SECRET only (web.auth, ENGINE).

Each view runs one function of rules.dialing.engine in a transaction. Imports the rules, the plumbing and
web, never another side.
"""

from flask import Blueprint, current_app

from dialerapi.plumbing import clock
from dialerapi.plumbing.db import get_db
from dialerapi.rules.dialing import engine
from dialerapi.rules.views import floor
from dialerapi.sides.engine import schemas
from dialerapi.sides.engine.schemas import EngineFloorSchema
from dialerapi.upkeep import observability
from dialerapi.web.requests import db_timezone, json_body, load

engine_bp = Blueprint("engine", __name__, url_prefix="/engine")

blueprints = (engine_bp,)


@engine_bp.post("/claim")
def engine_claim():
    """Reserve a lead for the dialing engine (lead-intake-api.md, "Claim and retry rules"): 200 {ok, lead or null,
    caller_id or null}.

    404 unknown_agent / unknown_oli_id; 409 maintenance, lead_in_flight, not_claimable (with
    `reason`), idempotency_conflict (docs/engine/api.md, "The engine API": the error table, mode by mode).
    """
    claim = load(schemas.load_engine_claim, json_body())
    tz = db_timezone()
    answer, fresh = get_db().run(engine.claim, claim, clock.now(tz), tz)
    if fresh:
        observability.count_presented(answer["caller_id"])
    return {"ok": True, **answer}


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


@engine_bp.post("/floor")
def engine_floor():
    """The floor per form_type for a pacing engine: 200 {ok, at, maintenance,
    leads_due_cap, floor_abandons, form_types: [{form_type, agents, calls, leads_due, leads_due_capped,
    abandons, personal_callbacks}]}.

    One consistent snapshot (rules.views.floor.floor_state); `at` is its `now`, wall-clock DB_TIMEZONE.
    Reads only: no request_id, nothing stored.
    """
    wanted = load(EngineFloorSchema().load, json_body())
    tz = db_timezone()
    now = clock.now(tz)
    state = get_db().run_snapshot(floor.floor_state, now, wanted.get("form_type"), tz)
    return {"ok": True, "at": clock.format_wall_clock(now), **state}
