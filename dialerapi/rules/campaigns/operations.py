"""Campaigns: a campaign is a form_type (lead-intake-api.md: a lead's campaign is its
form_type), with its own calendar, rulebook and switch over the floor's sales_dialer_config.

- `attach(conn, config)`: the floor's DialerConfig with the campaigns, read again only when their
  generation moved (migration 0023), so every host sees a change at its next claim; then
  `config.of(form_type)` is the DialerConfig of that form_type's leads (the floor's when the
  campaign sets nothing).
- `refusal(config, form_type, now, predictive)`: why no outbound claim may take its leads now
  (campaign_paused, campaign_ended, campaign_closed, predictive_off), or None;
  `check_locked(conn, row)` reads the locked lead's campaign state again inside the claim, after
  the locks that order it with every change (on one node and through Galera: `enter_claim_gate`;
  a claim that reads its state with other facts reads it after those locks, `state_refusal`).
- `update`, `pause`, `resume`: every change in one transaction with its history row
  (dialerapi_campaign_changes: when, by which credential, old and new) and its event
  (campaign.updated, campaign.paused, campaign.resumed: rules.events.lead_events' feed and webhooks).

Functions take the connection first and never commit. Wall-clock times are naive DB_TIMEZONE.
"""

import json

from dialerapi.plumbing import clock
from dialerapi.plumbing.db import queries
from dialerapi.rules.config import campaign_settings
from dialerapi.rules.events import lead_events

ACTIVE, PAUSED, ENDED = "active", "paused", "ended"
STATES = (ACTIVE, PAUSED, ENDED)
CAMPAIGN_PAUSED = "campaign_paused"
CAMPAIGN_ENDED = "campaign_ended"
CAMPAIGN_CLOSED = "campaign_closed"
PREDICTIVE_OFF = "predictive_off"
REFUSALS = {PAUSED: CAMPAIGN_PAUSED, ENDED: CAMPAIGN_ENDED}
UPDATED, PAUSED_EVENT, RESUMED = lead_events.CAMPAIGN_TYPES
HISTORY_ROWS = 50


class UnknownCampaign(LookupError):
    """No agent skill and no campaign has this form_type (HTTP 404 `unknown_campaign`)."""


def refusal(config, form_type, now, predictive=False):
    """Why an outbound claim may not take a lead of `form_type` now, by the campaigns `config` holds:
    campaign_paused, campaign_ended, campaign_closed (its calendar: outside its open hours, on a
    restricted date, before its start or after its end date), predictive_off (`predictive` claims
    only), or None."""
    campaign_config = config.of(form_type)
    campaign = campaign_config.campaign
    if campaign is None:
        return None
    if campaign.state in REFUSALS:
        return REFUSALS[campaign.state]
    if campaign_config.calendar is not None and not campaign_config.calendar.is_open(now):
        return CAMPAIGN_CLOSED
    if predictive and not campaign_config.predictive:
        return PREDICTIVE_OFF
    return None


def open_form_types(wanted, now, config, predictive=False):
    """`wanted` ((form_type, priorities) pairs) split: (those whose campaign takes an outbound claim
    now, [(form_type, refusal) of the others])."""
    kept, refused = [], []
    for form_type, priorities in wanted:
        reason = refusal(config, form_type, now, predictive)
        if reason is None:
            kept.append((form_type, priorities))
        else:
            refused.append((form_type, reason))
    return kept, refused


def check_locked(conn, row):
    """The refusal of the locked lead `row`'s campaign state (campaign_paused, campaign_ended, or
    None), read inside the claim gate (enter_claim_gate, leave_claim_gate)."""
    enter_claim_gate(conn, row)
    leave_claim_gate(conn, row)
    return state_refusal(queries.campaign_state(conn, form_type=row["form_type"]))


def enter_claim_gate(conn, row):
    """Take the two locks a claim of the locked lead `row` holds until it commits, before it reads
    its campaign's state:
    - a shared lock on the floor's config row, which every change locks first (`_lock`): on one
      node, a change that committed before is seen, and one that comes after waits for this claim;
    - the lead's reference to the claim gate (migration 0024), which every change deletes and
      inserts again (`_store`): through Galera, where locks stay on their node, a change from
      another node either is applied here before the state is read (it is seen) or aborts this
      claim (its delete meets the gate's shared lock here, or the claim's write set fails
      certification against it), which then runs again.
    So no claim of a campaign commits after its pause, on one node or on three. The lead must leave
    the gate before the claim commits: leave_claim_gate, or a later write of the lead's row that
    sets claim_gate to NULL (the caller-ID count, rules.caller_ids.choice)."""
    queries.claim_gate(conn)
    queries.refer_to_claim_gate(conn, id=row["id"])


def leave_claim_gate(conn, row):
    """The locked lead `row` no longer refers to the claim gate; its locks stay until commit."""
    queries.leave_claim_gate(conn, id=row["id"])


def state_refusal(state):
    """The refusal of a campaign in `state` (a campaign's state read after enter_claim_gate, None
    when the form_type has no campaign): campaign_paused, campaign_ended or None."""
    return REFUSALS.get(state)


