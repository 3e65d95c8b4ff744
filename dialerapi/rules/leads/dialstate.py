"""The dial-state rules shared by the HTTP routes and the engine-facing functions.

lead-intake-api.md, "States and transitions", "Dial-state reset" and "Claim and retry rules";
decisions.md D6. This module is the one implementation of settle, of release, of applying a held
CRM action and of locking and writing a lead's dial state; rules.core.vocabulary holds the vocabulary and
the pure transitions ("is this lead live", the dial-state reset, the hangup transitions), every
name of which is also reachable here as dialstate.NAME. Functions that touch the database take the
connection first and never commit.

All datetimes are naive wall-clock values in DB_TIMEZONE (decisions.md D2); `tz` is that zone (a
ZoneInfo). Elapsed-time arithmetic and daylight saving follow the rules of `clock`.
"""

from datetime import timedelta

from dialerapi.plumbing import clock
from dialerapi.plumbing.db import inserted_id, queries
from dialerapi.rules.caller_ids import choice as caller_id_choice
from dialerapi.rules.compliance import abandons, contact_caps, do_not_call
from dialerapi.rules.config.dialer import load_config
from dialerapi.rules.core.kinds import ClaimKind
from dialerapi.rules.core.vocabulary import (
    DISPOSED,
    OUTCOMES,
    NotLive,
    StaleReservation,
    UnknownAgent,
    UnknownLead,
    is_live,
)
from dialerapi.rules.events import lead_events
from dialerapi.rules.events.outbox import notify
from dialerapi.rules.leads.transitions import (
    CALLBACK_PRIORITY_ID,
    DIAL_STATE_COLUMNS,
    callback_changes,
    disposition_changes,
    hangup_changes,
)


def write_lead(conn, row, changes, now):
    """Write `changes` onto the locked master `row`; return the row as it now stands.

    `changes` may set caller_id (a claim: the number it presents, rules.caller_ids.choice). When
    `changes` set callback_agent_id (a claim, a callback, a disposition), the owners before and after are told their list of personal callbacks changed (events.notify).
    When they hold abandons.CALL_MOMENTS_FORGOTTEN (the end of a call), the call's moments are
    cleared in the same statement.
    """
    updated = {**row, **changes, "updated_at": now}
    set_owner = "callback_agent_id" in changes
    queries.write_dial_state(conn, id=row["id"], updated_at=now, set_owner=set_owner,
                             callback_agent_id=changes.get("callback_agent_id"),
                             set_caller_id="caller_id" in changes, caller_id=changes.get("caller_id"),
                             forget_call_moments=changes.keys() >= abandons.CALL_MOMENTS_FORGOTTEN.keys(),
                             **{c: updated[c] for c in DIAL_STATE_COLUMNS})
    if set_owner:
        notify(conn, [owner for owner in (row.get("callback_agent_id"), changes["callback_agent_id"]) if owner], now)
    return updated


def lock_lead(conn, oli_id):
    """SELECT ... FOR UPDATE the master row of `oli_id`. Raises UnknownLead."""
    row = queries.lock_lead(conn, oli_id=oli_id)
    if row is None:
        raise UnknownLead(oli_id)
    return row


def apply_action(conn, row, action, now, config):
    """Apply a CRM action (a sales_pending_actions row or one about to be stored) to a lead that is not live."""
    if action["action"] == "callback":
        changes = callback_changes(action["scheduled_at"], priority_id=CALLBACK_PRIORITY_ID,
                                   owner=action.get("callbackAgentId"))
    else:
        changes = disposition_changes(action["reason"], config)
    return write_lead(conn, row, changes, now)


def apply_latest_pending(conn, row, now, config, applied_by):
    """Apply the newest `pending` action of the lead (latest wins) and supersede any older ones,
    and tell the CRM (lead_events.held_applied; `applied_by`: "settle", "release" or "sweep").

    The lead must be locked and not live. Returns (row, applied action or None).
    """
    action = queries.latest_pending_action(conn, oli_id=row["oli_id"])
    if action is None:
        return row, None
    row = apply_action(conn, row, action, now, config)
    queries.mark_pending_applied(conn, id=action["id"], applied_at=now)
    queries.supersede_pending(conn, oli_id=row["oli_id"])
    lead_events.held_applied(conn, row, action, now, applied_by)
    return row, {**action, "status": "applied", "applied_at": now}


