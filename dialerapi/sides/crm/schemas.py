"""The CRM side's request schemas: lead push, callbacks and dispositions (lead-intake-api.md,
"Resources and their fields", "Limits"; decisions.md D2-D4), on the shared types of web.fields.
"""

from marshmallow import ValidationError, fields, post_load, validates_schema
from marshmallow.validate import Length, OneOf, Range, Regexp

from dialerapi.plumbing.clock import instant
from dialerapi.rules.compliance import calling_rules, places
from dialerapi.web.fields import (
    EMPLOYEE_ID,
    MAX_BATCH,
    MAX_CALLBACK_PAST,
    PHONE_DIGITS,
    ApiSchema,
    OliId,
    PhoneNumber,
    RequestContext,
    StrictInteger,
    Text,
    WallClockDateTime,
    is_unicode_text,
    phone_digits,
)


class ConsentSchema(ApiSchema):
    """A lead's `consent`: `type` written | express | ebr (an established
    business relationship), `at` (when it was given: D2, wall-clock DB_TIMEZONE) and `source`
    (where the CRM recorded it: a form's URL, a recording's id; up to 255 characters)."""

    type = Text(required=True, validate=OneOf(calling_rules.CONSENT_TYPES, error="must be written, express or ebr"))
    at = WallClockDateTime(required=True)
    source = Text(load_default=None, allow_none=True, validate=Length(1, 255))


