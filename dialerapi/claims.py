"""Claims for the dialing engine (lead-intake-api.md "Claim and retry rules", "States and transitions").

- `claim_next`: progressive. The next lead for one available agent, by skill (form_type) and
  allowed priority, in claim order: due Callback, then Pending, then Abandoned, then Not Connected.
- `claim_predictive` and `bridge`: predictive. A lead is claimed for the skills of the agents who
  are free now; the customer is called first; `bridge` then finds a free skilled agent, or none
  (the call holds, and ends Abandoned if the customer hangs up: settle with `abandoned`).
- `claim_lead`: a named lead, for a redial (call_type redial) or an inbound call; reopens
  Received, Rejected and Disposed leads.

Every claim sets Calling + isReserved and remembers the previous status (dialstate.claim_changes);
settle ends the call. Functions take the connection first and run in the caller's transaction;
`sales_dialer_config.isMaintainance = 1` stops every new claim. Candidate rows are locked with
FOR UPDATE SKIP LOCKED, so two engines claiming at once never get the same lead.
"""

from datetime import timedelta

from . import clock, dialstate
from .agents import UnknownAgent, with_lists
from .db import queries

CANDIDATES = 5


class NotClaimable(Exception):
    """A named lead cannot be claimed; `reason` says why (maintenance, live, agent state, ...)."""

    def __init__(self, reason):
        super().__init__(reason)
        self.reason = reason


def lock_agent(conn, agent_id):
    """SELECT ... FOR UPDATE the sales_agents row of `agent_id`, with `skills` and `priorities` as lists.

    Raises agents.UnknownAgent.
    """
    agent = queries.lock_agent(conn, agent_id=agent_id)
    if agent is None:
        raise UnknownAgent(agent_id)
    return with_lists(agent)


def _candidates(conn, form_types, priorities, now, config):
    """Candidate lead ids in claim order: bucket by bucket, due-first within a bucket across form_types.

    Due callbacks wait for the work window when outbound_obey_work_hours = 1 (Claim and retry rules 2).
    """
    callbacks_open = not config.outbound_obey_work_hours or dialstate.in_work_window(now, config)
    rows = [row for form_type in form_types for row in queries.due_candidates(
        conn, form_type=form_type, now=now, callbacks_open=callbacks_open, all_priorities=not priorities,
        priorities=tuple(priorities) or (0,), max_rows=CANDIDATES)]
    rows.sort(key=lambda row: (row["bucket"], row["due"] is not None, row["due"] or now, row["id"]))
    return [row["id"] for row in rows]


def _lock_first_due(conn, ids, now, config):
    for lead_id in ids:
        row = queries.lock_unreserved(conn, id=lead_id)
        # The candidate was read without a lock: check again now that it is ours.
        if row is not None and dialstate.is_due(row, now, config):
            return row
    return None


def claim_next(conn, agent_id, now):
    """Progressive claim: reserve the next due lead for agent `agent_id`, or return None.

    None when the dialer is in maintenance, the agent is not available (dialstate.unavailable_reason)
    or no lead matching the agent's skills and allowed priorities is due. Returns the claimed
    sales_master row as it now stands (Calling, isReserved 1). Raises agents.UnknownAgent.
    """
    config = dialstate.load_config(conn)
    agent = lock_agent(conn, agent_id)
    if config.isMaintainance or dialstate.unavailable_reason(agent, now):
        return None
    row = _lock_first_due(conn, _candidates(conn, agent["skills"], agent["priorities"], now, config), now, config)
    if row is None:
        return None
    return dialstate.write_lead(conn, row, dialstate.claim_changes(row), now)


