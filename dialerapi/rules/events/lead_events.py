"""Results back to the CRM: the lead events, written with their change, and the feed.

An event is inserted by `record` in the transaction of the change it tells of (a settle, a
release, a held action applied, a disposition, a personal callback's fallback, a number listed or
unlisted, a cap's hold), so
it exists exactly when its change committed, whichever host, process or Galera node made it
(the transactional outbox of rules.events.outbox, kept for the CRM). Types (docs/crm/results.md):

| type                      | when                                                              |
|---------------------------|-------------------------------------------------------------------|
| lead.call_ended           | every settle: the attempt, its outcome and agent, the lead's state |
| lead.disposed             | max tries reached at settle, or a CRM disposition applied          |
| lead.callback_applied     | a CRM callback held during a call, applied at its end or by the sweep |
| lead.callback_fell_back   | a personal callback became anyone's (its fallback, its owner removed) |
| lead.released             | a reservation's lease ran out (or an operator released it)        |
| lead.do_not_call          | the lead's number became listed (a push, a DND disposition, `dnc add`, an import) |
| lead.do_not_call_removed  | the lead's number came off the list (`dnc remove`)                 |
| lead.held                 | a claim held the lead: its number is at a contact cap until `frees_at` |
| lead.hold_ended           | a held lead is due again before its time: an attempt of its number was given back |
| campaign.updated          | a campaign's settings or state changed (rules.campaigns.operations; oli_id and data_id null) |
| campaign.paused           | a campaign was paused                                              |
| campaign.resumed          | a campaign was resumed                                             |
| caller_id.added           | a number was added to the floor's caller IDs (rules.caller_ids.numbers; oli_id and data_id null) |
| caller_id.updated         | a number's pools, daily cap or note changed, or it was set active again |
| caller_id.flagged         | a number was flagged: not presented until set active again          |
| caller_id.retired         | a number was retired: never presented again                          |

Events take their place in the feed (`seq`) once committed, from one sequencer at a time
(`sequence`): a reader that saw place N has seen every place below it. Functions take the
connection first and never commit. Wall-clock datetimes are naive DB_TIMEZONE (decisions.md D2);
an event's UTC instant is the service clock's (clock.utcnow) when it was written.
"""

import json
from datetime import timedelta

import pymysql

from dialerapi.plumbing import clock
from dialerapi.plumbing.db import Conflict, queries
from dialerapi.rules.core import e164

CALL_ENDED = "lead.call_ended"
DISPOSED = "lead.disposed"
CALLBACK_APPLIED = "lead.callback_applied"
CALLBACK_FELL_BACK = "lead.callback_fell_back"
RELEASED = "lead.released"
DO_NOT_CALL = "lead.do_not_call"
DO_NOT_CALL_REMOVED = "lead.do_not_call_removed"
HELD = "lead.held"
HOLD_ENDED = "lead.hold_ended"
# A campaign's changes (rules.campaigns.operations) travel the same feed and webhooks, about no lead.
CAMPAIGN_UPDATED = "campaign.updated"
CAMPAIGN_PAUSED = "campaign.paused"
CAMPAIGN_RESUMED = "campaign.resumed"
CAMPAIGN_TYPES = (CAMPAIGN_UPDATED, CAMPAIGN_PAUSED, CAMPAIGN_RESUMED)
# The floor's caller IDs' changes (rules.caller_ids.numbers), about no lead either.
CALLER_ID_TYPES = ("caller_id.added", "caller_id.updated", "caller_id.flagged", "caller_id.retired")
TYPES = (CALL_ENDED, DISPOSED, CALLBACK_APPLIED, CALLBACK_FELL_BACK, RELEASED, DO_NOT_CALL, DO_NOT_CALL_REMOVED, HELD,
         HOLD_ENDED) + CAMPAIGN_TYPES + CALLER_ID_TYPES

EVENT_PREFIX = "evt_"
SEQ_COUNTER = "lead_event_seq"
SEQUENCE_BATCH = 5000
FEED_MAX = 1000
PRUNE_BATCH = 10000
LEAD_TIMES = ("last_attempt_at", "first_attempt_at", "next_retry_at", "callback_scheduled_at", "created_at",
              "updated_at")


