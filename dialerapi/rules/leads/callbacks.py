"""Personal callbacks: a callback the CRM files for a named agent waits for that agent.

A Callback lead whose callback_agent_id is set (the CRM's `callbackAgentId`, migration 0015) is its
owner's: the owner's progressive claim takes it before any other work (claims.claim_next), and no
other claim, progressive or predictive, takes it until it has been due for
`personal_callback_fallback_minutes` (sales_dialer_config; 0 at once, NULL never: VICIdial's
USERONLY) or its owner leaves the roster. Past the fallback it is an ordinary callback for anyone
with the skill (the owner's claim still looks for it first). The end of a call of the lead (settle
or release, whoever claimed it), a push, a newer callback or a disposition ends the ownership
(dialstate.write_lead), and the owner's panel is told (`dialer.callbacks`, sides.agent.socket).
A claim itself writes nothing of it, so a claim costs no more than before but for the owner's
read: the claimed lead leaves the owner's list (it is no longer due), and the panel hears it at the
call's connect (a missed activity opens) or its end.

Functions take the connection first and run in the caller's transaction. Times are naive
wall-clock DB_TIMEZONE datetimes (decisions.md D2); `tz` is that zone, None where the caller has
none (elapsed time is then wall-clock difference, off by an hour across a daylight-saving change).
"""

import math
from datetime import timedelta

from dialerapi.plumbing import clock
from dialerapi.plumbing.db import queries
from dialerapi.rules.config import dialer as dialer_config
from dialerapi.rules.core.vocabulary import CALLBACK, UnknownAgent
from dialerapi.rules.events import lead_events

# The agent's list holds the personal callbacks due within this many hours, and those already due.
LIST_HOURS = 24
MAX_ITEMS = 100
FLOOR_COUNTS = ("owner_free", "owner_busy", "past_fallback")
NEVER_FALLS_BACK = None


def _plus(moment, minutes, tz):
    """The wall-clock time `minutes` of elapsed time after `moment` (before it when negative)."""
    delta = timedelta(minutes=minutes)
    return clock.after(moment, delta, tz) if tz is not None else moment + delta


def _seconds_between(earlier, later, tz):
    """Elapsed seconds from one wall-clock time to another (negative when `later` is earlier)."""
    if tz is None:
        return (later - earlier).total_seconds()
    return (clock.instant(later, tz) - clock.instant(earlier, tz)).total_seconds()


def fallback_edge(now, config, tz=None):
    """The latest due time of a personal callback that has fallen back at `now`, or None (never falls back)."""
    minutes = config.personal_callback_fallback_minutes
    return None if minutes is NEVER_FALLS_BACK else _plus(now, -minutes, tz)


def fallback_at(due_at, minutes, tz=None):
    """When a personal callback due at `due_at` (wall clock in `tz`) falls back to any agent, given
    personal_callback_fallback_minutes `minutes`; None when it never does."""
    return None if minutes is NEVER_FALLS_BACK else _plus(due_at, minutes, tz)


def fallback_params(now, config, tz=None):
    """The :fallback_never and :fallback_edge parameters of the statements that leave owned callbacks out."""
    edge = fallback_edge(now, config, tz)
    return {"fallback_never": edge is None, "fallback_edge": edge or now}


def kept_from(row, agent_id, now, config, tz=None):
    """True when the locked master `row` is a personal callback of another owner than `agent_id`
    (None: a predictive claim) that has not fallen back at `now`: that claim may not take it."""
    owner = row.get("callback_agent_id")
    if owner is None or owner == agent_id or row["dial_status"] != CALLBACK:
        return False
    edge = fallback_edge(now, config, tz)
    return edge is None or row["callback_scheduled_at"] is None or row["callback_scheduled_at"] > edge


def check_owner(conn, agent_id):
    """Lock `agent_id`'s roster row in share mode (None: no owner). Raises UnknownAgent (404 unknown_agent)."""
    if agent_id is not None and queries.lock_agent_shared(conn, agent_id=agent_id) is None:
        raise UnknownAgent(agent_id)


