"""The response shapes of the OpenAPI document (marshmallow schemas that exist for the document
only: the service builds its answers as dicts). Request bodies are the sides' own schemas.
"""

from marshmallow import Schema, fields
from marshmallow.validate import OneOf

from dialerapi.openapi import caller_ids as caller_id_document
from dialerapi.openapi.campaigns import CampaignStatusSchema
from dialerapi.openapi.lead_responses import WALL, ResultCallSchema, ResultLeadSchema
from dialerapi.rules.compliance.claim_checks import HELD_REASONS
from dialerapi.rules.config import ranges


class DetailSchema(Schema):
    field = fields.String(required=True, metadata={"example": "leads[3].phone_number"})
    message = fields.String(required=True, metadata={"example": "must be 10-15 digits after removing spaces and punctuation"})


class AbandonWindowSchema(Schema):
    answered = fields.Integer(required=True, metadata={"description": "Settles with outcome answered or abandoned"})
    abandoned = fields.Integer(required=True, metadata={
        "description": "Settles with outcome abandoned, plus answered calls connected to an agent late"})
    late_connects = fields.Integer(required=True, metadata={
        "description": "Answered calls whose agent came more than abandon_connect_seconds after the answer"})
    machines = fields.Integer(required=True, metadata={
        "description": "Settles with outcome machine (answering machine detected): neither answered nor "
                       "abandoned"})
    rate = fields.Float(required=True, metadata={
        "example": 0.0125, "description": "abandoned / answered, with amd_false_positive_share of machines added to "
                                          "both (0 by default); 0 with none"})


class AbandonWindowsSchema(Schema):
    class Meta:
        # "15m" is not a Python name.
        include = {"15m": fields.Nested(AbandonWindowSchema, metadata={
            "description": "The current minute and the 14 before it (absent from a 409's figures)"})}

    today = fields.Nested(AbandonWindowSchema, required=True, metadata={"description": "The floor's day, DB_TIMEZONE"})
    period = fields.Nested(AbandonWindowSchema, required=True, metadata={
        "description": "abandon_period: 24h (the last 1,440 minutes) or 30d (today and the 29 days before)"})


class AbandonsSchema(Schema):
    form_type = fields.String(metadata={"description": "In a 409's figures only"})
    limit = fields.Float(required=True, metadata={"example": 0.03})
    period = fields.String(required=True, validate=OneOf(ranges.ABANDON_PERIODS))
    min_answered = fields.Integer(required=True, metadata={
        "description": "Below this many answered in a window, the limit is not enforced on it"})
    enforced = fields.Boolean(required=True, metadata={"description": "enforce_abandon_limit"})
    pending = fields.Integer(required=True, metadata={
        "description": "Live predictive calls no agent has taken yet (ringing or holding): the limit's check "
                       "counts them as answered abandons until one does"})
    over_limit = fields.Boolean(required=True, metadata={
        "description": "today or period is at or over the limit (pending calls counted as abandons) with "
                       "min_answered answered: predictive claims of this form_type answer 409 not_claimable "
                       "abandon_limit while enforced"})
    windows = fields.Nested(AbandonWindowsSchema, required=True)


