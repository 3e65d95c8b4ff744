"""The CRM side's HTTP surface (lead-intake-api.md, "Endpoints"): lead push, callbacks and
final dispositions, opened by WS_SECRET (web.auth, CRM).

Imports the rules, the plumbing and web (what every side shares), never another side.
"""

import orjson
from flask import Blueprint, request

from dialerapi.plumbing import clock, limits
from dialerapi.plumbing.db import get_db
from dialerapi.rules.dialing import crm_actions
from dialerapi.rules.events import lead_events
from dialerapi.rules.leads import push
from dialerapi.rules.views import lead as lead_read
from dialerapi.sides.crm import schemas
from dialerapi.sides.crm.caller_ids import caller_ids_bp
from dialerapi.sides.crm.campaigns import campaigns_bp
from dialerapi.sides.crm.dnc import dnc_bp
from dialerapi.upkeep import observability
from dialerapi.web.requests import db_timezone, json_body, load

leads_bp = Blueprint("leads", __name__)
callbacks_bp = Blueprint("callbacks", __name__)
results_bp = Blueprint("results", __name__)

blueprints = (leads_bp, callbacks_bp, results_bp, campaigns_bp, dnc_bp, caller_ids_bp)

# Built once: the reads are the CRM's most frequent calls, and a schema costs more to build than to use.
LEAD_READ = schemas.LeadReadQuery()
LEAD_EVENTS = schemas.LeadEventsQuery()


@leads_bp.post("/api/leads")
@leads_bp.post("/api/master")
def push_leads():
    """Upsert one lead or a batch of 1-500 (lead-intake-api.md, POST /api/leads; D4). 201 always."""
    tz = db_timezone()
    results = get_db().run(push.push, schemas.push_loader(json_body(), tz), clock.now(tz), tz)
    observability.count_pushed(results)
    return {"ok": True, "leads": results}, 201


@callbacks_bp.post("/api/send-callback-request")
@limits.crm_actions
def send_callback_request():
    """Set a callback time on an existing lead now (lead-intake-api.md, POST /api/send-callback-request).

    200 {ok, lead}; 404 unknown_oli_id, unknown_agent (callbackAgentId not on the roster); 409
    lead_in_flight while the lead is live.
    """
    callback = load(schemas.SendCallbackSchema().load, json_body())
    lead = get_db().run(
        crm_actions.request_callback, callback["oli_id"], callback["scheduled_at"], clock.now(db_timezone()),
        callback["callbackAgentId"],
    )
    return {"ok": True, "lead": lead}


@callbacks_bp.post("/api/pending-callbacks")
@limits.crm_actions
def pending_callback():
    """CRM callback, held while the lead is live (lead-intake-api.md, POST /api/pending-callbacks; D5).

    200 {ok, pending: {id, oli_id, scheduled_at, status: applied}} when applied now, 202 with status pending when held until settle; 404 unknown_oli_id, unknown_agent
    (callbackAgentId not on the roster).
    """
    action = load(schemas.PendingCallbackSchema().load, json_body())
    stored = get_db().run(crm_actions.submit_action, action, clock.now(db_timezone()), db_timezone())
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
    stored = get_db().run(crm_actions.submit_action, action, clock.now(db_timezone()), db_timezone())
    pending = {key: stored[key] for key in ("id", "oli_id", "action", "reason", "status")}
    return {"ok": True, "pending": pending}, 200 if stored["status"] == "applied" else 202


@results_bp.get("/api/leads/<path:oli_id>")
@limits.crm_reads
def read_lead(oli_id):
    """One lead as it stands and its call attempts, newest first (docs/crm/results.md).

    Query: limit (1-200 calls, default 50), cursor (the `next` of the page before). 200 {ok, lead,
    calls, next (cursor or null)}; times 'YYYY-MM-DD HH:MM:SS' DB_TIMEZONE; 404 unknown_oli_id;
    400 validation_failed for a bad oli_id, limit or cursor.
    """
    query = load(LEAD_READ.load, {**request.args.to_dict(), "oli_id": oli_id})
    page = get_db().run(lead_read.read_lead, query["oli_id"], query["cursor"], query["limit"], db_timezone())
    # The calls come as JSON written by the database; the answer carries them as they are.
    return {"ok": True, "lead": page["lead"], "calls": orjson.Fragment(page["calls_json"]), "next": page["next"]}


@results_bp.get("/api/lead-events")
@limits.crm_reads
def lead_event_feed():
    """The lead events after a cursor, in order (docs/crm/results.md).

    Query: after (a `next` this feed returned; none: from the oldest kept), limit (1-1000, default
    100). 200 {ok, events: [{id, type, occurred_at (UTC), occurred_at_local (DB_TIMEZONE), oli_id,
    data_id, data}], next}; resume with after=next. 400 validation_failed for a bad after or limit.
    """
    query = load(LEAD_EVENTS.load, request.args.to_dict())
    db = get_db()
    db.run(lead_events.sequence)
    return {"ok": True, **db.run(lead_events.feed, query["after"], query["limit"])}