def owner_read(agent_id, skills, now, callbacks_open, zones, max_rows):
    """The read of `agent_id`'s due personal callbacks of `skills` that a progressive claim adds to
    its first candidate statement (claims._candidates): [(query, params)], or [] when there is
    none to make (a predictive claim, no skill, callbacks outside the work window).

    Its rows are claims.sql due_candidates rows in bucket 0 (before every other), oldest due first,
    at most `max_rows` (growing with the claim's window); `lawful` says whether the lead's call zone is open (`zones`: the ids
    of the zones open now, None for every zone).
    """
    if agent_id is None or not skills or not callbacks_open:
        return []
    return [(queries.personal_due, {
        "form_type": None, "agent_id": agent_id, "skills": tuple(skills), "now": now, "callbacks_open": callbacks_open,
        "any_zone": zones is None, "zone_ids": tuple(zones or ()) or (0,), "max_rows": max_rows})]


def agent_callbacks(conn, agent_id, now, tz):
    """The `dialer.callbacks` data and GET /api/callbacks body of one agent.

    {agent_id, fallback_minutes (the floor's; None: never), items: [{oli_id, data_id, client_name,
    form_type, callback_scheduled_at ('YYYY-MM-DD HH:MM:SS' DB_TIMEZONE), due (bool),
    seconds_until_due (0 once due), fallback_minutes (its campaign's; None: never),
    fallback_at (the same format, None: never), minutes_until_fallback (whole minutes, rounded up,
    0 once past, None: never)}]}, as of `now`: a panel counts the seconds on from when it got them
    (its clock need not agree with the service's). The agent's personal callbacks due in the next
    LIST_HOURS hours and those already due, oldest first, at most MAX_ITEMS. The caller has found
    the agent (agents.find_agent, or the missed-activities read of the same socket snapshot), so
    the roster is not read again here.
    """
    config = dialer_config.load_config(conn)
    until = _plus(now, LIST_HOURS * 60, tz)
    items = []
    for row in queries.agent_callbacks(conn, agent_id=agent_id, until=until, max_items=MAX_ITEMS):
        due_at = row["callback_scheduled_at"]
        minutes = config.of(row["form_type"]).personal_callback_fallback_minutes
        falls_back = fallback_at(due_at, minutes, tz)
        left = None if falls_back is None else max(0, math.ceil(_seconds_between(now, falls_back, tz) / 60))
        items.append({
            "oli_id": row["oli_id"], "data_id": row["data_id"], "client_name": row["client_name"],
            "form_type": row["form_type"], "callback_scheduled_at": clock.format_wall_clock(due_at),
            "due": due_at <= now, "seconds_until_due": max(0, round(_seconds_between(now, due_at, tz))),
            "fallback_minutes": minutes, "fallback_at": clock.format_wall_clock(falls_back),
            "minutes_until_fallback": left,
        })
    return {"agent_id": agent_id, "fallback_minutes": config.personal_callback_fallback_minutes, "items": items}


def floor_counts(conn, now, config, tz=None):
    """{form_type: {"owner_free", "owner_busy", "past_fallback"}}: the due personal callbacks per
    form_type whose owner is free now, whose owner is not (on a call, wrap-up,
    paused, blocked, panel inactive, or off the roster without `agents remove`), and those past
    their fallback."""
    return {row["form_type"]: {name: int(row[name]) for name in FLOOR_COUNTS}
            for row in queries.personal_callbacks_due(conn, now=now, **fallback_params(now, config, tz))}


def release_owner(conn, agent_id, now):
    """An agent leaves the roster: their personal callbacks, stored and held, become anyone's now
    (`now` wall-clock DB_TIMEZONE), each told to the CRM (lead.callback_fell_back)."""
    for row in queries.owned_callbacks(conn, agent_id=agent_id):
        lead_events.fell_back(conn, row, now, "owner_removed")
    queries.clear_owner_of_leads(conn, agent_id=agent_id)
    queries.clear_owner_of_held(conn, agent_id=agent_id)