class ErrorSchema(Schema):
    ok = fields.Boolean(required=True, metadata={"enum": [False]})
    error = fields.String(required=True, metadata={"example": "validation_failed"})
    details = fields.List(fields.Nested(DetailSchema), metadata={"description": "Only on 400 validation_failed"})
    reason = fields.String(metadata={"description": "On 409 not_claimable: why the agent or lead cannot take it; on 401 "
                                                    "for a bad agent token: token_expired or invalid_token"})
    abandons = fields.List(fields.Nested(AbandonsSchema), metadata={
        "description": "On 409 not_claimable abandon_limit: the figures of each form_type held back"})
    cap = fields.String(metadata={"description": "On 409 not_claimable contact_cap: the cap the number is at"})
    frees_at = fields.String(metadata={
        "example": "2026-11-28 10:15:00",
        "description": "On 409 not_claimable contact_cap: when the cap's window frees the number, wall-clock DB_TIMEZONE"})
    oli_id_in_call = fields.String(metadata={
        "description": "On 409 not_claimable number_in_call: the lead whose live call the phone number is on"})
    rule = fields.String(allow_none=True, metadata={
        "example": "us-la", "description": "On 409 not_claimable for a calling rule: the rule's name"})
    source = fields.String(allow_none=True, metadata={
        "description": "On 409 not_claimable for a calling rule: its statute, or the restriction's note"})
    note = fields.String(allow_none=True, metadata={
        "description": "On 409 not_claimable state_holiday: the holiday's name; emergency: the restriction's note"})
    next_at = fields.String(allow_none=True, metadata={
        "example": "2026-11-30 09:00:00",
        "description": "On 409 not_claimable for the calling window or a calling rule: the next moment "
                       "they let the lead be called, wall-clock DB_TIMEZONE; null when none comes within 15 days"})


class PushResultSchema(Schema):
    oli_id = fields.String(required=True)
    status = fields.String(required=True, validate=OneOf(["inserted", "updated", "skipped_in_flight"]))
    data_id = fields.UUID(required=True)
    callback_scheduled_at = fields.Raw(required=True, allow_none=True,
                                       metadata={"description": "Exactly as sent; null when omitted"})
    do_not_call = fields.Boolean(metadata={
        "enum": [True], "description": "Present (true) only when the lead's phone is on the do-not-call list: "
        "the lead is stored as `status` says, and no claim hands it out"})


class PushResponseSchema(Schema):
    ok = fields.Boolean(required=True)
    leads = fields.List(fields.Nested(PushResultSchema), required=True)


class CallbackLeadSchema(Schema):
    oli_id = fields.String(required=True)
    data_id = fields.UUID(required=True)
    dial_status = fields.String(required=True, metadata={"enum": ["Callback"]})
    callback_scheduled_at = fields.String(required=True, metadata={"example": "2026-11-23 11:30:00"})


class SendCallbackResponseSchema(Schema):
    ok = fields.Boolean(required=True)
    lead = fields.Nested(CallbackLeadSchema, required=True)


class PendingCallbackSchema(Schema):
    id = fields.Integer(required=True)
    oli_id = fields.String(required=True)
    scheduled_at = fields.String(required=True, metadata={"example": "2026-11-23 11:30:00"})
    status = fields.String(required=True, validate=OneOf(["applied", "pending"]))


class PendingCallbackResponseSchema(Schema):
    ok = fields.Boolean(required=True)
    pending = fields.Nested(PendingCallbackSchema, required=True)


class PendingDispositionSchema(Schema):
    id = fields.Integer(required=True)
    oli_id = fields.String(required=True)
    action = fields.String(required=True, metadata={"enum": ["dispose"]})
    reason = fields.String(required=True)
    status = fields.String(required=True, validate=OneOf(["applied", "pending"]))


class PendingDispositionResponseSchema(Schema):
    ok = fields.Boolean(required=True)
    pending = fields.Nested(PendingDispositionSchema, required=True)


class MissedActivitySchema(Schema):
    id = fields.Integer(required=True)
    oli_id = fields.String(required=True)
    lead_id = fields.Integer(required=True)
    call_type = fields.String(required=True)
    extension = fields.String(required=True, allow_none=True)
    connected_at = fields.String(required=True, metadata={"example": "2026-11-21T04:30:00Z"})
    ended_at = fields.String(required=True, allow_none=True, metadata={"description": "null while the call is live"})
    due_at = fields.String(required=True, allow_none=True, metadata={"description": "null while the call is live"})
    overdue = fields.Boolean(required=True)