class Region(Text):
    """A region, as ISO writes it: `US-LA` (3166-2, a US state) or a country's
    alpha-2 code (`GB`); the OpenAPI document lists them (places.REGIONS)."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.metadata = {**self.metadata, "enum": [*places.REGIONS, None]}  # null: not given

    def _deserialize(self, value, attr, data, **kwargs):
        text = super()._deserialize(value, attr, data, **kwargs)
        if text not in places.KNOWN_REGIONS:
            raise ValidationError(f"{text!r} is no region: a US state as US-XX (US-LA), or a country's alpha-2 code "
                                  "(GB), in capitals")
        return text


class LeadSchema(ApiSchema):
    """One lead of a push (lead-intake-api.md, "Lead (master row)"; D4).

    Loads to a dict with oli_id, phone_number (digits), client_name, form_type, priority_id,
    callback_scheduled_at (naive DB_TIMEZONE datetime or None) and callback_scheduled_at_sent (the
    value exactly as sent, for the response); and when sent region (`US-LA`),
    postal_code and consent ({type, at, source}): a push states the lead as the CRM has it, so a
    lead pushed without them has none. `data_id` and `agent_id` are unknown fields.
    """

    oli_id = OliId(required=True)
    phone_number = PhoneNumber(required=True)
    client_name = Text(required=True, validate=Length(1, 150))
    form_type = Text(required=True, validate=Length(1, 64))
    priority_id = StrictInteger(required=True, metadata={
        "description": "An active priority of sales_priorities but Final Disposal (a table: the seeded ones are 1, "
                       "Callback Schedule, and 2, Fresh Assign); 400 otherwise"})
    callback_scheduled_at = WallClockDateTime(load_default=None, allow_none=True, metadata={
        "description": "Only with a callback priority (is_callback; the seeded 1); 400 otherwise"})
    region = Region(load_default=None, allow_none=True, metadata={
        "description": "Where the customer is, when the CRM knows: US-LA, or a country (GB); it wins "
                       "over the postal code and the number's area code for the calling rules"})
    postal_code = Text(load_default=None, allow_none=True, validate=Regexp(
        r"^[0-9A-Za-z][0-9A-Za-z -]{0,9}$", error="must be a postal code: up to 10 letters, digits, spaces and -"),
        metadata={"description": "A US ZIP code places the customer in its state"})
    consent = fields.Nested(ConsentSchema, load_default=None, allow_none=True)

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
# A lead with any of these is loaded by LeadSchema: plain_lead takes the common lead only.
PLACE_FIELDS = frozenset(("region", "postal_code", "consent"))
PLAIN_FIELDS = LEAD_FIELDS - PLACE_FIELDS
LEAD_REQUIRED = frozenset(name for name, field in LeadSchema._declared_fields.items() if field.required)
LEAD_TEXT_LENGTHS = {
    name: (field.validate.min, field.validate.max)
    for name, field in LeadSchema._declared_fields.items() if isinstance(field, Text) and name in PLAIN_FIELDS
}


def plain_lead(lead, priorities):
    """`lead` loaded exactly as LeadSchema loads it, when it is valid and has no callback time; else None.

    Nearly every lead of a CRM batch is such a lead, and marshmallow spends some 60 us on each
    (30 ms for a batch of 500, more than the batch's writes cost the database). This accepts what
    LeadSchema accepts and nothing more, with the schema's own limits, helpers and priority rule;
    anything else (a callback time, a wrong type, any error at all) returns None and is loaded by
    LeadSchema, which reports it. tests/test_schemas.py holds the two to the same answers.
    """
    if type(lead) is not dict or not LEAD_REQUIRED <= lead.keys() <= PLAIN_FIELDS:
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
        "region": None, "postal_code": None, "consent": None,
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
        loaded, errors = load_each(value, RequestContext.get()["priorities"],
                                   lambda lead: self.inner.deserialize(lead, **kwargs))
        if errors:
            raise ValidationError(errors)
        return loaded


def load_each(leads, priorities, deserialize=None):
    """Each of `leads` loaded on its own, inside a RequestContext with "tz" and "priorities":
    ([loaded lead, ...] of those valid, in order, {index: LeadSchema's messages} of the others).

    A batch push refuses the whole batch when `errors` is not empty; a list import
    writes the valid ones and reports each of the others.
    """
    deserialize = deserialize or LeadSchema().load
    loaded, errors = [], {}
    for index, lead in enumerate(leads):
        plain = plain_lead(lead, priorities)
        if plain is not None:
            loaded.append(plain)
            continue
        try:
            loaded.append(deserialize(lead))
        except ValidationError as error:
            errors[index] = error.messages
    return loaded, errors


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


def push_loader(body, tz):
    """load_push for `body` with the priority catalog given later, inside the push's transaction (rules.leads.push)."""
    return lambda priorities: load_push(body, tz, priorities)


def _optional_text(max_chars):
    return Text(load_default=None, allow_none=True, validate=Length(max=max_chars))


def _callback_agent_id():
    """`callbackAgentId`: the employee id of the agent the callback waits for; null or absent: anyone."""
    return StrictInteger(load_default=None, allow_none=True, validate=EMPLOYEE_ID)


class SendCallbackSchema(ApiSchema):
    """POST /api/send-callback-request: `oliId` and exactly one of `scheduledAt` / `ScheduledAt` (D5),
    and the optional `callbackAgentId`.

    Loads to {oli_id, scheduled_at (naive DB_TIMEZONE datetime), callbackAgentId}; past times are accepted.
    """

    oliId = OliId(required=True)
    scheduledAt = WallClockDateTime()
    ScheduledAt = WallClockDateTime()
    callbackAgentId = _callback_agent_id()

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
        return {"oli_id": data["oliId"], "scheduled_at": data.get("scheduledAt") or data.get("ScheduledAt"),
                "callbackAgentId": data["callbackAgentId"]}


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
    workStatus, subDisposition, remarks, callbackAgentId}. `agentId` is the audit field (who filed
    it); `callbackAgentId` the agent the callback waits for.
    """

    oliId = OliId(required=True)
    scheduledAt = WallClockDateTime(required=True, metadata={
        "description": "Not more than 5 minutes before the service's now (400 otherwise)"})
    callbackAgentId = _callback_agent_id()
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


class Cursor(fields.String):
    """An opaque cursor the service handed out (decimal digits); loads to an int."""

    default_error_messages = {"invalid": "must be a cursor this service returned in `next`"}

    def _deserialize(self, value, attr, data, **kwargs):
        text = super()._deserialize(value, attr, data, **kwargs)
        if not (text.isascii() and text.isdigit() and len(text) <= 18):
            raise self.make_error("invalid")
        return int(text)


CURSOR_RANGE = {"minimum": 0, "maximum": 10 ** 18 - 1}


class QueryInteger(Cursor):
    """A whole number in a query string (decimal digits); loads to an int."""

    default_error_messages = {"invalid": "must be a whole number"}


class LeadReadQueryParameters(ApiSchema):
    """GET /api/leads/{oli_id} query: `limit` calls per page (1-200, default 50) and
    `cursor` (the `next` of the page before). Unknown parameters are 400."""

    limit = QueryInteger(load_default=50, validate=Range(1, 200, error="must be 1-200"),
                         metadata={"minimum": 1, "maximum": 200, "default": 50})
    cursor = Cursor(load_default=None, metadata=CURSOR_RANGE)


class LeadReadQuery(LeadReadQueryParameters):
    """LeadReadQueryParameters and the path's oli_id."""

    oli_id = OliId(required=True)


class LeadEventsQuery(ApiSchema):
    """GET /api/lead-events query: `after` (a `next` this feed returned; none: from the
    oldest event kept) and `limit` (1-1000, default 100)."""

    after = Cursor(load_default=0, metadata={**CURSOR_RANGE, "default": 0})
    limit = QueryInteger(load_default=100, validate=Range(1, 1000, error="must be 1-1000"),
                         metadata={"minimum": 1, "maximum": 1000, "default": 100})


class CampaignPath(ApiSchema):
    """The {form_type} of /api/campaigns/{form_type}: a campaign is a lead's form_type."""

    form_type = Text(required=True, validate=Length(1, 64))
