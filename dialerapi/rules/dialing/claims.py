"""Claims for the dialing engine (lead-intake-api.md "Claim and retry rules", "States and transitions").

- `claim_next`: progressive. The next lead for one available agent, by skill (form_type) and
  allowed priority, in claim order: due Callback, then Pending, then Abandoned, then Not Connected.
- `claim_predictive` and `bridge`: predictive. A lead is claimed for the skills of the agents who
  are free now; the customer is called first; `bridge` then finds a free skilled agent, or none
  (the call holds, and ends Abandoned if the customer hangs up: settle with `abandoned`).
- `claim_lead`: a named lead, for a redial or an inbound call; reopens Received, Rejected, Disposed.

Every claim sets Calling + isReserved, remembers the previous status and starts a reservation
(transitions.claim_changes); settle ends the call, or the sweep releases the reservation when its
lease runs out. Functions take the connection first and run in the caller's transaction;
`sales_dialer_config.isMaintainance = 1` stops every new outbound claim (NotClaimable). Candidate
rows are locked with FOR UPDATE SKIP LOCKED, so two engines claiming at once never get the same
lead, and a claim answers None only when nothing it may take is due and unreserved.

No outbound claim takes a lead of a campaign (its form_type) that is paused, ended or closed by its
calendar, nor a predictive one of a campaign with predictive off (NotClaimable with that reason when
every campaign a claim could take refuses; docs/operations/campaigns.md); each lead is judged by its
campaign's settings (config.of), and its campaign's state is read again under the claim's locks
(operations.check_locked), so no claim of a campaign commits after its pause commits, on one node or
through Galera. No claim reserves a lead whose phone is on the do-not-call list, nor (with
obey_calling_window) one outside its customer's calling window (docs/compliance/do-not-call.md):
the candidate reads leave them out, and `claim_checks.refusal` checks the locked row itself (a redial
or inbound claim of such a lead: NotClaimable). `tz` is DB_TIMEZONE, the zone of `now`.
"""

from dataclasses import dataclass

from dialerapi.plumbing.db import queries
from dialerapi.rules.agents import availability
from dialerapi.rules.agents.roster import lock_agent
from dialerapi.rules.caller_ids import choice as caller_id_choice
from dialerapi.rules.campaigns import operations
from dialerapi.rules.compliance import abandons, calling_rules, claim_checks, contact_caps, phones
from dialerapi.rules.config import dialer as dialer_config
from dialerapi.rules.core import vocabulary
from dialerapi.rules.core.kinds import ClaimKind
from dialerapi.rules.dialing import candidates
from dialerapi.rules.events import lead_events
from dialerapi.rules.events.outbox import notify
from dialerapi.rules.leads import callbacks, dialstate, transitions

MAINTENANCE = "maintenance"
NO_FREE_AGENT = "no_free_agent"
NUMBER_IN_CALL = "number_in_call"


class NotClaimable(Exception):
    """No claim can be made now, and `reason` says why.

    maintenance (isMaintainance = 1, HTTP 409 `maintenance`); lead_in_flight (a named lead is live,
    HTTP 409 `lead_in_flight`); the agent's unavailable reason (panel_inactive, paused, ami_busy,
    wrap_up, outbound_blocked), no_free_agent for a predictive claim, or for a named lead
    do_not_call, outside_calling_window, contact_cap (figures {"cap", "frees_at"}) and
    number_in_call (figures {"oli_id_in_call"}: another lead with the number is live),
    and abandon_limit for a predictive claim whose
    form_types are all over the abandon limit (HTTP 409 `not_claimable`; `figures` holds
    {"abandons": [summary of each form_type]}, rules.compliance.abandons); campaign_paused, campaign_ended,
    campaign_closed and predictive_off when every campaign the claim could take refuses it
    (figures {"campaigns": [operations.status of each]}); caller_id_exhausted for a redial no caller
    ID of its campaign's pool may present (figures {"pool"}: rules.caller_ids.choice).
    """

    def __init__(self, reason, **figures):
        super().__init__(reason)
        self.reason = reason
        self.figures = figures


