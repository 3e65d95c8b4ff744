"""CRM after-call actions: send-callback-request, pending callbacks and dispositions, and the sweep.

lead-intake-api.md: POST /api/send-callback-request, /api/pending-callbacks,
/api/pending-dispositions, "Pending row statuses"; decisions.md D5 and D6. The dial-state changes
themselves come from dialstate; this module decides when they apply. Every function here takes the
connection first and runs inside the caller's transaction, except `sweep`, which runs one
transaction per oli_id.
"""

import logging
from datetime import timedelta

from dialerapi.plumbing import clock
from dialerapi.plumbing.clock import format_wall_clock
from dialerapi.plumbing.db import inserted_id, queries
from dialerapi.rules.agents import roster
from dialerapi.rules.compliance import claim_checks, do_not_call
from dialerapi.rules.config import dialer as dialer_config
from dialerapi.rules.core import vocabulary
from dialerapi.rules.events import lead_events
from dialerapi.rules.leads import callbacks, dialstate, transitions

log = logging.getLogger(__name__)

SWEEP_MIN_AGE = timedelta(seconds=30)
SWEEP_BATCH = 500
AUDIT_FIELDS = ("agentId", "extension", "callbackType", "workStatus", "subDisposition", "remarks")
CLEARED_BY = {"callback": "callback", "dispose": "disposition"}


def request_callback(conn, oli_id, scheduled_at, now, owner=None):
    """POST /api/send-callback-request: Callback at `scheduled_at`, priority kept, dial-state reset.

    `owner`: the employee id the callback waits for (`callbackAgentId`; rules.leads.callbacks),
    None for anyone. Returns the response's `lead` object {oli_id, data_id, dial_status,
    callback_scheduled_at ('YYYY-MM-DD HH:MM:SS' in DB_TIMEZONE)}. Raises
    vocabulary.UnknownAgent (404 unknown_agent) for an owner not on the roster, vocabulary.UnknownLead
    (404) and vocabulary.LeadInFlight (409) when the lead is Calling + reserved; nothing is written.
    """
    callbacks.check_owner(conn, owner)
    row = dialstate.lock_lead(conn, oli_id)
    if vocabulary.is_live(row):
        raise vocabulary.LeadInFlight(oli_id)
    row = dialstate.write_lead(conn, row, transitions.callback_changes(scheduled_at, owner=owner), now)
    return {
        "oli_id": row["oli_id"],
        "data_id": row["data_id"],
        "dial_status": row["dial_status"],
        "callback_scheduled_at": format_wall_clock(row["callback_scheduled_at"]),
    }


def submit_action(conn, action, now, tz):
    """Store a CRM callback (`action="callback"`, scheduled_at) or disposition (`action="dispose"`, reason).

    In one transaction (D5): lock the lead; supersede its older pending rows (latest wins); store
    the row, `applied` with the change made now when the lead is not live, `pending` (held until
    settle or the sweep) when it is; clear every open missed activity of the oli_id (cleared_by
    callback or disposition), unblock those agents and queue their events. `action` carries
    oli_id, action, scheduled_at or reason, the optional audit fields and, for a callback, the
    optional callbackAgentId (its owner: kept while the row is held); `now` is
    wall-clock in `tz`. A disposition applied now is told to the CRM (lead.disposed; a held one
    when it is applied). Returns the stored row as a dict with its `id` and `status`. Raises
    vocabulary.UnknownLead, vocabulary.UnknownAgent for a callbackAgentId not on the roster.

    A disposition whose reason is one of sales_dialer_config.dnd_reasons (default `DND`, compared
    without case) lists the lead's phone on the do-not-call list at once, even while the call is
    live and the disposition itself is held.
    """
    callbacks.check_owner(conn, action.get("callbackAgentId"))
    row = dialstate.lock_lead(conn, action["oli_id"])
    live = vocabulary.is_live(row)
    # Only a disposition reads the config (its do-not-call reasons, disposed_priority_id): a callback
    # is the CRM's most frequent action, and spared the read.
    config = dialer_config.load_config(conn).of(row["form_type"]) if action["action"] == "dispose" else None
    if action["action"] == "dispose" and str(action.get("reason") or "").strip().lower() in config.dnd_reasons:
        number = claim_checks.number_of(row["phone_number"], config)
        if number is not None:
            do_not_call.add(conn, [number], do_not_call.DND, now, oli_id=action["oli_id"])
    queries.supersede_pending(conn, oli_id=action["oli_id"])
    stored = {
        "oli_id": action["oli_id"], "action": action["action"], "scheduled_at": action.get("scheduled_at"),
        "reason": action.get("reason"), "status": "pending" if live else "applied", "created_at": now,
        "applied_at": None if live else now, "callbackAgentId": action.get("callbackAgentId"),
        **{field: action.get(field) for field in AUDIT_FIELDS},
    }
    queries.insert_pending_action(conn, **stored)
    stored["id"] = inserted_id(conn)
    if not live:
        applied = dialstate.apply_action(conn, row, stored, now, config)
        if action["action"] == "dispose":
            lead_events.disposed(conn, applied, now, "crm", stored)
    roster.clear_for_lead(conn, action["oli_id"], CLEARED_BY[action["action"]], now, tz)
    return stored


