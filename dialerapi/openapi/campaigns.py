"""The campaigns' operations and shapes in the OpenAPI document (docs/crm/campaigns.md).
The PATCH body is rules.config.campaign_settings' schema with every setting nullable (a JSON merge patch:
null goes back to the floor's value) and `state`."""

import phonenumbers
from marshmallow import Schema, fields
from marshmallow.validate import OneOf

from dialerapi.rules.campaigns import operations as campaigns
from dialerapi.rules.config import calendars
from dialerapi.rules.core.vocabulary import RETRY_OUTCOMES

WALL = {"example": "2026-11-30 09:00:00", "description": "Wall-clock DB_TIMEZONE"}
CLOSED_REASONS = (campaigns.PAUSED, campaigns.ENDED, calendars.NOT_STARTED, calendars.FINISHED,
                  calendars.RESTRICTED, calendars.OUTSIDE_HOURS)


class CampaignChangeSchema(Schema):
    id = fields.Integer(required=True)
    action = fields.String(required=True, validate=OneOf(("updated", "paused", "resumed")))
    changed_at = fields.String(required=True, metadata=WALL)
    changed_at_utc = fields.String(required=True, metadata={"example": "2026-11-30T03:30:00Z"})
    changed_by = fields.String(required=True, metadata={"example": "crm", "description": "crm or cli"})
    old = fields.Dict(required=True)
    new = fields.Dict(required=True)


class CampaignStatusSchema(Schema):
    """A campaign now (rules.campaigns.operations.status): on the engine's floor and the board's tiles."""

    form_type = fields.String(required=True, metadata={"example": "credit_card"})
    state = fields.String(required=True, validate=OneOf(campaigns.STATES))
    open = fields.Boolean(required=True, metadata={"description": "Whether an outbound claim may take its leads now"})
    closed_reason = fields.String(required=True, allow_none=True, validate=OneOf(CLOSED_REASONS))
    restriction_note = fields.String(required=True, allow_none=True, metadata={"example": "Christmas Day"})
    next_open_at = fields.String(required=True, allow_none=True, metadata={
        **WALL, "description": "The next moment its calendar opens (null when open now, paused, ended or never)"})
    predictive = fields.Boolean(required=True)


class CampaignSchema(CampaignStatusSchema):
    settings = fields.Dict(required=True, metadata={"description": "The settings it overrides"})
    effective = fields.Dict(required=True, metadata={"description": "Every setting as the rules read it"})
    updated_at = fields.String(required=True, allow_none=True, metadata=WALL)
    updated_by = fields.String(required=True, allow_none=True)
    history = fields.List(fields.Nested(CampaignChangeSchema), metadata={"description": "Newest first (one campaign)"})


class CampaignResponseSchema(Schema):
    ok = fields.Boolean(required=True)
    campaign = fields.Nested(CampaignSchema, required=True)


class CampaignsResponseSchema(Schema):
    ok = fields.Boolean(required=True)
    campaigns = fields.List(fields.Nested(CampaignSchema), required=True)


SCHEMAS = {"CampaignResponse": CampaignResponseSchema, "CampaignsResponse": CampaignsResponseSchema}
# A path segment the routes can read: not starting with a slash, no line break (Flask's `path`).
FORM_TYPE = {"in": "path", "name": "form_type", "required": True,
             "schema": {"type": "string", "minLength": 1, "maxLength": 64, "pattern": "^[^/\\n][^\\n]*$"}}
EXAMPLE = {"abandon_period": "24h", "abandon_limit": 0.03,
           "open_hours": {"mon": ["09:00-21:00"], "tue": ["09:00-21:00"], "sat": ["10:00-16:00"]},
           "restricted_dates": [{"date": "2026-12-25", "note": "Christmas Day"}]}


