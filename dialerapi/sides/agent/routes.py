"""The agent side's HTTP surface: one agent's missed activities (D7), the pause-reason catalog,
agent tokens for the agent desktop's server (D9) and the reference panel at /panel/.

The socket itself is sides.agent.socket. Imports the rules, the plumbing and web, never another side.
"""

from pathlib import Path

from flask import Blueprint, current_app, g, redirect, request, send_from_directory

from dialerapi.plumbing import clock, limits
from dialerapi.plumbing.db import get_db
from dialerapi.rules.agents import roster
from dialerapi.rules.leads import callbacks, catalog
from dialerapi.sides.agent import schemas
from dialerapi.web import agent_tokens, auth
from dialerapi.web.auth import AGENT, CRM, opens, public
from dialerapi.web.requests import db_timezone, json_body, load
from dialerapi.web.static import page_file

agents_bp = Blueprint("agents", __name__)
catalog_bp = Blueprint("catalog", __name__)
panel_bp = Blueprint("panel", __name__)

blueprints = (agents_bp, catalog_bp, panel_bp)


@agents_bp.get("/api/missed-activities")
@opens(CRM, AGENT)
@limits.missed_activities
def missed_activities():
    """One agent's open missed activities (lead-intake-api.md, GET /api/missed-activities; D7).

    Query: exactly one of agentId and extension (with an agent token, neither: the token's agent).
    200 {ok, agent_id, blocked, grace_minutes, items}; 404 unknown_agent / unknown_extension; 400 for
    neither, both, or a malformed extension; 403 forbidden for an agent token of another agent (#28).
    """
    lookup = _agent_lookup(request.args.to_dict())
    grace_minutes = current_app.config["MISSED_ACTIVITY_GRACE_MINUTES"]
    answer = get_db().run(roster.missed_activities, clock.now(db_timezone()), db_timezone(), grace_minutes, **lookup)
    # Checked on the answer, so an extension is resolved by the same read; nothing is written.
    auth.require_own_agent(answer["agent_id"])
    return answer


@agents_bp.get("/api/callbacks")
@opens(CRM, AGENT)
@limits.agent_callbacks
def agent_callbacks():
    """One agent's personal callbacks: due in the next 24 hours and already due, oldest first.

    Query: exactly one of agentId and extension (with an agent token, neither: the token's agent).
    200 {ok, agent_id, fallback_minutes (the floor's), items: [{oli_id, data_id, client_name,
    form_type, callback_scheduled_at, due, fallback_minutes (its campaign's), fallback_at,
    minutes_until_fallback}]} (times 'YYYY-MM-DD HH:MM:SS' DB_TIMEZONE; rules.leads.callbacks.agent_callbacks); the same as the socket's `dialer.callbacks`. 404
    unknown_agent / unknown_extension; 400 for neither, both or a malformed value; 403 forbidden for
    an agent token of another agent.
    """
    lookup = _agent_lookup(request.args.to_dict())
    tz = db_timezone()
    answer = get_db().run(_callbacks_of, lookup, clock.now(tz), tz)
    auth.require_own_agent(answer["agent_id"])
    return {"ok": True, **answer}


def _callbacks_of(conn, lookup, now, tz):
    agent = roster.find_agent(conn, **lookup)
    return callbacks.agent_callbacks(conn, agent["id"], now, tz)


def _agent_lookup(args):
    """{agent_id} or {extension} from a query of exactly one of agentId and extension; an agent
    token's own agent when it gives neither."""
    caller = g.caller
    if caller.role == AGENT and not {"agentId", "extension"} & args.keys():
        return {"agent_id": caller.agent_id}
    return load(schemas.MissedActivitiesQuery().load, args)


@agents_bp.post("/api/agent-tokens")
@limits.agent_tokens
def mint_agent_token():
    """A token for one agent's panel (decisions.md D9), for the agent desktop's server.

    Body: exactly one of agentId and extension, optional lifetimeSeconds. 201 {ok, agent_id, token,
    expires_at (ISO 8601 UTC), expires_in (seconds)}; 404 unknown_agent / unknown_extension; 400.
    """
    config = current_app.config
    wanted = load(schemas.AgentTokenRequest(config["AGENT_TOKEN_MAX_SECONDS"]).load, json_body())
    lifetime = wanted.pop("lifetime_seconds")
    agent = get_db().run(roster.find_agent, **wanted)
    token, expires_at = agent_tokens.mint(config, agent["id"], lifetime)
    return {"ok": True, "agent_id": agent["id"], "token": token, "expires_at": clock.format_utc(expires_at),
            "expires_in": lifetime or config["AGENT_TOKEN_SECONDS"]}, 201

@catalog_bp.get("/api/pause-reasons")
@public
def pause_reasons():
    """The pause-reason catalog (lead-intake-api.md, GET /api/pause-reasons). Public."""
    return get_db().run(catalog.pause_reasons)


PANEL_DIR = Path(__file__).resolve().parent / "panel"
PANEL_FILES = ("index.html", "panel.js", "panel.css", "favicon.ico")


@panel_bp.get("/panel")
@public
def panel_redirect():
    """/panel -> /panel/, keeping the fragment (a browser keeps it across a redirect)."""
    return redirect("/panel/", code=308)


@panel_bp.get("/favicon.ico")
@public
def favicon():
    """The service's icon (a headset), for the browser that opens /panel/ or /docs/ and asks for it
    without a key, not a 401 (an error in the agent's console)."""
    return send_from_directory(PANEL_DIR, "favicon.ico", mimetype="image/vnd.microsoft.icon", max_age=86400)


@panel_bp.get("/panel/", defaults={"name": "index.html"})
@panel_bp.get("/panel/<name>")
@public
def panel(name):
    """The reference agent panel: static HTML, JS and CSS shipped in the package. Public:
    it holds no secret; the agent's token reaches it in the URL fragment or from the host page."""
    return page_file(PANEL_DIR, name, PANEL_FILES)