class _Refused(Exception):
    """The campaign of a locked candidate was paused or ended after the claim read its config."""

    def __init__(self, form_type, reason):
        super().__init__(reason)
        self.form_type, self.reason = form_type, reason


def _lock_first_due(conn, wanted, now, config, tz, agent_id=None, kind=calling_rules.PROGRESSIVE):
    """_lock_first_due_of, passing over a form_type whose campaign the locked read finds paused or
    ended (operations.check_locked); NotClaimable with that reason when none is left."""
    while True:
        try:
            return _lock_first_due_of(conn, wanted, now, config, tz, agent_id, kind)
        except _Refused as refused:
            wanted = [pair for pair in wanted if pair[0] != refused.form_type]
            if not wanted:
                state = operations.PAUSED if refused.reason == operations.CAMPAIGN_PAUSED else operations.ENDED
                raise NotClaimable(refused.reason, campaigns=[{
                    **operations.status(config, refused.form_type, now, tz), "state": state, "open": False,
                    "closed_reason": state}]) from None


def _lock_first_due_of(conn, wanted, now, config, tz, agent_id=None, kind=calling_rules.PROGRESSIVE):
    """Lock and return the first due, unreserved lead of `wanted` ((form_type, allowed priority_ids)
    pairs, as `_candidates` takes them) in claim order, or None.

    Candidates are read without locks, in index order, and locked one at a time with SKIP LOCKED,
    so concurrent claims pass each other's leads by instead of queueing on them. When a window of
    candidates is used up without a lead, the next, larger one is read, until the candidates run
    out; then the leads that other transactions held are waited for, in claim order (a claim that
    took one has reserved it; a push or a CRM action leaves it unreserved, and it is ours). So None
    means that no lead of these form_types is due, unreserved and lawful at this moment.
    The call zones open now are those this process knows of; before answering None it reads them
    again, in case a push added a zone since. `agent_id`: the agent of a progressive claim (None
    for a predictive one), who may take their own personal callbacks (rules.leads.callbacks). A lead
    whose number is at an enabled contact cap (config.contact_caps) is held until it
    frees (contact_caps.hold) and passed over. A lead a calling rule holds from a claim of `kind`
    (progressive or predictive; rules.compliance.calling_rules) is left out with its call zone,
    and passed over when the locked row says so. Returns (the row, the _Grant to claim it with), or
    (None, None).
    """
    tried, held = set(), []
    zones = claim_checks.open_zones(conn, wanted, now, tz, config, kind=kind)
    max_rows = candidates.CANDIDATES
    while True:
        ids, complete = candidates.due(conn, wanted, now, config, max_rows, zones, tz, agent_id)
        for lead_id in ids:
            if lead_id in tried:
                continue
            tried.add(lead_id)
            row = queries.lock_unreserved(conn, id=lead_id)
            if row is None:
                held.append(lead_id)
                continue
            # The candidate was read without a lock: check again now that it is ours.
            grant = _claimable(conn, row, now, tz, config, agent_id, kind)
            if grant is not None:
                return row, grant
        if complete:
            fresh = claim_checks.open_zones(conn, wanted, now, tz, config, reload=True, kind=kind)
            if fresh == zones:
                break
            zones, max_rows = fresh, candidates.CANDIDATES
            continue
        max_rows *= candidates.WINDOW_GROWTH
    for lead_id in held:
        row = queries.lock_unreserved_waiting(conn, id=lead_id)
        if row is not None:
            grant = _claimable(conn, row, now, tz, config, agent_id, kind)
            if grant is not None:
                return row, grant
    return None, None


@dataclass(frozen=True)
class _Grant:
    """What a claim of a locked lead counts: `ticket`, the contact_caps.Ticket of its number, and
    `caller_id`, the caller_id_choice.Choice it presents (None while the floor has no caller IDs)."""

    ticket: object
    caller_id: caller_id_choice.Choice | None


