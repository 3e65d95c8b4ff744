"""Request schemas (marshmallow) for every endpoint.

Field names, limits and messages are those of lead-intake-api.md ("Resources and their fields",
"Limits") and decisions.md D2-D4. Unknown keys are rejected with the message `unknown field`
(D3). What a schema needs to know of the request (the time zone, the priority catalog) comes in
through `RequestContext`:

    with RequestContext({"tz": ZoneInfo("UTC"), "now": now}):
        callback = SendCallbackSchema().load(body)
"""

import re
from datetime import timedelta

from marshmallow import EXCLUDE, RAISE, Schema, ValidationError, fields, post_load, validates_schema
from marshmallow.experimental.context import Context
from marshmallow.validate import Length, OneOf, Range, Regexp

from .clock import instant, parse_wall_clock
from .agents import CONNECTED_CALL_TYPES
from .dialstate import CALL_TYPES, OUTCOMES, REDIAL
from .engine import CLAIM_MODES

RequestContext = Context[dict]

MAX_CALLBACK_PAST = timedelta(minutes=5)
EMPLOYEE_ID = Range(1, 2**63 - 1, error="must be an employee id from 1 to 2^63-1")

MAX_BATCH = 500
PHONE_DIGITS = (10, 15)
NOT_A_DIGIT = re.compile(r"[^0-9]")


class ApiSchema(Schema):
    """Base schema: unknown keys are errors reported as `unknown field` (D3)."""

    error_messages = {"unknown": "unknown field", "type": "must be a JSON object"}

    class Meta:
        unknown = RAISE


class StrictInteger(fields.Integer):
    """A JSON integer only: strings, floats and booleans are rejected (D4)."""

    default_error_messages = {"invalid": "must be an integer"}

    def __init__(self, **kwargs):
        super().__init__(strict=True, **kwargs)


class Text(fields.String):
    """A JSON string of valid Unicode text; lengths are counted in characters (D4).

    A lone surrogate (`"\\ud800"` in JSON) is refused: it cannot be stored as utf8mb4.
    """

    default_error_messages = {"invalid": "must be a string", "invalid_utf8": "must be valid Unicode text"}

    def _deserialize(self, value, attr, data, **kwargs):
        text = super()._deserialize(value, attr, data, **kwargs)
        if not is_unicode_text(text):
            raise self.make_error("invalid_utf8")
        return text


class OliId(Text):
    """An oli_id: 1-100 characters, without whitespace at either end.

    MariaDB compares oli_id with PAD SPACE (`'PAD-1 '` equals `'PAD-1'`), so an id with a trailing
    space would find, and change, another lead; no CRM means an id with spaces around it either.
    """

    default_error_messages = {"padded": "must not begin or end with whitespace"}

    def __init__(self, **kwargs):
        super().__init__(validate=Length(1, 100), **kwargs)

    def _deserialize(self, value, attr, data, **kwargs):
        text = super()._deserialize(value, attr, data, **kwargs)
        if text != text.strip():
            raise self.make_error("padded")
        return text


def is_unicode_text(text):
    """False when `text` holds a lone surrogate, which utf8mb4 cannot store."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def phone_digits(value):
    """The digits of a phone number sent as a JSON string or integer; None for any other JSON type (D4)."""
    if isinstance(value, bool) or not isinstance(value, (str, int)) or (isinstance(value, int) and value < 0):
        return None
    return NOT_A_DIGIT.sub("", str(value))


class PhoneNumber(fields.Field):
    """A phone number sent as a JSON string or integer, stored as its digits only (D4).

    `+91 98765-43210` loads as `919876543210`; after stripping everything but 0-9 the length must
    be 10-15.
    """

    def _deserialize(self, value, attr, data, **kwargs):
        digits = phone_digits(value)
        if digits is None:
            raise ValidationError("must be a string or a non-negative integer")
        low, high = PHONE_DIGITS
        if not low <= len(digits) <= high:
            raise ValidationError(f"must be {low}-{high} digits after removing spaces and punctuation")
        return digits


class WallClockDateTime(fields.Field):
    """A date and time per D2, loaded as naive wall-clock time in the request's DB_TIMEZONE."""

    def _deserialize(self, value, attr, data, **kwargs):
        try:
            return parse_wall_clock(value, RequestContext.get()["tz"])
        except ValueError:
            raise ValidationError(
                "must be a date and time: YYYY-MM-DD HH:MM[:SS] or ISO 8601; date-only values are rejected"
            ) from None