class MissedActivitiesResponseSchema(Schema):
    ok = fields.Boolean(required=True)
    agent_id = fields.Integer(required=True)
    blocked = fields.Boolean(required=True)
    grace_minutes = fields.Integer(required=True)
    items = fields.List(fields.Nested(MissedActivitySchema), required=True)


class PersonalCallbackSchema(Schema):
    oli_id = fields.String(required=True)
    data_id = fields.String(required=True)
    client_name = fields.String(required=True)
    form_type = fields.String(required=True)
    callback_scheduled_at = fields.String(required=True, metadata={"example": "2026-11-27 11:00:00",
                                                                    "description": "Wall-clock DB_TIMEZONE"})
    due = fields.Boolean(required=True)
    seconds_until_due = fields.Integer(required=True, metadata={"description": "0 once due; as of the answer"})
    fallback_minutes = fields.Integer(required=True, allow_none=True, metadata={
        "description": "Its campaign's personal_callback_fallback_minutes (the floor's without one); null: never"})
    fallback_at = fields.String(required=True, allow_none=True, metadata={
        "description": "When anyone with the skill may take it (DB_TIMEZONE); null: never"})
    minutes_until_fallback = fields.Integer(required=True, allow_none=True, metadata={
        "description": "Whole minutes, rounded up; 0 once past; null: never"})


class AgentCallbacksResponseSchema(Schema):
    ok = fields.Boolean(required=True)
    agent_id = fields.Integer(required=True)
    fallback_minutes = fields.Integer(required=True, allow_none=True, metadata={
        "description": "The floor's personal_callback_fallback_minutes (each item has its campaign's); "
                       "null: a personal callback never falls back"})
    items = fields.List(fields.Nested(PersonalCallbackSchema), required=True, metadata={
        "description": "Due in the next 24 hours or already due, oldest first, at most 100"})


class PauseReasonSchema(Schema):
    code = fields.String(required=True)
    label = fields.String(required=True)
    note = fields.Boolean(metadata={"description": "true on `other`, which needs a note"})


class PauseReasonsResponseSchema(Schema):
    ok = fields.Boolean(required=True)
    note_max_words = fields.Integer(required=True)
    note_max_chars = fields.Integer(required=True)
    reasons = fields.List(fields.Nested(PauseReasonSchema), required=True)
    system = fields.List(fields.Nested(PauseReasonSchema), required=True)


class HealthzResponseSchema(Schema):
    ok = fields.Boolean(required=True)
    ami = fields.Boolean(required=True)
    db = fields.Boolean(required=True)


class DatabaseSchemaStatusSchema(Schema):
    """/health's `schema`: the migrations the database has of this release's (plumbing.release)."""

    applied = fields.String(required=True, allow_none=True,
                            metadata={"description": "The last migration the database has (0027.caller-ids)"})
    expected = fields.String(required=True, metadata={"description": "This release's last migration"})
    pending = fields.List(fields.String(), required=True, allow_none=True, metadata={
        "description": "This release's migrations the database lacks (the host answers 503 until "
                       "`dialerapi db upgrade` applies them); null when the database did not answer"})
    current = fields.Boolean(required=True, allow_none=True)


class HealthResponseSchema(Schema):
    ok = fields.Boolean(required=True)
    status = fields.String(required=True, validate=OneOf(["healthy", "unhealthy"]))
    checks = fields.Dict(required=True, metadata={"description": "db: {ok, host, node (host:port answering), "
                                                                 "cluster (null off Galera, else wsrep_cluster_size, "
                                                                 "wsrep_local_state_comment, wsrep_ready), "
                                                                 "latency_ms, error}; "
                                                                 "ami: {ok, configured, host, latency_ms, error}; "
                                                                 "webhooks: {ok, endpoints, dispatcher: {running, "
                                                                 "holder, lease_until}, oldest_undelivered_seconds, "
                                                                 "limit_seconds, error}"})
    metrics = fields.Dict(required=True, metadata={
        "description": "uptime_seconds, requests, pending_actions, open_missed_activities, blocked_agents, "
                       "live_reservations, unleased_reservations, oldest_reservation_seconds, last_sweep_at, "
                       "last_sweep_result, agent_sockets: {open, capacity, left, refused, hosts: [{host, open, "
                       "capacity, left, refused, workers, draining, updated_at}]} (hosts that reported in the last "
                       "60 s; draining: it got SIGTERM and is handing its sockets to the other hosts)"})
    logs = fields.List(fields.String(), required=True)
    version = fields.String(required=True, metadata={"description": "This release's version (semantic versioning)"})
    schema = fields.Nested(DatabaseSchemaStatusSchema, required=True)


