"""The response shapes of GET /api/leads/{oli_id}: the lead as it stands,
with why it may not be called now, and its calls (marshmallow schemas for the document only).
"""

from marshmallow import Schema, fields
from marshmallow.validate import OneOf

from dialerapi.rules.compliance import calling_rules

WALL = {"description": "Wall-clock DB_TIMEZONE, YYYY-MM-DD HH:MM:SS"}


class HeldByCapSchema(Schema):
    cap = fields.String(required=True, metadata={"example": "florida-oklahoma-3-per-24h"})
    frees_at = fields.String(required=True, metadata=WALL)


class PlaceSchema(Schema):
    regions = fields.List(fields.String(), required=True, metadata={
        "description": "The regions the lead's calling rules are read for (US-LA; a country)"})
    source = fields.String(required=True, validate=OneOf(["region", "postal_code", "area_code"]), metadata={
        "description": "Which gave them: the CRM's region, its postal code, or the number's area code"})
    region = fields.String(required=True, allow_none=True, metadata={"description": "As pushed"})
    postal_code = fields.String(required=True, allow_none=True, metadata={"description": "As pushed"})


class ConsentReadSchema(Schema):
    type = fields.String(required=True, validate=OneOf(calling_rules.CONSENT_TYPES))
    at = fields.String(required=True, metadata=WALL)
    source = fields.String(required=True, allow_none=True)


class PredictiveCallableSchema(Schema):
    now = fields.Boolean(required=True, metadata={"description": "Whether a predictive claim may take the lead now"})
    reason = fields.String(required=True, allow_none=True, metadata={
        "example": "abandon_limit",
        "description": "Why not: the progressive claim's reason, or not_predictive (its campaign dials none "
                       "predictively), consent_required (a rule asks consent of predictive calls), abandon_limit"})
    rule = fields.String(required=True, allow_none=True)
    source = fields.String(required=True, allow_none=True)
    note = fields.String(required=True, allow_none=True)
    next_at = fields.String(required=True, allow_none=True, metadata={
        **WALL, "description": "When a predictive claim may take it; null: not foreseen (abandon_limit: the calls "
                               "to come lower the rate)"})


class CallableSchema(Schema):
    now = fields.Boolean(required=True, metadata={"description": "Whether a progressive claim may take the lead now"})
    reason = fields.String(required=True, allow_none=True, metadata={
        "example": "state_holiday",
        "description": "Why not: not_due, lead_in_flight, do_not_call, campaign_paused, campaign_ended, "
                       "campaign_closed, contact_cap, emergency, state_holiday, state_sunday, state_hours, "
                       "consent_required, outside_calling_window (docs/compliance/state-rules.md)"})
    rule = fields.String(required=True, allow_none=True, metadata={"example": "us-la"})
    source = fields.String(required=True, allow_none=True, metadata={"description": "The rule's statute"})
    note = fields.String(required=True, allow_none=True, metadata={"example": "Christmas Day"})
    next_at = fields.String(required=True, allow_none=True, metadata={
        **WALL, "description": "When it will be callable, wall-clock DB_TIMEZONE; null: not foreseen"})
    predictive = fields.Nested(PredictiveCallableSchema, required=True, metadata={
        "description": "The same for a predictive claim (abandon_limit is a predictive claim's alone)"})


class ResultLeadSchema(Schema):
    """The lead of GET /api/leads/{oli_id}."""

    oli_id = fields.String(required=True)
    data_id = fields.String(required=True)
    phone_number = fields.String(required=True)
    client_name = fields.String(required=True)
    form_type = fields.String(required=True)
    priority_id = fields.Integer(required=True)
    dial_status = fields.String(required=True, metadata={"example": "Not Connected"})
    disposeRemark = fields.String(required=True, allow_none=True)
    last_dial_result = fields.String(required=True, allow_none=True)
    hangup_by = fields.String(required=True, allow_none=True)
    hangup_cause = fields.String(required=True, allow_none=True)
    call_count = fields.Integer(required=True)
    isReserved = fields.Boolean(required=True)
    last_attempt_at = fields.String(required=True, allow_none=True, metadata=WALL)
    first_attempt_at = fields.String(required=True, allow_none=True, metadata=WALL)
    next_retry_at = fields.String(required=True, allow_none=True, metadata=WALL)
    callback_scheduled_at = fields.String(required=True, allow_none=True, metadata=WALL)
    created_at = fields.String(required=True, metadata=WALL)
    updated_at = fields.String(required=True, metadata=WALL)
    live = fields.Boolean(required=True, metadata={"description": "On a call now (Calling + isReserved)"})
    do_not_call = fields.Boolean(required=True)
    phone_e164 = fields.String(required=True, allow_none=True)
    call_zones = fields.List(fields.String(), required=True, metadata={"description": "IANA zones of the number"})
    callback_agent_id = fields.Integer(required=True, allow_none=True)
    callback_fallback_at = fields.String(required=True, allow_none=True, metadata=WALL)
    contact_cap = fields.Nested(HeldByCapSchema, required=True, allow_none=True, metadata={
        "description": "While a claim holds the lead for a contact cap: which cap, and when it frees the number; "
                       "null otherwise"})
    place = fields.Nested(PlaceSchema, required=True)
    consent = fields.Nested(ConsentReadSchema, required=True, allow_none=True)
    callable = fields.Nested(CallableSchema, required=True, metadata={"description": "Why not now"})


class ResultCallSchema(Schema):
    """One call attempt of GET /api/leads/{oli_id}, newest first."""

    id = fields.Integer(required=True)
    outcome = fields.String(required=True, allow_none=True, metadata={"example": "answered"})
    result = fields.String(required=True, allow_none=True, metadata={"example": "ANSWER"})
    agent_id = fields.Integer(required=True, allow_none=True)
    call_type = fields.String(required=True)
    form_type = fields.String(required=True, allow_none=True)
    started_at = fields.String(required=True, allow_none=True, metadata=WALL)
    ended_at = fields.String(required=True, allow_none=True, metadata=WALL)
    answered_at = fields.String(required=True, allow_none=True, metadata=WALL)
    agent_connected_at = fields.String(required=True, allow_none=True, metadata=WALL)
    connect_seconds = fields.Integer(required=True, allow_none=True)
    late_connect = fields.Boolean(required=True, allow_none=True)
    hangup_by = fields.String(required=True, allow_none=True)
    hangup_cause = fields.String(required=True, allow_none=True)