def settle(conn, oli_id, outcome, now, *, tz, grace_minutes, release_retry_ms, agent_id=None, call_type="outbound",
           hangup_by=None, hangup_cause=None, started_at=None, reservation_id=None):
    """Settle a hangup reported by the dialing engine (decisions.md D6), in the caller's transaction.

    Locks the master row; records the call attempt in sales_call_attempts, with the form_type it
    was dialed in, when the customer answered and when an agent was connected; applies
    the hangup transition (`hangup_changes`); ends the reservation; ends the agent's open missed
    activity for the lead and applies the latest held CRM action (`end_call`); last, counts the
    call in its form_type's abandon counts (abandons.count). The CRM is told in the same
    transaction: lead.call_ended, lead.disposed when max tries were reached, and the
    held action's own event (rules.events.lead_events). `now` and `started_at` are
    wall-clock datetimes in `tz` (DB_TIMEZONE). `reservation_id`, when given, must be the lead's
    current reservation (the one its claim answered), so a settle that comes after its reservation
    was released cannot settle a later call of the same lead.

    Returns {"lead": the row as it now stands, "pending": the action applied or None}. Raises
    UnknownLead, UnknownAgent for an `agent_id` not on the roster, NotLive when the lead is not
    Calling + reserved, StaleReservation, KeyError for an unknown outcome. Nothing is written
    when it raises.
    """
    if outcome not in OUTCOMES:
        raise KeyError(outcome)
    row = lock_lead(conn, oli_id)
    if agent_id is not None and not queries.agent_exists(conn, agent_id=agent_id):
        raise UnknownAgent(agent_id)
    check_reservation(row, reservation_id)
    config = load_config(conn).of(row["form_type"])
    answered_at, connected_at = abandons.call_moments(row)
    verdict = abandons.judge(outcome, answered_at, connected_at, tz, config)
    attempt = dict(
        agent_id=agent_id, call_type=call_type, started_at=started_at, ended_at=now, hangup_by=hangup_by,
        hangup_cause=hangup_cause, reservation_id=row["reservation_id"], answered_at=answered_at,
        agent_connected_at=connected_at, connect_seconds=verdict["connect_seconds"],
        late_connect=None if verdict["connect_seconds"] is None else int(verdict["late_connect"]),
    )
    # The number the claim presented (an inbound call presents none: the customer dialed).
    attempt["caller_id"] = row.get("caller_id") if call_type != ClaimKind.INBOUND else None
    if OUTCOMES[outcome][0] is None:
        # It rang nobody; the leads it held are due again, and its caller ID presented no call.
        lead_events.hold_ended(conn, contact_caps.forget(conn, row, now), now, "attempt_given_back")
        if attempt["caller_id"]:
            caller_id_choice.give_back(conn, row)
    queries.insert_call_attempt(conn, lead_id=row["id"], oli_id=oli_id, result=OUTCOMES[outcome][1],
                                form_type=row["form_type"], **attempt)
    attempt["call_id"] = inserted_id(conn)
    changes = hangup_changes(
        row, outcome, now, config, tz, call_type=call_type, hangup_by=hangup_by, hangup_cause=hangup_cause,
        started_at=started_at, release_retry_ms=release_retry_ms,
        outcome_attempts=_outcome_attempts(conn, row, outcome, config, started_at or now),
    )

    def tell(ended):
        lead_events.call_ended(conn, ended, {**attempt, "outcome": outcome}, now)
        if changes.get("dial_status") == DISPOSED:  # max_tries, or an outcome's maximum
            lead_events.disposed(conn, ended, now, "max_tries")

    result = end_call(conn, row, changes, now, config, tz=tz, grace_minutes=grace_minutes, agent_id=agent_id,
                      tell=tell, applied_by="settle")
    abandons.count(conn, row["form_type"], now, verdict)
    return result


def _outcome_attempts(conn, row, outcome, config, attempt_at):
    """The lead's attempts of this cycle with `outcome`, the one being settled among them, when the
    outcome has a maximum of its own; 0 otherwise, without a read."""
    if config.retry_rule(outcome)[1] is None:
        return 0
    return queries.outcome_attempts(conn, lead_id=row["id"], result=OUTCOMES[outcome][1],
                                    since=row["first_attempt_at"] or attempt_at)


def check_reservation(row, reservation_id=None):
    """Raise NotLive unless the locked `row` is live; StaleReservation when `reservation_id` is given
    and is not the row's current reservation (also when the row is no longer live)."""
    if reservation_id is not None and (not is_live(row) or row["reservation_id"] != reservation_id):
        raise StaleReservation(row["oli_id"])
    if not is_live(row):
        raise NotLive(row["oli_id"])