class EngineLeadSchema(Schema):
    lead_id = fields.Integer(required=True, metadata={"description": "sales_master.id"})
    oli_id = fields.String(required=True)
    data_id = fields.String(required=True, allow_none=True)
    phone_number = fields.String(required=True)
    client_name = fields.String(required=True)
    form_type = fields.String(required=True)
    priority_id = fields.Integer(required=True)
    dial_status = fields.String(required=True, metadata={"example": "Calling"})
    previous_dial_status = fields.String(required=True, allow_none=True)
    disposeRemark = fields.String(required=True, allow_none=True)
    last_dial_result = fields.String(required=True, allow_none=True)
    hangup_by = fields.String(required=True, allow_none=True)
    hangup_cause = fields.String(required=True, allow_none=True)
    call_count = fields.Integer(required=True)
    first_attempt_at = fields.String(required=True, allow_none=True, metadata={"example": "2026-11-21 10:00:00"})
    last_attempt_at = fields.String(required=True, allow_none=True)
    next_retry_at = fields.String(required=True, allow_none=True)
    callback_scheduled_at = fields.String(required=True, allow_none=True)
    isReserved = fields.Integer(required=True)
    reservation_id = fields.String(required=True, allow_none=True, metadata={
        "description": "The claim's reservation (null once it ended): send it with the settle"})
    reserved_at = fields.String(required=True, allow_none=True, metadata={
        "description": "When the reservation was made, wall-clock DB_TIMEZONE; its lease runs from here"})


class ClaimCallerIdSchema(Schema):
    number = fields.String(required=True, metadata={"example": "+19195550100", "description": "E.164: present it"})
    pool = fields.String(required=True, metadata={"description": "The campaign's pool"})
    match = fields.String(required=True, metadata={
        "description": "area_code, state, pool, sticky (the number the lead last saw) or default"})


class EngineClaimResponseSchema(Schema):
    ok = fields.Boolean(required=True)
    lead = fields.Nested(EngineLeadSchema, required=True, allow_none=True, metadata={
        "description": "The reserved lead (Calling, isReserved 1), or null: no lead the claim may take is due "
                       "and unreserved"})
    caller_id = fields.Nested(ClaimCallerIdSchema, allow_none=True, metadata={
        "description": "The caller ID the call presents (docs/operations/caller-ids.md); null while the floor has "
                       "no caller IDs, for an inbound call, and with no lead"})


class EngineBridgeResponseSchema(Schema):
    ok = fields.Boolean(required=True)
    oli_id = fields.String(required=True)
    agent_id = fields.Integer(required=True, allow_none=True,
                              metadata={"description": "The agent to bridge to (now AMI-busy), or null: hold the call"})


class EngineCallConnectedResponseSchema(Schema):
    ok = fields.Boolean(required=True)
    missed_activity_id = fields.Integer(required=True)


class EngineAppliedSchema(Schema):
    id = fields.Integer(required=True)
    action = fields.String(required=True, validate=OneOf(["callback", "dispose"]))
    scheduled_at = fields.String(required=True, allow_none=True)
    reason = fields.String(required=True, allow_none=True)


