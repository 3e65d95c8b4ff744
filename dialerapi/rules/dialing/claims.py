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

import threading

from dialerapi.plumbing.db import queries, union_all
from dialerapi.rules.agents import availability
from dialerapi.rules.agents.roster import lock_agent
from dialerapi.rules.campaigns import operations
from dialerapi.rules.compliance import abandons, calling_rules, claim_checks, contact_caps
from dialerapi.rules.config import dialer as dialer_config
from dialerapi.rules.config import work_window
from dialerapi.rules.core import vocabulary
from dialerapi.rules.events import lead_events
from dialerapi.rules.events.outbox import notify
from dialerapi.rules.leads import callbacks, dialstate, transitions

# Candidates read per form_type (and call zone) in the first window; each later window is
# WINDOW_GROWTH times larger, until the candidates run out.
CANDIDATES = 5
WINDOW_GROWTH = 8
# {form_type: open zone ids} of the form_types whose due order held too few lawful leads with the
# calling window obeyed: read zone by zone while those zones are open.
_by_zone = {}
_by_zone_lock = threading.Lock()
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
    (figures {"campaigns": [operations.status of each]}).
    """

    def __init__(self, reason, **figures):
        super().__init__(reason)
        self.reason = reason
        self.figures = figures


def _candidates(conn, wanted, now, config, max_rows, zones, tz=None, agent_id=None):
    """Unlocked candidate lead ids in claim order, and whether they are all there are.

    `wanted`: (form_type, allowed priority_ids) pairs; an empty priority list allows every priority.
    Bucket by bucket, due-first within a bucket across form_types and call zones; the first
    `max_rows` of each form_type at least. The second value is True when no read was cut.
    Due callbacks wait for the work window when outbound_obey_work_hours = 1 (Claim and retry
    rules 2). `zones`: {form_type: the ids of the call zones open now by its campaign's calling window
    (claim_checks.open_zones), None for every zone}, or one such value for them all.

    With the window obeyed, a form_type's due order is read as far as without it, each lead marked
    lawful or not: where its first due leads are in open zones, that is all it takes. A form_type
    whose read holds fewer than half `max_rows` lawful leads (`_enough`) is read zone by zone instead
    (ix_claim_zone: a closed zone costs nothing, however many of its leads are due), in a second
    statement, and from the first statement on while the same zones are open (`_by_zone`). So the
    cost does not grow with the leads asleep.

    Personal callbacks are left out until their fallback (rules.leads.callbacks); with
    `agent_id` (a progressive claim), that agent's own due ones of these form_types are read in the
    same statement and come first (bucket 0), whatever the agent's priority list.
    """
    if not isinstance(zones, dict):
        zones = {form_type: zones for form_type, _ in wanted}
    own_configs = {form_type: config.of(form_type) for form_type, _ in wanted}
    common = {form_type: {"form_type": form_type, "now": now, "callbacks_open": _callbacks_open(now, own_configs[form_type]),
                          "all_priorities": not priorities, "priorities": tuple(priorities) or (0,),
                          "max_rows": max_rows, **callbacks.fallback_params(now, own_configs[form_type], tz)}
              for form_type, priorities in wanted}
    # The owner's read starts at one row (the first is nearly always taken) and grows as the others do.
    open_skills = [form_type for form_type in common if common[form_type]["callbacks_open"]]
    owner_zones = {zones[form_type] for form_type in open_skills}
    own = callbacks.owner_read(agent_id, open_skills, now, bool(open_skills),
                               owner_zones.pop() if len(owner_zones) == 1 else None, max(1, max_rows // CANDIDATES))
    zoned = [form_type for form_type in common if zones[form_type] is not None]
    by_zone = [form_type for form_type in zoned if _by_zone.get(form_type) == zones[form_type]]
    heads = [(queries.due_candidates, {**params, "any_zone": zones[form_type] is None,
                                       "zone_ids": zones[form_type] or (0,)})
             for form_type, params in common.items() if form_type not in by_zone]
    candidates, complete, sparse = _read(conn, own + heads + _zone_reads(common, by_zone, zones), max_rows)
    if None in sparse:
        sparse.remove(None)
        candidates += _own_lawful(conn, own)
    if sparse:
        with _by_zone_lock:
            _by_zone.update((form_type, zones[form_type]) for form_type in sparse)
        more, more_complete, _ = _read(conn, _zone_reads(common, sparse, zones), max_rows)
        candidates += more
        complete = complete and more_complete
    return _in_claim_order(candidates, now), complete


def _own_lawful(conn, own):
    """The owner's due personal callbacks read on, in larger windows, past those in closed call
    zones, until a lawful one is found or there are no more: they go before the owner's other work."""
    ((query, params),) = own
    limit = params["max_rows"]
    while True:
        limit *= WINDOW_GROWTH
        rows = union_all(conn, [(query, {**params, "max_rows": limit, "part": 0})])
        lawful = [row for row in rows if row["lawful"]]
        if lawful or len(rows) < limit:
            return lawful


