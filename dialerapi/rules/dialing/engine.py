"""The dialing engine's operations over HTTP, /engine/ .

Claim, bridge, call-connected, settle and agent state. Each runs in the caller's transaction
through the one implementation of the rules (claims, dialstate, agents); this module adds only what
a remote engine needs: answers as JSON-ready dicts, and retries that are answered, not redone.

Retries: claim, bridge and call-connected carry a `request_id`; settle is known by its `call_id`,
or by its oli_id and `started_at`. The answer is stored in dialerapi_engine_replies in the same
transaction as the change, so a request sent again (after a timeout, a lost connection) gets the
first answer and changes nothing: a retried claim returns the lead it already reserved instead of
reserving a second one, a settle sent twice settles once. The same key with another body is refused
(IdempotencyConflict). Replies are kept a day (jobs.prune_tick).

Times in requests and answers are wall-clock DB_TIMEZONE (`YYYY-MM-DD HH:MM:SS`, decisions.md D2).
"""

import hashlib
import json
from datetime import datetime, timedelta

import pymysql

from dialerapi.plumbing import clock
from dialerapi.plumbing.db import Conflict, queries
from dialerapi.rules.agents import availability, roster
from dialerapi.rules.core.kinds import ClaimKind
from dialerapi.rules.dialing import claims
from dialerapi.rules.leads import dialstate

DUPLICATE_KEY = 1062
CLAIM_MODES = tuple(kind.value for kind in ClaimKind)
# The sales_master columns an engine gets for a lead (lead-intake-api.md, "Lead (master row)").
LEAD_FIELDS = (
    "oli_id", "data_id", "phone_number", "client_name", "form_type", "priority_id", "dial_status",
    "previous_dial_status", "disposeRemark", "last_dial_result", "hangup_by", "hangup_cause", "call_count",
    "first_attempt_at", "last_attempt_at", "next_retry_at", "callback_scheduled_at", "isReserved",
    "reservation_id", "reserved_at",
)
REPLY_KEEP = timedelta(days=1)


class IdempotencyConflict(Exception):
    """A request key (request_id, call_id, or oli_id + started_at) came back with another body (HTTP 409)."""


def _json_value(value):
    return clock.format_wall_clock(value) if isinstance(value, datetime) else value


def lead_view(row):
    """A sales_master row as the engine API gives it: {lead_id, oli_id, ..., isReserved}, times as text."""
    return {"lead_id": row["id"], **{field: _json_value(row[field]) for field in LEAD_FIELDS}}


def once(conn, request_key, request, now, work):
    """Return work()'s answer, stored under `request_key`; a repeat of the same request gets the stored answer.

    `request` is the validated body (its SHA-256 is kept to refuse a key reused for another request).
    The key is reserved first, so two copies of one request sent at once are serialised: the second
    waits on the first's row and, once the first commits, reads its answer. Raises IdempotencyConflict.
    """
    fingerprint = hashlib.sha256(json.dumps(request, sort_keys=True, default=str).encode()).hexdigest()
    try:
        queries.reserve_engine_reply(conn, request_key=request_key, fingerprint=fingerprint, created_at=now)
    except pymysql.err.IntegrityError as exc:
        if exc.args[0] != DUPLICATE_KEY:
            raise
        stored = queries.get_engine_reply(conn, request_key=request_key)
        if stored is None:  # pruned between the two statements: start again
            raise Conflict(f"{request_key} went away while it was read") from None
        if stored["fingerprint"] != fingerprint:
            raise IdempotencyConflict(request_key) from None
        return json.loads(stored["reply"])
    answer = work()
    queries.store_engine_reply(conn, request_key=request_key, reply=json.dumps(answer))
    return answer


def claim(conn, request, now, tz=None):
    """POST /engine/claim: reserve a lead, or none. `request`: {mode, request_id, agent_id?, oli_id?, ahead?,
    customer_request?}.

    progressive: the next due lead for agent_id (claims.claim_next); predictive: one for the skills
    of whoever is free, or with `ahead` staffed (claims.claim_predictive); redial / inbound: oli_id for agent_id
    (claims.claim_lead). `tz`: DB_TIMEZONE, the zone of `now` (the calling window). Returns (answer,
    fresh): answer {"lead": lead_view or None, "caller_id": {number, pool, match} the call presents,
    or None (no caller IDs on the floor, an inbound call, no lead)}, the lead None only when nothing
    the claim may take is due and unreserved; fresh False when it is the stored answer of a
    request_id sent again (its call was counted once, when it was claimed). Raises vocabulary.UnknownAgent, vocabulary.UnknownLead,
    claims.NotClaimable, IdempotencyConflict. A refusal is not stored: its retry is decided anew.
    """
    fresh = []

    def work():
        fresh.append(True)
        mode = request["mode"]
        if mode == "progressive":
            row = claims.claim_next(conn, request["agent_id"], now, tz=tz)
        elif mode == "predictive":
            row = claims.claim_predictive(conn, now, ahead=request.get("ahead", False),
                                          form_type=request.get("form_type"), tz=tz)
        elif "phone_number" in request:
            row = claims.claim_return_call(conn, request["agent_id"], request["phone_number"],
                                           request.get("dialed_number"), now, tz=tz)
        else:
            row = claims.claim_lead(conn, request["agent_id"], request["oli_id"], now, call_type=mode, tz=tz,
                                    customer_request=request.get("customer_request", False))
        return {"lead": row and lead_view(row), "caller_id": row and row["caller_id_choice"]}

    answer = once(conn, f"claim:{request['request_id']}", request, now, work)
    return answer, bool(fresh)