class EngineSettleResponseSchema(Schema):
    ok = fields.Boolean(required=True)
    lead = fields.Nested(EngineLeadSchema, required=True)
    applied = fields.Nested(EngineAppliedSchema, required=True, allow_none=True,
                            metadata={"description": "The held CRM callback or disposition applied at settle, or null"})


class EngineAgentSchema(Schema):
    agent_id = fields.Integer(required=True)
    panel_active = fields.Boolean(required=True)
    ami_idle = fields.Boolean(required=True)
    wrapup_until = fields.String(required=True, allow_none=True)
    pause_code = fields.String(required=True, allow_none=True)
    outbound_blocked = fields.Boolean(required=True)
    available = fields.Boolean(required=True)
    unavailable_reason = fields.String(required=True, allow_none=True, validate=OneOf(
        ["panel_inactive", "paused", "ami_busy", "wrap_up", "outbound_blocked"]))


class EngineAgentStateResponseSchema(Schema):
    ok = fields.Boolean(required=True)
    agent = fields.Nested(EngineAgentSchema, required=True)


class FloorAgentsSchema(Schema):
    free = fields.Integer(required=True)
    on_call = fields.Integer(required=True)
    wrap_up = fields.Integer(required=True)
    paused = fields.Integer(required=True)
    outbound_blocked = fields.Integer(required=True)
    panel_inactive = fields.Integer(required=True)


class FloorCallsSchema(Schema):
    reserved = fields.Integer(required=True, metadata={"description": "Live reservations of this form_type"})
    connected = fields.Integer(required=True, metadata={"description": "Of those, call-connected reported"})
    not_connected = fields.Integer(required=True, metadata={
        "description": "reserved - connected: ringing, or answered and waiting for a bridge"})


class FloorPersonalCallbacksSchema(Schema):
    owner_free = fields.Integer(required=True, metadata={"description": "Due, before fallback, owner free now"})
    owner_busy = fields.Integer(required=True, metadata={
        "description": "Due, before fallback, owner on a call, in wrap-up, paused, blocked or panel-inactive"})
    past_fallback = fields.Integer(required=True, metadata={
        "description": "Due and past fallback: any agent with the skill may take them"})


# Unreserved leads in the claim states each rule holds back from a progressive claim.
FloorLeadsHeldSchema = Schema.from_dict({reason: fields.Integer(required=True) for reason in HELD_REASONS},
                                        name="FloorLeadsHeldSchema")


class FloorFormTypeSchema(Schema):
    form_type = fields.String(required=True)
    agents = fields.Nested(FloorAgentsSchema, required=True, metadata={
        "description": "Agents with this skill by state (an agent with several skills counts under each)"})
    calls = fields.Nested(FloorCallsSchema, required=True)
    leads_due = fields.Integer(required=True, metadata={"description": "Due, unreserved leads, at most leads_due_cap"})
    leads_due_capped = fields.Boolean(required=True, metadata={"description": "At least leads_due_cap are due"})
    abandons = fields.Nested(AbandonsSchema, required=True, metadata={
        "description": "The abandon rate per window and the limit (docs/compliance/abandon-rate.md \"Abandon rate\")"})
    personal_callbacks = fields.Nested(FloorPersonalCallbacksSchema, required=True, metadata={
        "description": "Due personal callbacks; leads_due counts them too"})
    leads_waiting_on_caps = fields.Integer(required=True, metadata={
        "description": "Unreserved leads a claim held because their phone number is at a contact cap, not yet freed "
                       "(docs/compliance/contact-caps.md)"})
    campaign = fields.Nested(CampaignStatusSchema, required=True, metadata={
        "description": "Its campaign now: paused, ended, or closed by its calendar until next_open_at"})
    leads_held = fields.Nested(FloorLeadsHeldSchema, required=True, metadata={
        "description": "Leads each rule holds back, per reason, as counted at leads_held_counted_at ("
                       "docs/compliance/state-rules.md)"})
    caller_id = fields.Nested(caller_id_document.FloorCallerIdSchema, required=True, allow_none=True, metadata={
        "description": "Its caller-ID pool today: pace down before it runs dry (null without caller IDs)"})