def _claimable(conn, row, now, tz, config, agent_id, kind):
    """The _Grant to claim the locked `row` with now, or None when it is passed over. A lead whose
    number is live through another lead is passed over, not held: it is due again when that call
    ends (one live call per number); so is one no caller ID may present while the campaign
    refuses (rules.caller_ids.choice)."""
    in_call = row.pop("number_in_call")
    floor, config = config, config.of(row["form_type"])
    if not transitions.is_due(row, now, config) or callbacks.kept_from(row, agent_id, now, config, tz):
        return None
    if claim_checks.refusal(conn, row, now, tz, config, kind=kind) is not None or in_call is not None:
        return None
    reason, caller_ids = caller_id_choice.check_locked(conn, row, now, config)
    if reason is not None:
        raise _Refused(row["form_type"], reason)
    hit, ticket = contact_caps.check(conn, row, now, tz, floor.contact_caps)
    if hit is not None:
        if caller_ids is not None:
            caller_id_choice.leave(conn, caller_ids)
        lead_events.held(conn, contact_caps.hold(conn, row, hit, now, tz), now, hit.cap, hit.until)
        return None
    caller_id = None if caller_ids is None else caller_id_choice.take(conn, caller_ids)
    if caller_ids is not None and caller_id is None:
        return None
    return _Grant(ticket, caller_id)


def _claim(conn, row, grant, now, tz, agent_id=None):
    """Reserve the locked `row` (transitions.claim_changes) and count it against its number's caps;
    its caller ID (counted when it was taken) is kept on the lead. With `agent_id` (a progressive claim, a redial or an inbound call; the
    agent's row locked) the agent is told and the claim is kept on the agent, so the board shows the
    call's campaign while it rings (migration 0021). Returns the row as it now stands, with
    `caller_id_choice`: the caller ID it presents ({number, pool, match}) or None."""
    changes = transitions.claim_changes(row, now)
    if grant.caller_id is not None:
        changes["caller_id"] = grant.caller_id.number
    claimed = dialstate.write_lead(conn, row, changes, now)
    contact_caps.record(conn, claimed, grant.ticket, now, tz)
    if agent_id is not None:
        queries.set_agent_claim(conn, agent_id=agent_id, lead_id=claimed["id"], reservation_id=claimed["reservation_id"])
        notify(conn, [agent_id], now)
    claimed["caller_id_choice"] = None if grant.caller_id is None else grant.caller_id.answer()
    return claimed


def claim_next(conn, agent_id, now, tz=None):
    """Progressive claim: reserve the next due lead for agent `agent_id`, or return None.

    The agent's own due personal callbacks come first, oldest due first, whatever their priority
    list (rules.leads.callbacks); another agent's are passed by until their fallback.
    None only when no lead matching the agent's skills and allowed priorities is due and
    unreserved. Returns the claimed sales_master row as it now stands (Calling, isReserved 1, a new
    reservation_id, reserved_at = `now`, wall-clock DB_TIMEZONE). Raises agents.UnknownAgent;
    NotClaimable with reason maintenance, or the agent's unavailable reason
    (availability.unavailable_reason: panel_inactive, paused, ami_busy, wrap_up, outbound_blocked).
    """
    config = dialer_config.load_config(conn)
    agent = lock_agent(conn, agent_id)
    if config.isMaintainance:
        raise NotClaimable(MAINTENANCE)
    reason = availability.unavailable_reason(agent, now)
    if reason:
        raise NotClaimable(reason)
    wanted = _open([(skill, agent["priorities"]) for skill in agent["skills"]], now, tz, config)
    row, grant = _lock_first_due(conn, wanted, now, config, _zone(tz, config), agent["id"])
    if row is None:
        return None
    return _claim(conn, row, grant, now, tz, agent["id"])


