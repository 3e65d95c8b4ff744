"""The supervisor side's HTTP surface: the board's page at /board/ and its snapshot,
the agent time report, and supervisor tokens for the supervisor desktop's server.

The board's socket is sides.supervisor.board. Imports the rules, the plumbing and web, never
another side.
"""

from pathlib import Path

from flask import Blueprint, current_app, redirect, request

from dialerapi.plumbing import clock, limits
from dialerapi.plumbing.db import get_db
from dialerapi.rules.agents import state_history
from dialerapi.rules.views import board as board_rules
from dialerapi.sides.supervisor import board, schemas
from dialerapi.web import agent_tokens
from dialerapi.web.auth import CRM, SUPERVISOR, opens, public
from dialerapi.web.requests import db_timezone, json_body, load
from dialerapi.web.static import page_file

supervisor_bp = Blueprint("supervisor", __name__)
board.register(supervisor_bp)

blueprints = (supervisor_bp,)

BOARD_DIR = Path(__file__).resolve().parent / "board"
BOARD_FILES = ("index.html", "board.js", "board.css")


@supervisor_bp.get("/board")
@public
def board_redirect():
    """/board -> /board/, keeping the fragment (where the supervisor's token travels)."""
    return redirect("/board/", code=308)


@supervisor_bp.get("/board/", defaults={"name": "index.html"})
@supervisor_bp.get("/board/<name>")
@public
def board_page(name):
    """The supervisor board: static HTML, JS and CSS shipped in the package. Public: it
    holds no secret; the supervisor's token reaches it in the URL fragment."""
    return page_file(BOARD_DIR, name, BOARD_FILES)


@supervisor_bp.get("/api/board")
@opens(SUPERVISOR)
@limits.board_reads
def board_snapshot():
    """The board as its socket's `board.snapshot` sends it: 200 {ok, now (ISO 8601 UTC),
    floor: {at, maintenance, work_window, leads_due_cap, floor_abandons, form_types: [... abandons
    with `level` green / amber / red]}, agents: [{agent_id, name, extension, skills, state, since,
    pause_code, reason_note, form_type, wrapup_until, calls, talk_seconds}]}. Supervisor only."""
    tz = db_timezone()
    return {"ok": True, **get_db().run_snapshot(board_rules.snapshot, clock.now(tz), tz)}


@supervisor_bp.get("/api/reports/agents")
@opens(SUPERVISOR, CRM)
@limits.board_reads
def agent_report():
    """The agent time report, as `dialerapi report agents --json`.

    Query: from, to (YYYY-MM-DD, DB_TIMEZONE days, both included, at most 92 days), agentId
    (optional). 200 {ok, from, to, timezone, days: [{agent_id, day, login_seconds, free_seconds,
    talk_seconds, wrap_up_seconds, blocked_seconds, pause_seconds, calls, answered_calls, pause:
    {code: seconds}}], agents: [the same per agent over the range, without day]}. login_seconds is
    the sum of the other seconds. 400 for a bad or backwards range.
    """
    wanted = load(schemas.AgentReportQuery().load, request.args.to_dict())
    tz = db_timezone()
    report = get_db().run(state_history.report, wanted["first_day"], wanted["last_day"], clock.now(tz), tz,
                          wanted["agent_ids"])
    return {"ok": True, **report}


@supervisor_bp.post("/api/supervisor-tokens")
@limits.agent_tokens
def mint_supervisor_token():
    """A token for a supervisor's browser, for the supervisor desktop's server (CRM key).

    Body: {name, lifetimeSeconds?}. 201 {ok, supervisor, token, expires_at (ISO 8601 UTC),
    expires_in (seconds)}. The token opens the board, its socket and the agent report, nothing else.
    """
    config = current_app.config
    wanted = load(schemas.SupervisorTokenRequest(config["AGENT_TOKEN_MAX_SECONDS"]).load, json_body())
    token, expires_at = agent_tokens.mint_supervisor(config, wanted["name"], wanted["lifetime_seconds"])
    return {"ok": True, "supervisor": wanted["name"], "token": token, "expires_at": clock.format_utc(expires_at),
            "expires_in": wanted["lifetime_seconds"] or config["AGENT_TOKEN_SECONDS"]}, 201