def claim_predictive(conn, now):
    """Predictive claim: reserve the next due lead whose form_type some free agent has, or None.

    The customer is called first; `bridge` then picks the agent. Priorities are matched at bridge
    time. None in maintenance or when no agent is free.
    """
    config = dialstate.load_config(conn)
    if config.isMaintainance:
        return None
    skills = sorted({skill for agent in _free_agents(conn, now) for skill in agent["skills"]})
    row = _lock_first_due(conn, _candidates(conn, skills, [], now, config), now, config)
    if row is None:
        return None
    return dialstate.write_lead(conn, row, dialstate.claim_changes(row), now)


def _free_agents(conn, now):
    return [with_lists(agent) for agent in queries.available_agents(conn)
            if dialstate.unavailable_reason(agent, now) is None]


def bridge(conn, oli_id, now):
    """Predictive: the customer of a live lead answered; pick a free agent with the lead's skill and priority.

    Returns the agent id (the agent is marked AMI-busy so no other call is bridged to them), or
    None when nobody matching is free: the call holds. Raises dialstate.UnknownLead, and
    dialstate.NotLive when the lead is not on a call.
    """
    lead = dialstate.lock_lead(conn, oli_id)
    if not dialstate.is_live(lead):
        raise dialstate.NotLive(oli_id)
    for agent in _free_agents(conn, now):
        if lead["form_type"] not in agent["skills"]:
            continue
        if agent["priorities"] and lead["priority_id"] not in agent["priorities"]:
            continue
        locked = lock_agent(conn, agent["id"])
        # Read without a lock above: check again on the locked row before taking the agent.
        if dialstate.unavailable_reason(locked, now) is None:
            set_availability(conn, locked["id"], ami_idle=False)
            return locked["id"]
    return None


def claim_lead(conn, agent_id, oli_id, now, call_type=dialstate.REDIAL):
    """Claim a named lead for a redial (call_type redial) or an inbound call (call_type inbound).

    Reopens Received, Rejected and Disposed leads. The agent must be available; an outbound block
    does not stop an inbound call, nor a redial of a lead the agent has an open missed activity for.
    Maintenance stops redials, not inbound calls. Returns the claimed row. Raises NotClaimable
    (reason: maintenance, lead_in_flight, or the agent's unavailable reason),
    dialstate.UnknownLead, agents.UnknownAgent.
    """
    config = dialstate.load_config(conn)
    if config.isMaintainance and call_type != "inbound":
        raise NotClaimable("maintenance")
    agent = lock_agent(conn, agent_id)
    own_missed = bool(queries.agent_has_missed_activity(conn, agent_id=agent_id, oli_id=oli_id))
    reason = dialstate.unavailable_reason(agent, now, outbound=call_type != "inbound" and not own_missed)
    if reason:
        raise NotClaimable(reason)
    row = queries.lock_lead_skip_locked(conn, oli_id=oli_id)
    if row is None:
        if not queries.lead_exists(conn, oli_id=oli_id):
            raise dialstate.UnknownLead(oli_id)
        raise NotClaimable("lead_in_flight")  # another transaction holds it right now
    if row["isReserved"]:
        raise NotClaimable("lead_in_flight")
    return dialstate.write_lead(conn, row, dialstate.claim_changes(row), now)


KEEP = object()


def wrapup_until(seconds, now, tz):
    """When a wrap-up of `seconds` (elapsed time) from `now` (wall-clock in `tz`) ends; None for 0 (no wrap-up)."""
    return clock.after(now, timedelta(seconds=seconds), tz) if seconds else None


def set_availability(conn, agent_id, *, panel_active=None, ami_idle=None, wrapup_until=KEEP):
    """Record what the panel and the engine know of an agent: panel connected, AMI idle, wrap-up end.

    None (the default) leaves panel_active / ami_idle as they are; wrapup_until is written when
    given (None = not in wrap-up), otherwise kept.
    """
    queries.set_availability(conn, agent_id=agent_id, panel_active=panel_active, ami_idle=ami_idle,
                             set_wrapup=wrapup_until is not KEEP,
                             wrapup_until=None if wrapup_until is KEEP else wrapup_until)
