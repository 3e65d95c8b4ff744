"""The engine side's request schemas (/engine/): snake_case like the columns the engine shares
(decisions.md D1), times per D2, on the shared types of web.fields.
"""

from marshmallow import ValidationError, validates_schema
from marshmallow.validate import Length, OneOf, Range

from dialerapi.rules.agents.roster import CONNECTED_CALL_TYPES
from dialerapi.rules.core.vocabulary import CALL_TYPES, OUTCOMES, REDIAL
from dialerapi.rules.dialing.engine import CLAIM_MODES
from dialerapi.web.fields import (
    EMPLOYEE_ID,
    ApiSchema,
    OliId,
    PhoneNumber,
    StrictBoolean,
    StrictInteger,
    Text,
    WallClockDateTime,
)


def _request_id():
    return Text(required=True, validate=Length(1, 100),
                metadata={"description": "Your id of this request: a retry with the same id gets the first answer"})


def _engine_oli_id(**kwargs):
    return OliId(**kwargs)


class ProgressiveClaimSchema(ApiSchema):
    """POST /engine/claim, mode progressive: {mode, request_id, agent_id}: the next due lead for the agent."""

    mode = Text(required=True, validate=OneOf(["progressive"]))
    request_id = _request_id()
    agent_id = StrictInteger(required=True, validate=EMPLOYEE_ID,
                             metadata={"description": "The agent whose desk rings first"})


class PredictiveClaimSchema(ApiSchema):
    """POST /engine/claim, mode predictive: {mode, request_id, form_type?, ahead?}: a lead that a free agent
    could take (skill and priority), of `form_type` only when given (pacing per skill)."""

    mode = Text(required=True, validate=OneOf(["predictive"]))
    request_id = _request_id()
    form_type = Text(validate=Length(1, 64), metadata={
        "description": "Only a lead of this form_type, for a pacing engine that dials each skill on its own free "
                       "agents; `no_free_agent` when no agent with this skill is free. Omitted: any free agent's "
                       "skill."})
    ahead = StrictBoolean(load_default=False, metadata={
        "description": "Dial ahead: agents on a call or in wrap-up count as free too (the customer holds until "
                       "a bridge finds one). Default false: only agents free now."})


class NamedClaimSchema(ApiSchema):
    """POST /engine/claim, mode redial or inbound: {mode, request_id, agent_id, oli_id, customer_request?}:
    that lead for that agent."""

    mode = Text(required=True, validate=OneOf([REDIAL, "inbound"]))
    request_id = _request_id()
    agent_id = StrictInteger(required=True, validate=EMPLOYEE_ID)
    oli_id = _engine_oli_id(required=True)
    customer_request = StrictBoolean(load_default=False, metadata={
        "description": "A redial the customer asked for: not held to the contact caps, nor counted "
                       "against them. Default false."})


class InboundClaimSchema(ApiSchema):
    """POST /engine/claim, mode inbound: {mode, request_id, agent_id, oli_id} (that lead), or
    {mode, request_id, agent_id, phone_number, dialed_number?} (a return call: the customer's
    number and the caller ID they dialed, docs/operations/caller-ids.md)."""

    mode = Text(required=True, validate=OneOf(["inbound"]))
    request_id = _request_id()
    agent_id = StrictInteger(required=True, validate=EMPLOYEE_ID)
    oli_id = _engine_oli_id()
    phone_number = PhoneNumber(metadata={"description": "The caller's number, instead of oli_id: the lead last "
                                                        "called from dialed_number to it, else its latest lead"})
    dialed_number = PhoneNumber(metadata={"description": "The floor's number the customer dialed (a caller ID)"})

    @validates_schema
    def one_lead(self, data, **kwargs):
        if ("oli_id" in data) == ("phone_number" in data):
            raise ValidationError("give oli_id, or the caller's phone_number", "oli_id")
        if "dialed_number" in data and "phone_number" not in data:
            raise ValidationError("goes with phone_number (a return call)", "dialed_number")


CLAIM_SCHEMAS = {"progressive": ProgressiveClaimSchema, "predictive": PredictiveClaimSchema,
                 REDIAL: NamedClaimSchema, "inbound": InboundClaimSchema}


class EngineClaimSchema(ApiSchema):
    """A claim whose mode is missing or unknown: reports the mode, and the types of the rest."""

    mode = Text(required=True, validate=OneOf(CLAIM_MODES))
    request_id = _request_id()
    agent_id = StrictInteger(validate=EMPLOYEE_ID)
    oli_id = _engine_oli_id()