def wall_text(value):
    return clock.format_wall_clock(value)


def lead_state(row):
    """The dial state of a master row as events carry it: {dial_status, priority_id, call_count,
    last_dial_result, disposeRemark, next_retry_at, callback_scheduled_at, callback_agent_id}
    (times 'YYYY-MM-DD HH:MM:SS' DB_TIMEZONE)."""
    return {
        "dial_status": row["dial_status"], "priority_id": row["priority_id"], "call_count": row["call_count"],
        "last_dial_result": row["last_dial_result"], "disposeRemark": row["disposeRemark"],
        "next_retry_at": wall_text(row["next_retry_at"]),
        "callback_scheduled_at": wall_text(row["callback_scheduled_at"]),
        "callback_agent_id": row.get("callback_agent_id"),
    }


def consent_of(row):
    """{type, at ('YYYY-MM-DD HH:MM:SS' DB_TIMEZONE, as pushed), source} of the consent the CRM pushed with
    the lead `row`, or None."""
    if row["consent_type"] is None:
        return None
    return {"type": row["consent_type"], "at": wall_text(row["consent_at"]), "source": row["consent_source"]}


def utc_now():
    """The service clock's instant now, naive UTC to the second, as events and histories store it."""
    return clock.utcnow().replace(tzinfo=None, microsecond=0)


# The row an event about no lead is written with (a campaign's, rules.campaigns.operations): the feed shows
# its oli_id and data_id as null.
NO_LEAD = {"id": 0, "oli_id": "", "data_id": ""}


def record(conn, event_type, row, now, data, dedupe_key=None):
    """Insert one event of `event_type` about the lead `row` (a master row: id, oli_id, data_id)
    with `data` (JSON-able) as its body, in the caller's transaction. `now` is wall-clock DB_TIMEZONE.
    With `dedupe_key`, a second event of the same key raises pymysql IntegrityError."""
    queries.insert_lead_event(
        conn, type=event_type, lead_id=row["id"], oli_id=row["oli_id"], data_id=row["data_id"], occurred_at=now,
        occurred_at_utc=utc_now(), body=json.dumps(data, separators=(",", ":")), dedupe_key=dedupe_key)


def record_many(conn, event_type, rows, now, data_of):
    """One event of `event_type` for each master row of `rows`, its body `data_of(row)`, in one statement."""
    if rows:
        utc = utc_now()
        queries.insert_lead_events(conn, [
            (event_type, row["id"], row["oli_id"], row["data_id"], now, utc,
             json.dumps(data_of(row), separators=(",", ":")), None) for row in rows])


def call_ended(conn, row, attempt, now):
    """lead.call_ended for a settle: `attempt` is the call attempt as recorded (call_id, outcome, agent_id,
    call_type, started_at, ended_at, answered_at, agent_connected_at, connect_seconds,
    late_connect, hangup_by, hangup_cause, reservation_id, caller_id: the E.164 digits the call
    presented or None), `row` the lead as the hangup left it,
    with the consent the call was made under (`consent`, consent_of)."""
    record(conn, CALL_ENDED, row, now, {
        "call_id": attempt["call_id"], "outcome": attempt["outcome"], "agent_id": attempt["agent_id"], "call_type": attempt["call_type"],
        "reservation_id": attempt["reservation_id"], "started_at": wall_text(attempt["started_at"]),
        "ended_at": wall_text(attempt["ended_at"]), "answered_at": wall_text(attempt["answered_at"]),
        "agent_connected_at": wall_text(attempt["agent_connected_at"]),
        "connect_seconds": attempt["connect_seconds"],
        "late_connect": None if attempt["late_connect"] is None else bool(attempt["late_connect"]),
        "hangup_by": attempt["hangup_by"], "hangup_cause": attempt["hangup_cause"], "consent": consent_of(row),
        "caller_id": None if attempt.get("caller_id") is None else e164.text(attempt["caller_id"]),
        "lead": lead_state(row)})