def _callbacks_open(now, config):
    return not config.outbound_obey_work_hours or work_window.in_work_window(now, config)


def _zone_reads(common, form_types, zones):
    """A form_type's due order read zone by zone. Its first lawful lead is the first of some open
    zone's, so each zone's read takes its share of the window (at least 1 row; zone 0, leads not yet
    worked out, not counted): with a zone per state a window's rows, not one per zone."""
    return [(queries.due_candidates_in_zone, {**common[form_type], "zone_id": zone_id, "max_rows": max(
        1, common[form_type]["max_rows"] // max(1, len(zones[form_type]) - 1))})
            for form_type in form_types for zone_id in zones[form_type]]


def _read(conn, reads, max_rows):
    """Run `reads`, (query, params) pairs, in one statement. Returns their lawful rows, whether no
    read was cut at its max_rows, and the form_types whose read was cut with fewer than `_enough`
    lawful rows (a head mostly asleep: to be read zone by zone), with None among them when the
    owner's read (callbacks.owner_read) was cut with none lawful."""
    rows = union_all(conn, [(query, {**params, "part": number}) for number, (query, params) in enumerate(reads)])
    found = [[] for _ in reads]
    for row in rows:
        found[row["part"]].append(row)
    candidates, complete, sparse = [], True, []
    for (_, params), read in zip(reads, found):
        lawful = [row for row in read if row["lawful"]]
        if params.get("form_type") is None:  # the agent's own callbacks (callbacks.owner_read)
            candidates += lawful
            if not lawful and len(read) == params["max_rows"]:
                sparse.append(None)  # all in closed call zones: read on (_own_lawful)
            continue
        cut = len(read) == params["max_rows"]
        if cut and len(lawful) < _enough(max_rows) and "zone_id" not in params:
            sparse.append(params["form_type"])
        else:
            candidates += lawful
            complete = complete and not cut
    return candidates, complete, sparse


def _enough(max_rows):
    """The lawful leads a head read must hold to be used as it is: half its window (at least 1), the
    first in claim order and spares for claims that take them first. A head with fewer is read zone
    by zone, a part per open zone (about one per state)."""
    return max(1, max_rows // 2)


def _in_claim_order(rows, now):
    rows.sort(key=lambda row: (row["bucket"], row["due"] is not None, row["due"] or now, row["id"]))
    return [row["id"] for row in rows]


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
    and passed over when the locked row says so. Returns (the row, its contact_caps.Ticket), or
    (None, None).
    """
    tried, held = set(), []
    zones = claim_checks.open_zones(conn, wanted, now, tz, config, kind=kind)
    max_rows = CANDIDATES
    while True:
        ids, complete = _candidates(conn, wanted, now, config, max_rows, zones, tz, agent_id)
        for lead_id in ids:
            if lead_id in tried:
                continue
            tried.add(lead_id)
            row = queries.lock_unreserved(conn, id=lead_id)
            if row is None:
                held.append(lead_id)
                continue
            # The candidate was read without a lock: check again now that it is ours.
            claimable, ticket = _claimable(conn, row, now, tz, config, agent_id, kind)
            if claimable:
                return row, ticket
        if complete:
            fresh = claim_checks.open_zones(conn, wanted, now, tz, config, reload=True, kind=kind)
            if fresh == zones:
                break
            zones, max_rows = fresh, CANDIDATES
            continue
        max_rows *= WINDOW_GROWTH
    for lead_id in held:
        row = queries.lock_unreserved_waiting(conn, id=lead_id)
        if row is not None:
            claimable, ticket = _claimable(conn, row, now, tz, config, agent_id, kind)
            if claimable:
                return row, ticket
    return None, None


def _claimable(conn, row, now, tz, config, agent_id, kind):
    """(whether the locked `row` may be claimed now, the contact_caps.Ticket to count it with). A
    lead whose number is live through another lead is passed over, not held: it is due again when
    that call ends (one live call per number)."""
    in_call = row.pop("number_in_call")
    floor, config = config, config.of(row["form_type"])
    if not transitions.is_due(row, now, config) or callbacks.kept_from(row, agent_id, now, config, tz):
        return False, None
    if claim_checks.refusal(conn, row, now, tz, config, kind=kind) is not None or in_call is not None:
        return False, None
    reason = operations.check_locked(conn, row)
    if reason is not None:
        raise _Refused(row["form_type"], reason)
    hit, ticket = contact_caps.check(conn, row, now, tz, floor.contact_caps)
    if hit is not None:
        lead_events.held(conn, contact_caps.hold(conn, row, hit, now, tz), now, hit.cap, hit.until)
        return False, None
    return True, ticket


def _claim(conn, row, ticket, now, tz, agent_id=None):
    """Reserve the locked `row` (transitions.claim_changes) and count it against its number's caps.
    With `agent_id` (a progressive claim, a redial or an inbound call; the agent's row locked) the
    agent is told and the claim is kept on the agent, so the board shows the call's campaign while
    it rings (migration 0021)."""
    claimed = dialstate.write_lead(conn, row, transitions.claim_changes(row, now), now)
    contact_caps.record(conn, claimed, ticket, now, tz)
    if agent_id is not None:
        queries.set_agent_claim(conn, agent_id=agent_id, lead_id=claimed["id"], reservation_id=claimed["reservation_id"])
        notify(conn, [agent_id], now)
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
    row, ticket = _lock_first_due(conn, wanted, now, config, _zone(tz, config), agent["id"])
    if row is None:
        return None
    return _claim(conn, row, ticket, now, tz, agent["id"])


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
    row, ticket = _lock_first_due(conn, wanted, now, config, _zone(tz, config), kind=calling_rules.PREDICTIVE)
    if row is None:
        return None
    abandons.mark_predictive(conn, row)
    return _claim(conn, row, ticket, now, tz)


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
    outside_calling_window, number_in_call, contact_cap), vocabulary.UnknownLead, agents.UnknownAgent.
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
    if call_type != "inbound":
        reason = operations.refusal(config, row["form_type"], now) or operations.check_locked(conn, row)
        if reason:
            raise NotClaimable(reason, campaigns=[operations.status(config, row["form_type"], now, tz)])
    config = config.of(row["form_type"])
    reason, figures = claim_checks.verdict(conn, row, now, _zone(tz, config), config, call_type)
    if reason:
        raise NotClaimable(reason, **figures)
    if in_call is not None and call_type != "inbound":
        raise NotClaimable(NUMBER_IN_CALL, oli_id_in_call=in_call)
    hit, ticket = contact_caps.check(conn, row, now, tz, config.contact_caps if counted else (), counted)
    if hit is not None:
        raise NotClaimable(contact_caps.CONTACT_CAP, **contact_caps.refusal_figures(hit))
    return _claim(conn, row, ticket, now, tz, agent["id"])