class LeadSchema(ApiSchema):
    """One lead of a push (lead-intake-api.md, "Lead (master row)"; D4).

    Loads to a dict with oli_id, phone_number (digits), client_name, form_type, priority_id,
    callback_scheduled_at (naive DB_TIMEZONE datetime or None) and callback_scheduled_at_sent (the
    value exactly as sent, for the response). `data_id` and `agent_id` are unknown fields.
    """

    oli_id = OliId(required=True)
    phone_number = PhoneNumber(required=True)
    client_name = Text(required=True, validate=Length(1, 150))
    form_type = Text(required=True, validate=Length(1, 64))
    priority_id = StrictInteger(required=True)
    callback_scheduled_at = WallClockDateTime(load_default=None, allow_none=True)

    @validates_schema(skip_on_field_errors=False)
    def check_priority(self, data, **kwargs):
        """priority_id must exist, be active and not be Final Disposal; only a callback priority takes a time."""
        if "priority_id" not in data:
            return
        problem = priority_problem(
            RequestContext.get()["priorities"], data["priority_id"], data.get("callback_scheduled_at") is not None
        )
        if problem:
            raise ValidationError(*problem)

    @post_load(pass_original=True)
    def keep_sent_callback_time(self, data, original, **kwargs):
        data["callback_scheduled_at_sent"] = original.get("callback_scheduled_at")
        return data


def priority_problem(priorities, priority_id, with_callback_time):
    """(message, field) when a push may not use `priority_id`, else None (lead-intake-api.md, "Priority").

    The priority must exist, be active and not be Final Disposal; only a callback priority takes a
    callback time (`with_callback_time`).
    """
    priority = priorities.get(priority_id)
    if priority is None or not priority["is_active"]:
        return "unknown priority_id", "priority_id"
    if priority["is_disposed"]:
        return "Final Disposal is set only by the dialer and cannot be pushed", "priority_id"
    if with_callback_time and not priority["is_callback"]:
        return "callback_scheduled_at is only allowed for callback priorities", "callback_scheduled_at"
    return None


LEAD_FIELDS = frozenset(LeadSchema._declared_fields)
LEAD_REQUIRED = frozenset(name for name, field in LeadSchema._declared_fields.items() if field.required)
LEAD_TEXT_LENGTHS = {
    name: (field.validate.min, field.validate.max)
    for name, field in LeadSchema._declared_fields.items() if isinstance(field, Text)
}


def plain_lead(lead, priorities):
    """`lead` loaded exactly as LeadSchema loads it, when it is valid and has no callback time; else None.

    Nearly every lead of a CRM batch is such a lead, and marshmallow spends some 60 us on each
    (30 ms for a batch of 500, more than the batch's writes cost the database). This accepts what
    LeadSchema accepts and nothing more, with the schema's own limits, helpers and priority rule;
    anything else (a callback time, a wrong type, any error at all) returns None and is loaded by
    LeadSchema, which reports it. tests/test_schemas.py holds the two to the same answers.
    """
    if type(lead) is not dict or not LEAD_REQUIRED <= lead.keys() <= LEAD_FIELDS:
        return None
    if lead.get("callback_scheduled_at") is not None:
        return None
    for name, (low, high) in LEAD_TEXT_LENGTHS.items():
        text = lead[name]
        if type(text) is not str or not low <= len(text) <= high or not is_unicode_text(text):
            return None
    if lead["oli_id"] != lead["oli_id"].strip():
        return None
    priority_id = lead["priority_id"]
    if type(priority_id) is not int or priority_problem(priorities, priority_id, False):
        return None
    digits = phone_digits(lead["phone_number"])
    if digits is None or not PHONE_DIGITS[0] <= len(digits) <= PHONE_DIGITS[1]:
        return None
    return {
        "oli_id": lead["oli_id"], "phone_number": digits, "client_name": lead["client_name"],
        "form_type": lead["form_type"], "priority_id": priority_id, "callback_scheduled_at": None,
        "callback_scheduled_at_sent": lead.get("callback_scheduled_at"),
    }