def disposed(conn, row, now, reason, action=None, applied_by=None):
    """lead.disposed: `reason` "max_tries" (the dialer gave up) or "crm" (a CRM disposition, `action`
    its sales_pending_actions row; `applied_by` "settle", "release" or "sweep" when it was held)."""
    data = {"reason": reason, "disposeRemark": row["disposeRemark"], "held": applied_by is not None,
            "applied_by": applied_by, "lead": lead_state(row)}
    if action is not None:
        data["action"] = filed_action(action)
    record(conn, DISPOSED, row, now, data)


def filed_action(action):
    """Who filed a CRM action and what it said: {id, action, reason, scheduled_at, callbackAgentId,
    agentId, extension, callbackType, workStatus, subDisposition, remarks, created_at}."""
    return {
        "id": action.get("id"), "action": action["action"], "reason": action.get("reason"),
        "scheduled_at": wall_text(action.get("scheduled_at")), "callbackAgentId": action.get("callbackAgentId"),
        "agentId": action.get("agentId"), "extension": action.get("extension"),
        "callbackType": action.get("callbackType"), "workStatus": action.get("workStatus"),
        "subDisposition": action.get("subDisposition"), "remarks": action.get("remarks"),
        "created_at": wall_text(action.get("created_at")),
    }


def held_applied(conn, row, action, now, applied_by):
    """The event of a held CRM action applied at the end of a call (`applied_by` "settle" or
    "release") or by the sweep: lead.callback_applied, or lead.disposed for a disposition."""
    if action["action"] == "callback":
        record(conn, CALLBACK_APPLIED, row, now, {"applied_by": applied_by, "action": filed_action(action),
                                                   "lead": lead_state(row)})
    else:
        disposed(conn, row, now, "crm", action, applied_by)


def released(conn, before, row, now):
    """lead.released: the reservation `before` held (the locked row before the release) ended unsettled."""
    record(conn, RELEASED, row, now, {"reservation_id": before["reservation_id"],
                                      "reserved_at": wall_text(before.get("reserved_at")), "lead": lead_state(row)})


def fell_back(conn, row, now, cause):
    """lead.callback_fell_back for a personal callback (`row`: id, oli_id, data_id,
    callback_agent_id, callback_scheduled_at) that became anyone's: `cause` "fallback" (it waited
    past personal_callback_fallback_minutes) or "owner_removed". One event per lead and due time."""
    key = f"fell_back:{row['id']}:{row['callback_scheduled_at']}"
    try:
        record(conn, CALLBACK_FELL_BACK, row, now, {
            "cause": cause, "owner": row["callback_agent_id"],
            "callback_scheduled_at": wall_text(row["callback_scheduled_at"])}, dedupe_key=key)
    except pymysql.err.IntegrityError:
        raise Conflict(f"the fallback of lead {row['oli_id']} was told by another process") from None


def fallen_back(conn, now, config, tz, max_rows=500):
    """Tell of every personal callback past its fallback at `now` not yet told of (rules.leads.callbacks);
    run by the sweep. Each lead's fallback is its campaign's personal_callback_fallback_minutes
    (config.of), the floor's for a form_type with no campaign; at most `max_rows` a
    fallback. Returns how many events were written."""
    by_minutes = {}
    for form_type in config.campaigns:
        by_minutes.setdefault(config.of(form_type).personal_callback_fallback_minutes, []).append(form_type)
    campaigns = tuple(config.campaigns) or ("",)
    # The floor's minutes for every form_type without a campaign; a campaign's for its own.
    reads = [(config.personal_callback_fallback_minutes, True, ("",), campaigns)]
    reads += [(minutes, False, tuple(form_types), ("",)) for minutes, form_types in sorted(
        by_minutes.items(), key=lambda item: (item[0] is None, item[0] or 0))]
    told = 0
    for minutes, any_form_type, form_types, other_form_types in reads:
        if minutes is None:
            continue
        edge = clock.after(now, -timedelta(minutes=minutes), tz)
        for row in queries.fallen_back_callbacks(conn, edge=edge, any_form_type=any_form_type, form_types=form_types,
                                                 other_form_types=other_form_types, max_rows=max_rows):
            fell_back(conn, row, now, "fallback")
            told += 1
    return told


