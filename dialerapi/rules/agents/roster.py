"""Agents: the roster, missed activities, outbound blocking and the event outbox.

lead-intake-api.md "Missed activity", "Claim and retry rules" 6 and GET /api/missed-activities;
decisions.md D1, D7 and D9. Functions take the connection first and run in the caller's
transaction. Times are naive wall-clock DB_TIMEZONE datetimes (`tz` is that zone), except in the
HTTP item shape, which gives ISO 8601 UTC (D2): a missed activity keeps the exact UTC instants of
its times beside them (`*_utc` columns), because a wall-clock time cannot say which 01:30 of a
fall-back night it was.
"""

import re
from datetime import timedelta

from dialerapi.plumbing import clock
from dialerapi.plumbing.db import inserted_id, queries
from dialerapi.rules.agents import availability, state_history
from dialerapi.rules.compliance import abandons
from dialerapi.rules.core import vocabulary
from dialerapi.rules.core.vocabulary import UnknownAgent
from dialerapi.rules.events.outbox import notify
from dialerapi.rules.leads import callbacks, catalog, dialstate

MAX_ITEMS = 100
# The calls that open a missed activity when they connect: bridged outgoing calls and redials.
CONNECTED_CALL_TYPES = ("outbound", vocabulary.REDIAL)
EXTENSION = re.compile(r"[0-9]{3,16}")


class UnknownExtension(LookupError):
    """No agent has this extension (HTTP 404 `unknown_extension`)."""


class InvalidPause(ValueError):
    """An agent.pause the rules refuse; `reason` is `invalid_pause_reason` or `invalid_pause_note` (D9)."""

    def __init__(self, reason):
        super().__init__(reason)
        self.reason = reason


class RosterError(ValueError):
    """A roster change that cannot be made (bad extension, taken extension, unknown priority)."""


def find_agent(conn, agent_id=None, extension=None):
    """The sales_agents row for an employee id or an extension. Raises UnknownAgent / UnknownExtension."""
    if agent_id is not None:
        agent = queries.get_agent(conn, agent_id=agent_id)
        if agent is None:
            raise UnknownAgent(agent_id)
        return agent
    agent = queries.get_agent_by_extension(conn, extension=extension)
    if agent is None:
        raise UnknownExtension(extension)
    return agent


def save_agent(conn, agent_id, extension, name, skills=None, priorities=None):
    """Add or update an agent (sales_agents), replacing skills (form_types) and allowed priorities when given.

    `priorities` empty means every priority is allowed (D1). Raises RosterError for an extension
    that is not 3-16 digits or belongs to another agent.
    """
    if not EXTENSION.fullmatch(str(extension)):
        raise RosterError(f"extension {extension!r} must be 3-16 digits")
    other = queries.get_agent_by_extension(conn, extension=str(extension))
    if other is not None and other["id"] != agent_id:
        raise RosterError(f"extension {extension} already belongs to agent {other['id']}")
    queries.upsert_agent(conn, agent_id=agent_id, extension=str(extension), name=name)
    if skills is not None:
        queries.delete_agent_skills(conn, agent_id=agent_id)
        if skills:
            queries.insert_agent_skills(conn, [{"agent_id": agent_id, "form_type": s} for s in sorted(set(skills))])
    if priorities is not None:
        queries.delete_agent_priorities(conn, agent_id=agent_id)
        if priorities:
            queries.insert_agent_priorities(
                conn, [{"agent_id": agent_id, "priority_id": p} for p in sorted(set(priorities))]
            )


def remove_agent(conn, agent_id, now):
    """Remove an agent with their skills and priorities; their missed-activity history stays, and
    their personal callbacks become anyone's at once, told to the CRM at `now`
    (wall-clock DB_TIMEZONE). Raises UnknownAgent."""
    find_agent(conn, agent_id=agent_id)
    queries.delete_agent_skills(conn, agent_id=agent_id)
    queries.delete_agent_priorities(conn, agent_id=agent_id)
    queries.delete_agent(conn, agent_id=agent_id)
    # After the delete: a CRM action storing this owner holds the row in share mode until it commits.
    callbacks.release_owner(conn, agent_id, now)
    # The supervisor boards hear of the removal at the next poll (without it, a board
    # whose last poll read the agent just before the delete kept showing them).
    notify(conn, [agent_id], now)


def with_lists(row):
    """An agent row whose `skills` and `priorities` (';'-separated from SQL) become lists; no priorities = all allowed."""
    return {**row, "skills": row["skills"].split(";") if row["skills"] else [],
            "priorities": [int(p) for p in row["priorities"].split(";")] if row["priorities"] else []}


def list_agents(conn):
    """Every agent with `skills` and `priorities` as lists (priorities empty = all allowed)."""
    return [with_lists(row) for row in queries.list_agents(conn)]