def operations(json, error, writes, limited, common, security, supervisor_security):
    """The campaign operations, built with document.py's helpers."""
    unknown = {"404": error("No agent has this skill and no campaign was set for it", "unknown_campaign")}
    bad_path = {"400": error("A form_type longer than 64 characters (`validation_failed`, with details)",
                             "validation_failed")}
    no_route = {"404": error("A form_type no route reads (a line break, a leading slash)", "not_found")}
    read = {"tags": ["campaigns"], "security": security + supervisor_security}
    return {
        "/api/campaigns": {"get": {
            **read, "summary": "Every campaign (form_type) with its state, calendar and settings",
            "responses": {"200": json("CampaignsResponse", "In form_type order"), **limited, **common}}},
        "/api/campaigns/{form_type}": {
            "get": {**read, "summary": "One campaign with its history of changes", "parameters": [FORM_TYPE],
                    "responses": {"200": json("CampaignResponse", "The campaign"), **bad_path, **unknown, **limited,
                                  **common}},
            "patch": {
                "tags": ["campaigns"], "summary": "Change a campaign's settings (a JSON merge patch) and state",
                "description": "A setting set to null goes back to the floor's value; all or nothing; the "
                               "change is kept and told as a campaign.updated event.",
                "parameters": [FORM_TYPE],
                "requestBody": {"required": True, "content": {"application/json": {
                    "schema": "CampaignPatch", "example": EXAMPLE}}},
                "responses": {"200": json("CampaignResponse", "The campaign as it now stands"),
                              **no_route, **writes, **limited, **common}}},
        "/api/campaigns/{form_type}/pause": {"post": {
            "tags": ["campaigns"], "summary": "Pause a campaign: no new claim of its leads", "parameters": [FORM_TYPE],
            "responses": {"200": json("CampaignResponse", "Paused (or already paused)"), **no_route, **writes,
                          **limited, **common}}},
        "/api/campaigns/{form_type}/resume": {"post": {
            "tags": ["campaigns"], "summary": "Resume a paused or ended campaign", "parameters": [FORM_TYPE],
            "responses": {"200": json("CampaignResponse", "Active"), **no_route, **writes, **limited, **common}}},
    }


TIME = "([01][0-9]|2[0-3]):[0-5][0-9]"
INTERVAL = {"type": "string", "pattern": f"^{TIME}-({TIME}|24:00)$",
            "description": "HH:MM-HH:MM, ending after it starts; a day's intervals do not overlap"}
# What apispec cannot read from the marshmallow fields (custom fields, keys, exclusive bounds).
PRECISE = {
    "open_hours": {"type": "object", "propertyNames": {"enum": list(calendars.DAYS)},
                   "additionalProperties": {"type": "array", "maxItems": 6, "items": INTERVAL},
                   "description": "Open hours per day of the week, wall-clock DB_TIMEZONE; a day left out is closed"},
    "abandon_limit": {"type": "number", "exclusiveMinimum": 0, "maximum": 0.2},
    "calling_window_start": {"type": "string", "pattern": f"^{TIME}$"},
    "calling_window_end": {"type": "string", "pattern": f"^{TIME}$", "description": "Differs from the start"},
    "personal_callback_fallback_minutes": {"anyOf": [{"type": "integer", "minimum": 0, "maximum": 10080},
                                                     {"const": "never"}]},
    "phone_default_region": {"type": "string", "enum": sorted(phonenumbers.SUPPORTED_REGIONS)},
    "end_date": {"type": "string", "format": "date", "description": "Not before start_date"},
}


def patch_schema(converted, restricted_date):
    """The PATCH body's JSON Schema from apispec's conversion of CampaignSettingsSchema: every
    setting nullable, no other property, and `state`. `restricted_date`: the converted item schema."""
    properties = {**converted["properties"], **PRECISE}
    properties["outcome_retries"] = {**properties["outcome_retries"],
                                     "propertyNames": {"enum": list(RETRY_OUTCOMES)}}
    properties["restricted_dates"] = {"type": "array", "maxItems": 400, "items": {
        **restricted_date, "required": ["date"], "additionalProperties": False,
        "description": "A date or a range (`to` not before `date`) the campaign does not call on"}}
    nullable = {name: {"anyOf": [schema, {"type": "null"}]} for name, schema in properties.items()}
    nullable["state"] = {"type": "string", "enum": list(campaigns.STATES)}
    return {"type": "object", "properties": nullable, "additionalProperties": False}