def listed(conn, rows, now, source, on_list=True):
    """lead.do_not_call for each lead of `rows` (id, oli_id, data_id, phone_e164) whose number was
    just listed by `source` (push, dnd, cli, an import's source, or claim: listed while the lead was
    live, marked by the first claim to read it after); with `on_list` False,
    lead.do_not_call_removed for leads whose number came off the list (cli, or claim)."""
    record_many(conn, DO_NOT_CALL if on_list else DO_NOT_CALL_REMOVED, rows, now,
                lambda row: {"source": source,
                             "phone_e164": None if row["phone_e164"] is None else str(row["phone_e164"])})


def held(conn, row, now, cap, frees_at):
    """lead.held: a claim passed the lead over and moved its due time (`row`: as the hold left it)
    because its number is at the contact cap `cap` until `frees_at` (wall-clock DB_TIMEZONE)."""
    record(conn, HELD, row, now, {"cap": cap, "frees_at": wall_text(frees_at), "lead": lead_state(row)})


def hold_ended(conn, rows, now, reason):
    """lead.hold_ended for each lead of `rows` (as the end left them, with `contact_cap`: the cap
    that held them) due again before its cap freed it: `reason` "attempt_given_back" (an originate
    failure took its number's attempt back)."""
    record_many(conn, HOLD_ENDED, rows, now, lambda row: {"reason": reason, "cap": row["contact_cap"],
                                                          "lead": lead_state(row)})


def sequence(conn, max_rows=SEQUENCE_BATCH):
    """Give the committed events without a feed place the next places, in id order; return how many.

    One sequencer at a time: the places are counted in dialerapi_counters (SEQ_COUNTER), whose row
    this transaction locks, so a later sequencer's places are higher and commit later (on Galera,
    two nodes at once conflict on that row and one runs again). Without unsequenced rows it locks nothing.
    """
    if not queries.unsequenced_events(conn, max_rows=1):
        return 0
    counter = queries.lock_counter(conn, name=SEQ_COUNTER)
    if counter is None:
        try:
            queries.insert_counter(conn, name=SEQ_COUNTER, value=int(queries.last_seq(conn)))
        except pymysql.err.IntegrityError:
            raise Conflict("the event sequence was started by another process") from None
        counter = queries.lock_counter(conn, name=SEQ_COUNTER)
    ids = [row["id"] for row in queries.unsequenced_events(conn, max_rows=max_rows)]
    if not ids:
        return 0
    queries.start_sequence(conn, base=counter["value"])
    count = queries.sequence_events(conn, ids=ids)
    queries.set_counter(conn, name=SEQ_COUNTER, value=counter["value"] + count)
    return count


def public_event(row):
    """The event as the feed and the webhooks carry it: {id ("evt_..."), type, occurred_at (ISO 8601
    UTC), occurred_at_local ('YYYY-MM-DD HH:MM:SS' DB_TIMEZONE), oli_id, data_id, data}."""
    return {"id": f"{EVENT_PREFIX}{row['id']}", "type": row["type"],
            "occurred_at": clock.format_utc(row["occurred_at_utc"]),
            "occurred_at_local": wall_text(row["occurred_at"]), "oli_id": row["oli_id"] or None,
            "data_id": row["data_id"] or None, "data": json.loads(row["body"])}


def feed(conn, after, limit):
    """GET /api/lead-events: the events after feed place `after` (0: from the oldest kept), at most
    `limit`. Returns {"events": [public_event], "next": the place to resume from (str)}."""
    rows = list(queries.events_after(conn, after=after, max_rows=limit))
    return {"events": [public_event(row) for row in rows], "next": str(rows[-1]["seq"] if rows else after)}


def prune(conn, before_utc):
    """Delete events that occurred before `before_utc` (naive UTC), at most PRUNE_BATCH; return how many."""
    return queries.prune_lead_events(conn, before=before_utc, max_rows=PRUNE_BATCH)