class LeadList(fields.List):
    """The `leads` of a batch: each lead loaded by `plain_lead`, or by LeadSchema when it cannot.

    Errors are LeadSchema's, keyed by the lead's index, as fields.List reports them.
    """

    def __init__(self, **kwargs):
        super().__init__(fields.Nested(LeadSchema), **kwargs)

    def _deserialize(self, value, attr, data, **kwargs):
        if not isinstance(value, list):
            return super()._deserialize(value, attr, data, **kwargs)
        # The count is checked before any lead is loaded: a 1 MiB body holds 350,000 empty leads.
        if not 1 <= len(value) <= MAX_BATCH:
            raise ValidationError(f"Length must be between 1 and {MAX_BATCH}.")
        priorities = RequestContext.get()["priorities"]
        loaded, errors = [], {}
        for index, lead in enumerate(value):
            plain = plain_lead(lead, priorities)
            if plain is not None:
                loaded.append(plain)
                continue
            try:
                loaded.append(self.inner.deserialize(lead, **kwargs))
            except ValidationError as error:
                errors[index] = error.messages
        if errors:
            raise ValidationError(errors)
        return loaded


class LeadBatchSchema(ApiSchema):
    """A batch push: `{"leads": [lead, ...]}` with 1-500 leads."""

    leads = LeadList(required=True, validate=Length(1, MAX_BATCH))


def load_push(body, tz, priorities):
    """Validate a push body, either one lead or `{"leads": [...]}`; return the list of loaded leads.

    `tz` is DB_TIMEZONE (callback times are loaded as naive wall-clock time in it, D2);
    `priorities` is {priority_id: {is_active, is_callback, is_disposed}}. Raises
    marshmallow.ValidationError with every problem of the whole body.
    """
    with RequestContext({"tz": tz, "priorities": priorities}):
        if isinstance(body, dict) and "leads" in body:
            return LeadBatchSchema().load(body)["leads"]
        return [LeadSchema().load(body)]


def _optional_text(max_chars):
    return Text(load_default=None, allow_none=True, validate=Length(max=max_chars))


class SendCallbackSchema(ApiSchema):
    """POST /api/send-callback-request: `oliId` and exactly one of `scheduledAt` / `ScheduledAt` (D5).

    Loads to {oli_id, scheduled_at (naive DB_TIMEZONE datetime)}; past times are accepted.
    """

    oliId = OliId(required=True)
    scheduledAt = WallClockDateTime()
    ScheduledAt = WallClockDateTime()

    @validates_schema(pass_original=True, skip_on_field_errors=False)
    def one_time(self, data, original_data, **kwargs):
        if not isinstance(original_data, dict):
            return  # marshmallow already reports "must be a JSON object"
        given = [name for name in ("scheduledAt", "ScheduledAt") if name in original_data]
        if len(given) > 1:
            raise ValidationError("send exactly one of scheduledAt and ScheduledAt", "ScheduledAt")
        if not given:
            raise ValidationError("Missing data for required field.", "scheduledAt")

    @post_load
    def to_action(self, data, **kwargs):
        return {"oli_id": data["oliId"], "scheduled_at": data.get("scheduledAt") or data.get("ScheduledAt")}


class AuditSchema(ApiSchema):
    """The optional audit fields stored with a pending row (lead-intake-api.md, "Pending row")."""

    agentId = StrictInteger(load_default=None, allow_none=True, validate=EMPLOYEE_ID)
    extension = _optional_text(16)
    workStatus = _optional_text(100)
    subDisposition = _optional_text(100)
    remarks = _optional_text(500)


class PendingCallbackSchema(AuditSchema):
    """POST /api/pending-callbacks (camelCase). `scheduledAt` must not be more than 5 minutes in the past.

    Loads to {oli_id, action: "callback", scheduled_at, agentId, extension, callbackType,
    workStatus, subDisposition, remarks}.
    """

    oliId = OliId(required=True)
    scheduledAt = WallClockDateTime(required=True)
    callbackType = Text(load_default=None, allow_none=True, validate=OneOf(["today", "future_day"]))

    @validates_schema(skip_on_field_errors=True)
    def not_in_the_past(self, data, **kwargs):
        # Instants, not wall-clock values: across a daylight-saving change the two differ by the shift.
        context = RequestContext.get()
        if instant(data["scheduledAt"], context["tz"]) < instant(context["now"], context["tz"]) - MAX_CALLBACK_PAST:
            raise ValidationError("must not be more than 5 minutes in the past", "scheduledAt")

    @post_load
    def to_action(self, data, **kwargs):
        return {"oli_id": data.pop("oliId"), "action": "callback", "scheduled_at": data.pop("scheduledAt"), **data}