def load_engine_claim(body):
    """Validate a POST /engine/claim body with the schema of its `mode` (CLAIM_SCHEMAS).

    Returns {mode, request_id, agent_id?, oli_id?}. A field the mode does not take is an unknown
    field. Raises marshmallow.ValidationError.
    """
    mode = body.get("mode") if isinstance(body, dict) else None
    schema = CLAIM_SCHEMAS.get(mode) if isinstance(mode, str) else None
    return (schema or EngineClaimSchema)().load(body)


class EngineBridgeSchema(ApiSchema):
    """POST /engine/bridge: {oli_id, request_id}."""

    oli_id = _engine_oli_id(required=True)
    request_id = _request_id()


class EngineCallConnectedSchema(ApiSchema):
    """POST /engine/call-connected: {oli_id, agent_id, call_type (outbound or redial), request_id}."""

    oli_id = _engine_oli_id(required=True)
    agent_id = StrictInteger(required=True, validate=EMPLOYEE_ID)
    call_type = Text(load_default="outbound", validate=OneOf(CONNECTED_CALL_TYPES))
    request_id = _request_id()


# What each outcome of a settle leaves on the lead (lead-intake-api.md, the `Calling` rows of
# "States and transitions"), for the API document.
OUTCOME_HELP = "; ".join(
    f"`{outcome}`: {'the status before the claim' if status is None else status}, last_dial_result {result}"
    for outcome, (status, result) in OUTCOMES.items()
)


class EngineSettleSchema(ApiSchema):
    """POST /engine/settle: {oli_id, outcome, started_at, agent_id?, call_type, hangup_by?, hangup_cause?,
    call_id?, reservation_id?}.

    started_at per D2 (wall-clock DB_TIMEZONE, or ISO 8601 with an offset), loaded as a naive
    DB_TIMEZONE datetime. A settle is known by call_id when given, else by oli_id and started_at.
    reservation_id, when given, must be the lead's current reservation (the claim's answer).
    """

    oli_id = _engine_oli_id(required=True)
    outcome = Text(required=True, validate=OneOf(list(OUTCOMES)), metadata={
        "description": f"How the call ended. Next dial_status and last_dial_result: {OUTCOME_HELP}. "
                       "no_answer, busy and congestion end Disposed once call_count reaches max_tries."})
    started_at = WallClockDateTime(required=True, metadata={
        "description": "When the call was originated: `YYYY-MM-DD HH:MM[:SS]` wall-clock in the service's "
                       "DB_TIMEZONE, or ISO 8601 with an offset or `Z` (converted). Recorded on the call attempt; "
                       "without call_id it also names the settle for retries.",
        "example": "2026-11-21 10:00:05"})
    agent_id = StrictInteger(validate=EMPLOYEE_ID, metadata={
        "description": "The agent who took the call; must be on the roster (404 unknown_agent)"})
    call_type = Text(load_default="outbound", validate=OneOf(CALL_TYPES))
    hangup_by = Text(validate=Length(1, 32))
    hangup_cause = Text(validate=Length(1, 64))
    call_id = Text(validate=Length(1, 100),
                   metadata={"description": "Your id of the call: a settle sent again with it answers the first result"})
    reservation_id = Text(validate=Length(1, 36), metadata={
        "description": "The reservation_id the claim answered. Given, the settle applies only to that "
                       "reservation: 409 stale_reservation once it was released or settled."})


class EngineAgentStateSchema(ApiSchema):
    """POST /engine/agent-state: {agent_id, panel_active?, ami_idle?, wrapup_seconds?}; what is left out is kept."""

    agent_id = StrictInteger(required=True, validate=EMPLOYEE_ID)
    panel_active = StrictBoolean()
    ami_idle = StrictBoolean()
    wrapup_seconds = StrictInteger(validate=Range(0, 86400, error="must be 0-86400 seconds"),
                                   metadata={"description": "In wrap-up for this many seconds from now; 0 ends it"})


class EngineFloorSchema(ApiSchema):
    """POST /engine/floor: {form_type?}: the floor per form_type for a pacing engine."""

    form_type = Text(validate=Length(1, 64), metadata={
        "description": "Only this form_type (answered even when no agent has it). Omitted: every form_type some "
                       "agent has."})