def bridge(conn, request, now):
    """POST /engine/bridge: {oli_id, request_id} -> {"oli_id", "agent_id": a free skilled agent or None (hold)}.

    Raises vocabulary.UnknownLead, vocabulary.NotLive, IdempotencyConflict.
    """
    def work():
        return {"oli_id": request["oli_id"], "agent_id": roster.bridge(conn, request["oli_id"], now)}

    return once(conn, f"bridge:{request['request_id']}", request, now, work)


def call_connected(conn, request, now, tz):
    """POST /engine/call-connected: {oli_id, agent_id, call_type, request_id} -> {"missed_activity_id"}.

    Opens the agent's missed activity (roster.open_missed_activity). Raises vocabulary.UnknownLead,
    vocabulary.UnknownAgent, vocabulary.NotLive (the lead is not on a call), IdempotencyConflict.
    """
    def work():
        activity_id = roster.open_missed_activity(conn, request["oli_id"], request["agent_id"], now, tz,
                                                  request["call_type"])
        return {"missed_activity_id": activity_id}

    return once(conn, f"call-connected:{request['request_id']}", request, now, work)


def settle_key(request):
    """The request key of a settle: its call_id, else its oli_id and started_at."""
    if request.get("call_id"):
        return f"settle:call:{request['call_id']}"
    return f"settle:{request['oli_id']}@{clock.format_wall_clock(request['started_at'])}"


def settle(conn, request, now, tz, *, grace_minutes, release_retry_ms):
    """POST /engine/settle: the hangup of a live call (dialstate.settle, decisions.md D6).

    `request`: {oli_id, outcome, started_at, agent_id?, call_type, hangup_by?, hangup_cause?,
    call_id?, reservation_id?}. Returns {"lead": lead_view as it now stands, "applied": {id,
    action, scheduled_at, reason} of the held CRM action applied, or None}. Raises
    vocabulary.UnknownLead, vocabulary.UnknownAgent, vocabulary.NotLive, vocabulary.StaleReservation,
    IdempotencyConflict.
    """
    def work():
        result = dialstate.settle(
            conn, request["oli_id"], request["outcome"], now, tz=tz, grace_minutes=grace_minutes,
            release_retry_ms=release_retry_ms, agent_id=request.get("agent_id"), call_type=request["call_type"],
            hangup_by=request.get("hangup_by"), hangup_cause=request.get("hangup_cause"),
            started_at=request["started_at"], reservation_id=request.get("reservation_id"),
        )
        applied = result["pending"]
        return {
            "lead": lead_view(result["lead"]),
            "applied": applied and {key: _json_value(applied[key]) for key in ("id", "action", "scheduled_at", "reason")},
        }

    return once(conn, settle_key(request), request, now, work)


def agent_state(conn, request, now, tz):
    """POST /engine/agent-state: record what the engine knows of an agent, and answer their availability.

    `request`: {agent_id, panel_active?, ami_idle?, wrapup_seconds?} (a field left out is kept;
    wrapup_seconds 0 ends wrap-up). Returns {"agent": {agent_id, panel_active, ami_idle,
    wrapup_until, pause_code, outbound_blocked, available, unavailable_reason}}. Setting absolute
    values, it needs no request key. Raises vocabulary.UnknownAgent.
    """
    wrapup_until = roster.KEEP
    if "wrapup_seconds" in request:
        wrapup_until = roster.wrapup_until(request["wrapup_seconds"], now, tz)
    # The UPDATE locks the row; reading it back afterwards raises UnknownAgent for a missing agent.
    roster.set_availability(conn, request["agent_id"], panel_active=request.get("panel_active"),
                            ami_idle=request.get("ami_idle"), wrapup_until=wrapup_until)
    agent = roster.lock_agent(conn, request["agent_id"])
    reason = availability.unavailable_reason(agent, now)
    return {"agent": {
        "agent_id": agent["id"], "panel_active": bool(agent["panel_active"]), "ami_idle": bool(agent["ami_idle"]),
        "wrapup_until": _json_value(agent["wrapup_until"]), "pause_code": agent["pause_code"],
        "outbound_blocked": bool(agent["outbound_blocked"]), "available": reason is None, "unavailable_reason": reason,
    }}


def prune_replies(conn, now, tz):
    """Delete stored replies older than a day (REPLY_KEEP); returns how many went."""
    return queries.prune_engine_replies(conn, before=clock.after(now, -REPLY_KEEP, tz))