class FloorWorkWindowSchema(Schema):
    start = fields.String(required=True, metadata={"example": "09:00", "description": "work_start, wall-clock DB_TIMEZONE"})
    end = fields.String(required=True, metadata={"example": "21:00", "description": "work_end; the window may cross midnight"})
    open = fields.Boolean(required=True, metadata={"description": "`at` is inside the window"})
    obeyed = fields.Boolean(required=True, metadata={
        "description": "outbound_obey_work_hours: due callbacks also wait for the window"})
    next_start = fields.String(required=True, allow_none=True, metadata={
        "example": "2026-11-22 09:00:00",
        "description": "The next work start while the window is closed (a lead pushed now is due then); null while open"})


class EngineFloorResponseSchema(Schema):
    ok = fields.Boolean(required=True)
    at = fields.String(required=True, metadata={"example": "2026-11-21 10:00:05"})
    maintenance = fields.Boolean(required=True)
    leads_due_cap = fields.Integer(required=True, metadata={"example": 100})
    leads_held_counted_at = fields.String(required=True, allow_none=True, metadata={
        "example": "2026-11-21T04:30:00Z",
        "description": "When the leads_held of each form_type were counted (ISO 8601 UTC; once a minute); null "
                       "before the first count"})
    work_window = fields.Nested(FloorWorkWindowSchema, required=True, metadata={
        "description": "The floor's work hours: why nothing is due outside them"})
    floor_abandons = fields.Nested(AbandonWindowsSchema, required=True, metadata={
        "description": "The abandon windows summed over the form_types answered"})
    form_types = fields.List(fields.Nested(FloorFormTypeSchema), required=True)
    caller_id_pools = fields.List(fields.Nested(caller_id_document.CallerIdPoolSchema), required=True, metadata={
        "description": "The floor's caller-ID pools today (docs/operations/caller-ids.md); [] without caller IDs"})


class AgentTokenResponseSchema(Schema):
    ok = fields.Boolean(required=True)
    agent_id = fields.Integer(required=True, metadata={"example": 501})
    token = fields.String(required=True, metadata={"description": "Opens this agent's /ws, missed activities and callbacks only"})
    expires_at = fields.String(required=True, metadata={"example": "2026-11-25T18:30:00Z", "description": "UTC"})
    expires_in = fields.Integer(required=True, metadata={"example": 43200, "description": "Seconds from now"})


class LeadReadResponseSchema(Schema):
    ok = fields.Boolean(required=True)
    lead = fields.Nested(ResultLeadSchema, required=True)
    calls = fields.List(fields.Nested(ResultCallSchema), required=True)
    next = fields.String(required=True, allow_none=True, metadata={"description": "cursor of the older calls; null: last page"})


class LeadEventSchema(Schema):
    """One lead event (docs: CRM integration, Results back to your CRM)."""

    id = fields.String(required=True, metadata={"example": "evt_4102", "description": "webhook-id of its webhooks"})
    type = fields.String(required=True, metadata={"example": "lead.call_ended"})
    occurred_at = fields.String(required=True, metadata={"example": "2026-11-21T04:30:00Z"})
    occurred_at_local = fields.String(required=True, metadata=WALL)
    oli_id = fields.String(required=True, allow_none=True, metadata={"description": "null for a campaign.* event"})
    data_id = fields.String(required=True, allow_none=True, metadata={"description": "null for a campaign.* event"})
    data = fields.Dict(required=True, metadata={"description": "The type's own fields"})


class LeadEventsResponseSchema(Schema):
    ok = fields.Boolean(required=True)
    events = fields.List(fields.Nested(LeadEventSchema), required=True)
    next = fields.String(required=True, metadata={"description": "give it back as `after` to resume"})