def open_missed_activity(conn, oli_id, agent_id, now, tz, call_type="outbound"):
    """A bridged outgoing or redial call connected: open a missed activity for the agent and lead.

    connected_at is `now` (wall-clock in `tz`); ended_at and due_at stay NULL while the call is
    live, and settle sets them. Only a live lead (Calling + reserved) has a call to connect: an
    activity opened on any other would never be ended by a settle and would block the agent for a
    call that never happened. The first of a reservation is when an agent took the call
    (abandons.mark_agent_connected). Returns the new row's id. Raises
    vocabulary.UnknownLead, UnknownAgent, vocabulary.NotLive.
    """
    lead = dialstate.lock_lead(conn, oli_id)
    agent = find_agent(conn, agent_id=agent_id)
    if not vocabulary.is_live(lead):
        raise vocabulary.NotLive(oli_id)
    abandons.mark_agent_connected(conn, lead, now)
    queries.insert_missed_activity(
        conn, agent_id=agent_id, lead_id=lead["id"], oli_id=oli_id, call_type=call_type,
        extension=agent["extension"], connected_at=now, connected_at_utc=clock.to_utc(now, tz),
    )
    activity_id = inserted_id(conn)
    notify(conn, [agent_id], now)
    return activity_id


def clear_for_lead(conn, oli_id, cleared_by, now, tz):
    """Clear every open missed activity of `oli_id` (any agent) and unblock those agents at once (D7).

    Returns the agent ids whose list changed; their events are queued.
    """
    agent_ids = [row["agent_id"] for row in queries.agents_with_open_activities(conn, oli_id=oli_id)]
    if not agent_ids:
        return []
    queries.clear_missed_activities(conn, oli_id=oli_id, cleared_at=now, cleared_by=cleared_by)
    unblocked = refresh_blocking(conn, now, tz, agent_ids)
    notify(conn, set(agent_ids) - set(unblocked), now)
    return agent_ids


def refresh_blocking(conn, now, tz, agent_ids=None):
    """Make sales_agents.outbound_blocked equal "has an uncleared overdue activity" (D7).

    For every agent (the blocking job), or only `agent_ids` (a CRM action that cleared their
    activities). `now` is wall-clock in `tz`; overdue compares exact instants. Returns
    {agent_id: blocked} for the agents whose flag changed; their events are queued.
    """
    changed = {}
    rows = queries.agents_whose_block_changed(
        conn, now=now, now_utc=clock.to_utc(now, tz), all_agents=agent_ids is None,
        agent_ids=tuple(agent_ids or ()) or (0,),
    )
    for row in rows:
        if queries.set_outbound_blocked(conn, agent_id=row["id"], blocked=bool(row["blocked"])):
            changed[row["id"]] = bool(row["blocked"])
    state_history.record(conn, changed)
    notify(conn, list(changed), now)
    return changed


def missed_activities(conn, now, tz, grace_minutes, *, agent_id=None, extension=None, agent=None):
    """The GET /api/missed-activities body for the agent with this employee id or extension (D7), or
    for `agent`, a sales_agents row the caller has found already.

    {ok, agent_id, blocked, grace_minutes, items}: every uncleared activity, oldest connected_at
    first, at most 100; each item {id, oli_id, lead_id, call_type, extension, connected_at,
    ended_at, due_at (ISO 8601 UTC, null while live), overdue}. `blocked` is true while any
    uncleared activity is overdue. Raises UnknownAgent / UnknownExtension.
    """
    agent = agent or find_agent(conn, agent_id=agent_id, extension=extension)
    now_utc = clock.to_utc(now, tz)
    items = []
    for row in queries.open_missed_activities(conn, agent_id=agent["id"], max_items=MAX_ITEMS):
        connected_at, ended_at, due_at = (_utc(row, column, tz) for column in ("connected_at", "ended_at", "due_at"))
        items.append({
            "id": row["id"], "oli_id": row["oli_id"], "lead_id": row["lead_id"], "call_type": row["call_type"],
            "extension": row["extension"], "connected_at": clock.format_utc(connected_at),
            "ended_at": clock.format_utc(ended_at), "due_at": clock.format_utc(due_at),
            "overdue": due_at is not None and now_utc > due_at,
        })
    return {
        "ok": True,
        "agent_id": agent["id"],
        "blocked": bool(queries.agent_has_overdue(conn, agent_id=agent["id"], now=now, now_utc=now_utc)),
        "grace_minutes": grace_minutes,
        "items": items,
    }


def _utc(row, column, tz):
    """A missed-activity time as naive UTC: its exact `*_utc` column, else its wall-clock column read in `tz`."""
    exact = row[f"{column}_utc"]
    return exact if exact is not None else clock.to_utc(row[column], tz)