def end_call(conn, row, changes, now, config, *, tz, grace_minutes, agent_id=None, tell=None, applied_by="settle"):
    """Write the end of a live call onto the locked `row`, then what follows from it (D6).

    `tell(row)`, when given, writes the CRM's events of the call's end (rules.events.lead_events) with the
    row as the end left it, before the held action's own; `applied_by` names the end for that one.

    `changes` are the columns the end of the call writes (a hangup transition, or a release), and
    the end of a personal callback (callback_agent_id: its owner is told). Ends
    the open missed activity of `agent_id` (of every agent when None) for the lead: ended_at = now,
    due_at = `grace_minutes` of elapsed time later, with their exact UTC instants beside them, and
    queues the events of those agents and of the agent the call was claimed for (the board stops
    showing its campaign); then applies the latest held CRM action of the oli_id, which wins.
    Returns {"lead": the row as it now stands, "pending": the action applied or None}.
    """
    # The agent the call was claimed for shows its campaign on the board while it rings (claims._claim).
    claimed_for = [r["agent_id"] for r in queries.agents_claiming(
        conn, lead_id=row["id"], reservation_id=row["reservation_id"])] if row.get("reservation_id") else []
    changes = {**changes, **abandons.end_of_call(row)}
    if row.get("callback_agent_id") is not None:
        # The call of a personal callback ends it; its owner's list is told.
        changes = {**changes, "callback_agent_id": None}
    row = write_lead(conn, row, changes, now)
    grace = timedelta(minutes=grace_minutes)
    ended_at_utc = clock.to_utc(now, tz)
    ended = queries.end_missed_activities(
        conn, lead_id=row["id"], agent_id=agent_id, ended_at=now, due_at=clock.after(now, grace, tz),
        ended_at_utc=ended_at_utc, due_at_utc=ended_at_utc + grace,
    )
    told = [r["agent_id"] for r in queries.agents_with_open_activities(conn, oli_id=row["oli_id"])] if ended else []
    notify(conn, told + claimed_for, now)
    if tell is not None:
        tell(row)
    row = _unmark_if_unlisted(conn, row, now)
    row, applied = apply_latest_pending(conn, row, now, config, applied_by)
    return {"lead": row, "pending": applied}


def _unmark_if_unlisted(conn, row, now):
    # A removal from the do-not-call list leaves a live lead's mark alone (dnc.mark_leads), and a
    # marked lead is never a claim's candidate, so only its call's end can clear it (an inbound
    # call of a listed number, dnc_allow_inbound). One read, of marked leads only.
    if not row["do_not_call"] or (row["phone_e164"] is not None and queries.number_listed(conn, phone=row["phone_e164"])):
        return row
    queries.set_lead_mark(conn, id=row["id"], listed=False)
    row = {**row, "do_not_call": 0}
    lead_events.listed(conn, [row], now, do_not_call.CALL_END, on_list=False)
    return row


def release(conn, oli_id, now, *, tz, grace_minutes, release_retry_ms, reservation_id=None):
    """End a live reservation that no settle ended (docs/engine/api.md, "Reservation lease"), in the caller's transaction.

    What an originate failure does, without a call attempt: the status from before the claim is
    restored, call_count and the attempt times stay as they were, the lead is retried after
    `release_retry_ms`; the open missed activities of the lead start their grace window and the
    latest held CRM action is applied (`end_call`). `reservation_id`, when given, must still be
    the lead's (the sweep passes the one it found expired). Returns what `end_call` returns.
    Raises UnknownLead, NotLive, StaleReservation.
    """
    row = lock_lead(conn, oli_id)
    check_reservation(row, reservation_id)
    config = load_config(conn).of(row["form_type"])
    changes = hangup_changes(row, "originate_failed", now, config, tz, release_retry_ms=release_retry_ms)
    return end_call(conn, row, changes, now, config, tz=tz, grace_minutes=grace_minutes,
                    tell=lambda ended: lead_events.released(conn, row, ended, now), applied_by="release")


def expired_reservations(conn, now, tz, lease_seconds):
    """The live leads whose reservation is older than `lease_seconds` of elapsed time, oldest first.

    Returns [{"oli_id", "reservation_id", "reserved_at"}]. Measured between instants, so a lease
    never ends early across a daylight-saving change. Reservations without reserved_at (an
    engine that reserves rows in SQL itself) never expire.
    """
    lease = timedelta(seconds=lease_seconds)
    # The wall-clock bound lets the index skip young rows; it is never earlier than the exact one.
    rows = queries.reservations_before(conn, before=clock.after(now, -lease, tz))
    deadline = clock.instant(now, tz) - lease
    return [row for row in rows if clock.instant(row["reserved_at"], tz) <= deadline]


def live_reservations(conn, now, tz):
    """The live reservations, for /health and /metrics (docs/engine/api.md, "Reservation lease"), in one statement.

    Returns {"live": leads Calling + reserved, "unleased": those without reserved_at (no lease),
    "oldest_seconds": elapsed seconds since the oldest reserved_at, or None when there is none}.
    """
    row = queries.live_reservations(conn)
    oldest = row["oldest"]
    age = None if oldest is None else max(0, round((clock.instant(now, tz) - clock.instant(oldest, tz)).total_seconds()))
    return {"live": int(row["live"]), "unleased": int(row["without_lease"]), "oldest_seconds": age}