def apply_held(conn, oli_id, now):
    """Apply the held action of one oli_id if its lead is no longer live.

    Returns "applied", "live" (still on a call: left pending) or "failed" (the oli_id no longer
    exists: its pending rows become `failed`).
    """
    row = queries.lock_lead(conn, oli_id=oli_id)
    if row is None:
        queries.fail_pending(conn, oli_id=oli_id)
        return "failed"
    if vocabulary.is_live(row):
        return "live"
    dialstate.apply_latest_pending(conn, row, now, dialer_config.load_config(conn).of(row["form_type"]), "sweep")
    return "applied"


def sweep(db, now, tz, config=None):
    """The sweep (D6): apply pending rows older than 30 s whose lead is not live; fail those whose oli_id is gone.

    Catches leads that an engine settled without calling settle. With `config` (the app's
    settings) it first releases the reservations whose lease ran out (`release_expired`), which
    catches leads whose engine never settles at all. One transaction per oli_id, at most
    SWEEP_BATCH oli_ids per call; last, tells the CRM of the personal callbacks that fell back since
    (lead_events.fallen_back). `now` is wall-clock in `tz`. Returns counts {"applied": n, "live": n,
    "failed": n, "fell_back": n}, and "released": n with `config`.
    """
    counts = {}
    if config is not None:
        counts["released"] = len(release_expired(
            db, now, tz, lease_seconds=config["RESERVATION_LEASE_SECONDS"],
            grace_minutes=config["MISSED_ACTIVITY_GRACE_MINUTES"], release_retry_ms=config["RELEASE_RETRY_MS"]))
    cutoff = clock.after(now, -SWEEP_MIN_AGE, tz)
    due = db.run(lambda conn: [r["oli_id"] for r in queries.due_pending_oli_ids(
        conn, cutoff=cutoff, max_rows=SWEEP_BATCH)])
    counts.update(applied=0, live=0, failed=0)
    for oli_id in due:
        counts[db.run(apply_held, oli_id, now)] += 1
    counts["fell_back"] = db.run(
        lambda conn: lead_events.fallen_back(conn, now, dialer_config.load_config(conn), tz))
    return counts


def release_expired(db, now, tz, *, lease_seconds, grace_minutes, release_retry_ms):
    """Release every reservation older than `lease_seconds` (docs/engine/api.md, "Reservation lease"), one transaction each.

    Each goes as an originate failure would (dialstate.release), unless it was settled or released
    since it was read (its reservation_id is no longer the lead's). Logs a warning per lead.
    Returns the oli_ids released.
    """
    released = []
    for expired in db.run(dialstate.expired_reservations, now, tz, lease_seconds):
        try:
            db.run(dialstate.release, expired["oli_id"], now, tz=tz, grace_minutes=grace_minutes,
                   release_retry_ms=release_retry_ms, reservation_id=expired["reservation_id"])
        except (vocabulary.UnknownLead, vocabulary.NotLive, vocabulary.StaleReservation):
            continue
        log.warning("released the reservation of lead %s made at %s: no settle within %d s (reservation lease)",
                    expired["oli_id"], format_wall_clock(expired["reserved_at"]), lease_seconds)
        released.append(expired["oli_id"])
    return released