def status(config, form_type, now, tz):
    """{form_type, state, open (bool: claims may take its leads now), closed_reason (paused, ended,
    not_started, finished, restricted_date, outside_open_hours or None), restriction_note,
    next_open_at ('YYYY-MM-DD HH:MM:SS' DB_TIMEZONE, the next moment its calendar opens; None
    when open now or never), predictive} of one form_type at `now`."""
    campaign_config = config.of(form_type)
    campaign = campaign_config.campaign
    state = campaign.state if campaign is not None else ACTIVE
    calendar = campaign_config.calendar
    reason = state if state != ACTIVE else (calendar.closed_reason(now) if calendar is not None else None)
    next_open = None
    if calendar is not None and state == ACTIVE and reason is not None:
        next_open = calendar.next_open(now, tz)
    return {"form_type": form_type, "state": state, "open": reason is None, "closed_reason": reason,
            "restriction_note": calendar.restriction_note(now.date()) if calendar is not None else None,
            "next_open_at": clock.format_wall_clock(next_open), "predictive": campaign_config.predictive}


def view(config, form_type, now, tz):
    """A campaign as the API and the CLI show it: status() with `settings` (what it overrides),
    `effective` (every setting as the rules read it), updated_at and updated_by."""
    campaign = config.of(form_type).campaign
    return {**status(config, form_type, now, tz),
            "settings": campaign.settings if campaign is not None else {},
            "effective": campaign_settings.effective(config.of(form_type)),
            "updated_at": clock.format_wall_clock(campaign.updated_at) if campaign is not None else None,
            "updated_by": campaign.updated_by if campaign is not None else None}


def form_types(conn, config):
    """Every form_type the floor knows of (agents' skills and campaigns), sorted."""
    return sorted({row["form_type"] for row in queries.known_form_types(conn)} | set(config.campaigns))


def require_known(conn, config, form_type):
    """Raise UnknownCampaign unless an agent has the skill `form_type` or a campaign exists for it."""
    if form_type not in config.campaigns and form_type not in form_types(conn, config):
        raise UnknownCampaign(form_type)


def update(conn, form_type, patch, now, changed_by):
    """Apply `patch` to the campaign, creating it when it has no row: its settings by JSON merge patch
    (campaign_settings.merge: a null removes an override) and, when `patch` has `state`, its state
    (active, paused, ended). Returns {"state", "settings"} as stored. Raises
    campaign_settings.InvalidSettings naming each wrong setting (nothing stored)."""
    patch = dict(patch) if isinstance(patch, dict) else patch
    state = patch.pop("state", None) if isinstance(patch, dict) else None
    if state is not None and state not in STATES:
        raise campaign_settings.InvalidSettings({"state": [f"must be one of {', '.join(STATES)}"]})
    row = _lock(conn, form_type)
    old = campaign_settings.parse(row["settings"]) if row else {}
    new = campaign_settings.merge(old, patch)
    before = row["state"] if row else ACTIVE
    state = state or before
    _store(conn, form_type, state, new, now, changed_by, "updated", {"settings": old, "state": before},
           {"settings": new, "state": state})
    _tell(conn, UPDATED, form_type, now, changed_by, {"settings": old, "state": before},
          {"settings": new, "state": state})
    return {"state": state, "settings": new}


def pause(conn, form_type, now, changed_by):
    """Pause the campaign: no new claim of its leads (live calls, held actions, settles and callbacks'
    clocks go on). Returns (its state before, "paused"); a campaign already paused is left as it
    is and nothing is written."""
    return _switch(conn, form_type, PAUSED, now, changed_by, PAUSED_EVENT)


def resume(conn, form_type, now, changed_by):
    """Resume a paused or ended campaign: its leads are claimed again. Returns (before, "active")."""
    return _switch(conn, form_type, ACTIVE, now, changed_by, RESUMED)


def _lock(conn, form_type):
    queries.lock_floor_for_campaign_change(conn)
    return queries.lock_campaign(conn, form_type=form_type)


def _switch(conn, form_type, state, now, changed_by, event_type):
    row = _lock(conn, form_type)
    before = row["state"] if row else ACTIVE
    if before == state:
        return before, state
    settings = campaign_settings.parse(row["settings"]) if row else {}
    action = "paused" if state == PAUSED else "resumed"
    _store(conn, form_type, state, settings, now, changed_by, action, {"state": before}, {"state": state})
    _tell(conn, event_type, form_type, now, changed_by, {"state": before}, {"state": state})
    return before, state


def _store(conn, form_type, state, settings, now, changed_by, action, old, new):
    # Through Galera no lock reaches a claim on another node; deleting the gate its claims refer to
    # fails their certification instead (migration 0024).
    queries.remove_claim_gate(conn)
    queries.restore_claim_gate(conn)
    text = json.dumps(settings, separators=(",", ":"), sort_keys=True)
    queries.upsert_campaign(conn, form_type=form_type, state=state, settings=text, updated_at=now,
                            updated_by=changed_by)
    queries.insert_campaign_change(conn, form_type=form_type, action=action, changed_at=now,
                                   changed_at_utc=lead_events.utc_now(), changed_by=changed_by,
                                   old_values=json.dumps(old, sort_keys=True), new_values=json.dumps(new, sort_keys=True))


def _tell(conn, event_type, form_type, now, changed_by, old, new):
    lead_events.record(conn, event_type, lead_events.NO_LEAD, now,
                       {"form_type": form_type, "changed_by": changed_by, "old": old, "new": new})


def history(conn, form_type, max_rows=HISTORY_ROWS):
    """The campaign's changes, newest first: [{id, action, changed_at (DB_TIMEZONE), changed_at_utc
    (ISO 8601), changed_by, old, new}]."""
    return [{"id": row["id"], "action": row["action"], "changed_at": clock.format_wall_clock(row["changed_at"]),
             "changed_at_utc": clock.format_utc(row["changed_at_utc"]), "changed_by": row["changed_by"],
             "old": json.loads(row["old_values"]), "new": json.loads(row["new_values"])}
            for row in queries.campaign_changes(conn, form_type=form_type, max_rows=max_rows)]