def claim_predictive(conn, now, *, ahead=False, form_type=None, tz=None):
    """Predictive claim: reserve the next due lead that some free agent could take, or None.

    The customer is called first; `bridge` then picks the agent. With `form_type` (a
    pacing engine dials each skill on its own free agents) only leads of that form_type, and
    NotClaimable no_free_agent when no agent with that skill is free; without it, leads of every
    free agent's skills, as before. Either way a lead is taken only if a free agent with its skill
    also allows its priority_id (an agent with no priority list allows all), so no call is dialed
    that no free agent could take. None only when no such lead is due and unreserved. `ahead`
    (dial ahead): agents on a call or in wrap-up count as free too, so a pacing rule can dial
    before an agent comes free (the customer holds until `bridge` finds one); paused,
    outbound-blocked and panel-inactive agents never count. A form_type whose abandon rate today or
    over the legal period would pass the limit if this call and its pending predictive calls were
    abandons (abandons.held_form_types) is left out while enforce_abandon_limit is
    on; the claimed lead is marked a predictive call (abandons.mark_predictive). Raises
    NotClaimable with reason maintenance, no_free_agent, or abandon_limit when every form_type it
    could dial is over the limit.
    """
    config = dialer_config.load_config(conn)
    if config.isMaintainance:
        raise NotClaimable(MAINTENANCE)
    skills = _free_skills(conn, now, ahead, form_type, config)
    if not skills:
        raise NotClaimable(NO_FREE_AGENT)
    wanted = _open([(row["form_type"], _priorities(row)) for row in skills], now, tz, config, predictive=True)
    skills = [row for row in skills if row["form_type"] in dict(wanted)]
    held = abandons.held_form_types(skills, config)
    if held:
        wanted = [(skill, priorities) for skill, priorities in wanted if skill not in held]
        if not wanted:
            raise NotClaimable(abandons.ABANDON_LIMIT,
                               abandons=[{"form_type": name, **summary} for name, summary in sorted(held.items())])
    row, grant = _lock_first_due(conn, wanted, now, config, _zone(tz, config), kind=calling_rules.PREDICTIVE)
    if row is None:
        return None
    abandons.mark_predictive(conn, row)
    return _claim(conn, row, grant, now, tz)


def _open(wanted, now, tz, config, predictive=False):
    """`wanted` without the form_types whose campaign refuses an outbound claim now (operations.refusal,
    docs/operations/campaigns.md). Raises NotClaimable with the first one's reason and figures {"campaigns":
    [operations.status of each]} when it refuses them all."""
    kept, refused = operations.open_form_types(wanted, now, config, predictive)
    if refused and not kept:
        raise NotClaimable(refused[0][1], campaigns=[operations.status(config, form_type, now, tz)
                                                     for form_type, _ in refused])
    return kept


def _zone(tz, config):
    """DB_TIMEZONE for the calling window and the calling rules; a caller that obeys either must say
    which zone `now` is in."""
    if tz is None and (config.obey_calling_window or calling_rules.active(config)):
        raise ValueError("the calling window or a calling rule is on: the claim needs tz, the zone of now "
                         "(DB_TIMEZONE)")
    return tz


def free_skills(conn, now, *, ahead=False, form_type=None):
    """(form_type, allowed priority_ids) for each skill of the free agents (only `form_type` when
    given), in form_type order: the union of the allowed priorities of the free agents with that
    skill, or [] for every priority when one of them allows all. Free as availability.unavailable_reason
    says (with `ahead`, agents on a call or in wrap-up too), aggregated in one statement."""
    return [(row["form_type"], _priorities(row))
            for row in _free_skills(conn, now, ahead, form_type, dialer_config.load_config(conn))]


def _free_skills(conn, now, ahead, form_type, config):
    """free_skills' rows, each with its form_type's abandon counts when the limit is enforced."""
    return list(queries.free_skills(conn, now=now, ahead=ahead, form_type=form_type,
                                    **abandons.limit_params(now, config)))


def _priorities(row):
    return [] if row["all_priorities"] else [int(p) for p in row["priorities"].split(";")]


def claim_return_call(conn, agent_id, phone_number, dialed_number, now, tz=None):
    """An inbound call from a customer who dialed one of the floor's numbers back: claim the lead
    last called from `dialed_number` to `phone_number` (by the call records), else the customer's
    most recent lead, as claim_lead claims an inbound call (every inbound rule holds: do-not-call,
    live calls); None for a new caller, whose number no lead has. Both numbers are digits as the push
    stores them, read in the floor's phone_default_region (rules.compliance.phones); an unknown
    or retired `dialed_number` still rings: it is the customer calling
    (docs/operations/caller-ids.md). Raises what claim_lead raises."""
    region = dialer_config.load_config(conn).phone_default_region
    try:
        caller = phones.e164(phone_number, region)
    except phones.InvalidNumber:
        return None  # no lead's number reads as nothing
    try:
        dialed = phones.e164(dialed_number, region) if dialed_number else 0
    except phones.InvalidNumber:
        dialed = 0
    found = queries.return_call_lead(conn, phone_e164=caller, dialed=dialed)
    if found is None:
        return None
    return claim_lead(conn, agent_id, found["oli_id"], now, call_type=ClaimKind.INBOUND, tz=tz)