def pause(conn, agent_id, code, note=None, now=None):
    """Pause an agent with a picker code (lead-intake-api.md "Pause reason"; D9).

    A missing, unknown or system-only code raises InvalidPause("invalid_pause_reason"). A code that
    needs a note (`other`) needs one of at most 12 words and 80 characters, stored as reason_note;
    otherwise InvalidPause("invalid_pause_note"). Returns {agent_id, code, note}.

    A new note of the pause the agent is already in is told to the supervisor boards through the
    outbox at `now` (wall-clock DB_TIMEZONE): the state history, which feeds them every
    other change, keeps the code, not the note. Raises TypeError for such a change without `now`.
    """
    reason = queries.get_pause_reason(conn, code=code) if isinstance(code, str) and code else None
    if reason is None or reason["kind"] != "picker":
        raise InvalidPause("invalid_pause_reason")
    note = note.strip() if isinstance(note, str) else note
    if reason["needs_note"]:
        if not isinstance(note, str) or not note or len(note) > catalog.NOTE_MAX_CHARS \
                or len(note.split()) > catalog.NOTE_MAX_WORDS:
            raise InvalidPause("invalid_pause_note")
    else:
        note = None
    before = queries.get_agent(conn, agent_id=agent_id)
    queries.set_pause(conn, agent_id=agent_id, pause_code=code, reason_note=note)
    state_history.record(conn, [agent_id])
    if before is not None and before["pause_code"] == code and before["reason_note"] != note:
        if now is None:
            raise TypeError("pause: a new note of the same pause needs `now` to tell the boards")
        notify(conn, [agent_id], now)
    return {"agent_id": agent_id, "code": code, "note": note}


def resume(conn, agent_id):
    """Clear an agent's pause code and note. Returns {agent_id}."""
    queries.set_pause(conn, agent_id=agent_id, pause_code=None, reason_note=None)
    state_history.record(conn, [agent_id])
    return {"agent_id": agent_id}


KEEP = object()


def wrapup_until(seconds, now, tz):
    """When a wrap-up of `seconds` (elapsed time) from `now` (wall-clock in `tz`) ends; None for 0 (no wrap-up)."""
    return clock.after(now, timedelta(seconds=seconds), tz) if seconds else None


def set_availability(conn, agent_id, *, panel_active=None, ami_idle=None, wrapup_until=KEEP):
    """Record what the panel and the engine know of an agent: panel connected, AMI idle, wrap-up end.

    None (the default) leaves panel_active / ami_idle as they are; wrapup_until is written when
    given (None = not in wrap-up), otherwise kept. A change is recorded in the agent state history
    (state_history.record) in the same transaction.
    """
    queries.set_availability(conn, agent_id=agent_id, panel_active=panel_active, ami_idle=ami_idle,
                             set_wrapup=wrapup_until is not KEEP,
                             wrapup_until=None if wrapup_until is KEEP else wrapup_until)
    state_history.record(conn, [agent_id])


def lock_agent(conn, agent_id):
    """SELECT ... FOR UPDATE the sales_agents row of `agent_id`, with `skills` and `priorities` as lists.

    Raises agents.UnknownAgent.
    """
    agent = queries.lock_agent(conn, agent_id=agent_id)
    if agent is None:
        raise UnknownAgent(agent_id)
    return with_lists(agent)


def _free_agents(conn, now):
    agents = [with_lists(agent) for agent in queries.available_agents(conn, ahead=False)]
    return [agent for agent in agents if availability.unavailable_reason(agent, now) is None]


def bridge(conn, oli_id, now):
    """Predictive: the customer of a live lead answered; pick a free agent with the lead's skill and priority.

    The first bridge of a reservation is when the customer answered (abandons.mark_answered).
    Returns the agent id (the agent is marked AMI-busy so no other call is bridged to them), or
    None when nobody matching is free: the call holds. Raises vocabulary.UnknownLead, and
    vocabulary.NotLive when the lead is not on a call.
    """
    lead = dialstate.lock_lead(conn, oli_id)
    if not vocabulary.is_live(lead):
        raise vocabulary.NotLive(oli_id)
    abandons.mark_answered(conn, lead, now)
    for agent in _free_agents(conn, now):
        if lead["form_type"] not in agent["skills"]:
            continue
        if agent["priorities"] and lead["priority_id"] not in agent["priorities"]:
            continue
        locked = lock_agent(conn, agent["id"])
        # Read without a lock above: check again on the locked row before taking the agent.
        if availability.unavailable_reason(locked, now) is None:
            set_availability(conn, locked["id"], ami_idle=False)
            return locked["id"]
    return None