class PendingDispositionSchema(AuditSchema):
    """POST /api/pending-dispositions: `oliId`, `reason` (1-200 chars) and the audit fields.

    Loads to {oli_id, action: "dispose", reason, agentId, extension, workStatus, subDisposition, remarks}.
    """

    oliId = OliId(required=True)
    reason = Text(required=True, validate=Length(1, 200))

    @post_load
    def to_action(self, data, **kwargs):
        return {"oli_id": data.pop("oliId"), "action": "dispose", **data}


class MissedActivitiesQuery(Schema):
    """GET /api/missed-activities query: exactly one of `agentId` (employee id) and `extension` (3-16 digits) (D7).

    Other query parameters (cache busters) are ignored. Loads to {agent_id} or {extension}.
    """

    class Meta:
        unknown = EXCLUDE

    agentId = fields.Integer(error_messages={"invalid": "must be an integer"}, validate=EMPLOYEE_ID)
    extension = Text(validate=Regexp(r"[0-9]{3,16}\Z", error="must be 3-16 digits"))

    @validates_schema(pass_original=True, skip_on_field_errors=False)
    def exactly_one(self, data, original_data, **kwargs):
        if not isinstance(original_data, dict):
            return
        if ("agentId" in original_data) == ("extension" in original_data):
            raise ValidationError("give exactly one of agentId and extension", "agentId")

    @post_load
    def to_lookup(self, data, **kwargs):
        return {"agent_id": data["agentId"]} if "agentId" in data else {"extension": data["extension"]}



class AgentTokenRequest(MissedActivitiesQuery):
    """POST /api/agent-tokens body (issue #28): exactly one of `agentId` and `extension`, and
    optionally `lifetimeSeconds` (1 to AGENT_TOKEN_MAX_SECONDS; default AGENT_TOKEN_SECONDS).

    Loads to {agent_id} or {extension}, plus lifetime_seconds (None when not given).
    """

    class Meta:
        unknown = RAISE

    lifetimeSeconds = fields.Integer(strict=True, validate=Range(1, error="must be at least 1 second"),
                                     error_messages={"invalid": "must be a whole number of seconds"})

    def __init__(self, max_seconds=None, **kwargs):
        """`max_seconds`: AGENT_TOKEN_MAX_SECONDS (None only for the OpenAPI document, which has no config)."""
        super().__init__(**kwargs)
        if max_seconds is not None:
            self.fields["lifetimeSeconds"].validators.append(
                Range(1, max_seconds, error=f"must be 1 to {max_seconds} seconds (AGENT_TOKEN_MAX_SECONDS)"))

    @post_load
    def to_lookup(self, data, **kwargs):
        lookup = {"agent_id": data["agentId"]} if "agentId" in data else {"extension": data["extension"]}
        return {**lookup, "lifetime_seconds": data.get("lifetimeSeconds")}

# --- the engine API (/engine/) ------------------------------------------------------------------
# snake_case like the columns the engine shares (decisions.md D1); times per D2.

class StrictBoolean(fields.Boolean):
    """A JSON true or false only."""

    truthy = {True}
    falsy = {False}
    default_error_messages = {"invalid": "must be true or false"}


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
    could take (skill and priority), of `form_type` only when given (issue #29: pacing per skill)."""

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
    """POST /engine/claim, mode redial or inbound: {mode, request_id, agent_id, oli_id}: that lead for that agent."""

    mode = Text(required=True, validate=OneOf([REDIAL, "inbound"]))
    request_id = _request_id()
    agent_id = StrictInteger(required=True, validate=EMPLOYEE_ID)
    oli_id = _engine_oli_id(required=True)


CLAIM_SCHEMAS = {"progressive": ProgressiveClaimSchema, "predictive": PredictiveClaimSchema,
                 REDIAL: NamedClaimSchema, "inbound": NamedClaimSchema}


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
WALL_CLOCK_PATTERN = r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?(Z|[+-]\d{2}:?\d{2})?$"


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
        "example": "2026-11-21 10:00:05", "pattern": WALL_CLOCK_PATTERN})
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