def claim_lead(conn, agent_id, oli_id, now, call_type=vocabulary.REDIAL, tz=None, customer_request=False):
    """Claim a named lead for a redial (call_type redial) or an inbound call (call_type inbound).

    Reopens Received, Rejected and Disposed leads. The agent must be available; an outbound block
    does not stop an inbound call, nor a redial of a lead the agent has an open missed activity for.
    Maintenance stops redials, not inbound calls. A listed phone is refused (do_not_call; an
    inbound call only without dnc_allow_inbound), and a redial outside the customer's calling
    window when it is obeyed (outside_calling_window). A redial of a number at an enabled contact
    cap is refused (contact_cap, with figures {"cap", "frees_at"}: rules.compliance.contact_caps)
    unless `customer_request` (the customer asked for the call); such a redial and an inbound call
    are not counted against the caps. A redial of a lead whose number is live through another lead
    is refused (number_in_call, with figures {"oli_id_in_call"}: one live call per
    number); an inbound call is not (the customer is calling). Returns the claimed row. Raises
    NotClaimable (reason: maintenance, lead_in_flight, the agent's unavailable reason, do_not_call,
    outside_calling_window, number_in_call, contact_cap, caller_id_exhausted), vocabulary.UnknownLead,
    agents.UnknownAgent. A redial presents a caller ID as every outbound claim does (`_claim`); an
    inbound call presents none.
    """
    config = dialer_config.load_config(conn)
    if config.isMaintainance and call_type != "inbound":
        raise NotClaimable(MAINTENANCE)
    agent = lock_agent(conn, agent_id)
    own_missed = bool(queries.agent_has_missed_activity(conn, agent_id=agent_id, oli_id=oli_id))
    reason = availability.unavailable_reason(agent, now, outbound=call_type != "inbound" and not own_missed)
    if reason:
        raise NotClaimable(reason)
    counted = contact_caps.counted(call_type, customer_request)
    row = queries.lock_lead_skip_locked(conn, oli_id=oli_id)
    if row is None:
        if not queries.lead_exists(conn, oli_id=oli_id):
            raise vocabulary.UnknownLead(oli_id)
        raise NotClaimable("lead_in_flight")  # another transaction holds it right now
    in_call = row.pop("number_in_call")
    if row["isReserved"]:
        raise NotClaimable("lead_in_flight")
    floor, config = config, config.of(row["form_type"])
    reason = operations.refusal(floor, row["form_type"], now) if call_type != "inbound" else None
    if reason:
        raise NotClaimable(reason, campaigns=[operations.status(floor, row["form_type"], now, tz)])
    reason, figures = claim_checks.verdict(conn, row, now, _zone(tz, config), config, call_type)
    if reason:
        raise NotClaimable(reason, **figures)
    caller_ids = None
    if call_type != "inbound":
        reason, caller_ids = caller_id_choice.check_locked(conn, row, now, config)
        if reason:
            raise NotClaimable(reason, campaigns=[operations.status(floor, row["form_type"], now, tz)])
    if in_call is not None and call_type != "inbound":
        raise NotClaimable(NUMBER_IN_CALL, oli_id_in_call=in_call)
    hit, ticket = contact_caps.check(conn, row, now, tz, config.contact_caps if counted else (), counted)
    if hit is not None:
        raise NotClaimable(contact_caps.CONTACT_CAP, **contact_caps.refusal_figures(hit))
    caller_id = None
    if caller_ids is not None:
        caller_id = caller_id_choice.take(conn, caller_ids)
        if caller_id is None:
            raise NotClaimable(caller_id_choice.CALLER_ID_EXHAUSTED, pool=caller_id_choice.pool_of(config))
    return _claim(conn, row, _Grant(ticket, caller_id), now, tz, agent["id"])
