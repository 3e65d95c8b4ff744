"""The floor as a pacing engine sees it, per form_type: one call answers how many agents
of each skill are free, on a call, in wrap-up, paused, outbound-blocked or panel-inactive, how many
calls are reserved and how many of those are connected to an agent, and whether leads are due.

A predictive engine dials each skill on its own free agents (claims.claim_predictive with a
form_type); this is what it paces on. Read in one snapshot (plumbing.db.Database.run_snapshot).
"""

from dialerapi.plumbing import clock
from dialerapi.plumbing.db import queries
from dialerapi.rules.agents import availability

# An agent's state on the floor, from availability.unavailable_reason (the one rule of who may take a
# call), in that rule's order: the first reason that applies names the state.
from dialerapi.rules.agents.state_history import STATES
from dialerapi.rules.caller_ids import pools as caller_id_pools
from dialerapi.rules.caller_ids.choice import pool_of as caller_id_pool_of
from dialerapi.rules.campaigns import operations
from dialerapi.rules.compliance import abandons, claim_checks, contact_caps
from dialerapi.rules.config import dialer as dialer_config
from dialerapi.rules.config import work_window
from dialerapi.rules.leads import callbacks

# Due leads are counted up to this many per form_type: enough to pace on, and a bounded index read
# (at most this many entries per claim bucket) on a table of any size.
DUE_CAP = 100


def floor_state(conn, now, form_type, tz):
    """The floor at `now` (wall-clock in `tz`, DB_TIMEZONE), for every form_type some agent has, or only
    `form_type` (None: all).

    Returns {"maintenance": bool, "leads_due_cap": DUE_CAP, "work_window": see work_window_state,
    "form_types": [{"form_type",
    "agents": {free, on_call, wrap_up, paused, outbound_blocked, panel_inactive} (an agent with
    several skills counts under each), "calls": {reserved, connected, not_connected} (live
    reservations; connected: call-connected reported; not_connected: ringing, or answered and
    waiting for a bridge), "leads_due": due and unreserved leads up to DUE_CAP, "leads_due_capped":
    true when there are at least DUE_CAP, "abandons": {"limit", "period", "min_answered", "enforced",
    "pending", "over_limit", "windows": {"15m", "today", "period"}: {answered, abandoned, late_connects, machines, rate}}
    (rules.compliance.abandons.summary), "personal_callbacks": {"owner_free", "owner_busy",
    "past_fallback"} (the due personal callbacks, rules.leads.callbacks.floor_counts: only
    past_fallback ones may go to any agent; leads_due counts them all), "leads_waiting_on_caps":
    unreserved leads a claim held for a contact cap, still due when it frees them,
    "campaign": its campaign now (operations.status: state, open, closed_reason, restriction_note,
    next_open_at, predictive), "leads_held": {reason: unreserved leads in the claim
    states a rule holds back from a progressive claim} for do_not_call, outside_calling_window and
    each calling rule's reason (claim_checks.HELD_REASONS), as counted at
    "leads_held_counted_at" (ISO 8601 UTC, once a minute by claim_checks.count_held; null before the
    first count), "caller_id": {pool, headroom_today, headroom_share} of the pool its campaign
    presents from (null while the floor has no caller IDs)},
    ...]} in form_type order; "caller_id_pools": rules.caller_ids.pools.report ([] without caller
    IDs); "floor_abandons": the same
    windows summed over those form_types (zeros with none). A form_type no agent has
    appears only when asked for by name (its agents all 0). Due callbacks count only inside the
    work window when outbound_obey_work_hours = 1, as the claim takes them.
    """
    config = dialer_config.load_config(conn)
    groups = {}
    for agents in queries.floor_agents(conn, now=now):
        state = STATES[availability.unavailable_reason(agents, now)]
        groups.setdefault(agents["form_type"], dict.fromkeys(STATES.values(), 0))[state] += agents["agents"]
    calls = {row["form_type"]: row
             for row in queries.floor_calls(conn, **abandons.connect_params(config))}
    callbacks_open = not config.outbound_obey_work_hours or work_window.in_work_window(now, config)
    personal = callbacks.floor_counts(conn, now, config, tz) if callbacks_open else {}
    capped = contact_caps.waiting(conn, now)
    held, counted_at = claim_checks.held_counts(conn)
    report = []
    rates = []
    for row in queries.due_counts(conn, form_type=form_type, now=now, callbacks_open=callbacks_open, cap=DUE_CAP,
                                  probe=DUE_CAP - 1, **abandons.period_bounds(now, config)):
        name = row["form_type"]
        reserved = int(calls[name]["reserved"]) if name in calls else 0
        connected = int(calls[name]["connected"]) if name in calls else 0
        pending = int(calls[name]["pending"]) if name in calls else 0
        own = config.of(name)
        windows = abandons.windows_of(row, own.amd_false_positive_share)
        rates.append(windows)
        due = sum(int(row[bucket]) for bucket in ("callbacks", "pending", "abandoned", "not_connected"))
        report.append({
            "form_type": name, "agents": groups.get(name, dict.fromkeys(STATES.values(), 0)),
            "calls": {"reserved": reserved, "connected": connected, "not_connected": reserved - connected},
            "leads_due": min(due, DUE_CAP), "leads_due_capped": due >= DUE_CAP,
            "abandons": abandons.summary(windows, pending, own),
            "personal_callbacks": personal.get(name, dict.fromkeys(callbacks.FLOOR_COUNTS, 0)),
            "leads_waiting_on_caps": capped.get(name, 0),
            "campaign": operations.status(config, name, now, tz),
            "leads_held": held.get(name, dict.fromkeys(claim_checks.HELD_REASONS, 0)),
        })
    pools = caller_id_pools.report(conn, now, config, [row["form_type"] for row in report])
    by_pool = {pool["pool"]: pool for pool in pools}
    for row in report:
        pool = by_pool.get(caller_id_pool_of(config.of(row["form_type"])))
        row["caller_id"] = pool and {"pool": pool["pool"], "headroom_today": pool["headroom_today"],
                                     "headroom_share": pool["headroom_share"]}
    return {"maintenance": bool(config.isMaintainance), "leads_due_cap": DUE_CAP, "leads_held_counted_at": counted_at,
            "work_window": work_window_state(now, config, tz),
            "floor_abandons": abandons.floor_total(rates, config.amd_false_positive_share), "form_types": report,
            "caller_id_pools": pools}


def work_window_state(now, config, tz):
    """{"start", "end": "HH:MM" wall-clock in `tz` (decisions.md D1; it may cross midnight), "open":
    `now` is inside [start, end), "obeyed": outbound_obey_work_hours, "next_start": the next
    work_start ("YYYY-MM-DD HH:MM:SS"), null while open}. A lead pushed while the window is closed is
    due at next_start (lead-intake-api.md, "Dial-state reset"), so an engine (and the README's tour)
    can say why nothing is due."""
    open_now = work_window.in_work_window(now, config)
    return {"start": f"{config.work_start:%H:%M}", "end": f"{config.work_end:%H:%M}", "open": open_now,
            "obeyed": bool(config.outbound_obey_work_hours),
            "next_start": None if open_now else clock.format_wall_clock(work_window.next_work_start(now, config, tz))}
