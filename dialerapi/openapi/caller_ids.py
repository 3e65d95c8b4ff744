"""The floor's caller IDs in the OpenAPI document (docs/operations/caller-ids.md)."""

from marshmallow import Schema, fields

from dialerapi.rules.caller_ids import numbers
from dialerapi.rules.config.ranges import CALLER_ID_POOL
from dialerapi.sides.crm.caller_ids import NUMBER_CHARS, STATES

NUMBER = {"in": "path", "name": "number", "required": True, "description": "The number in E.164",
          "schema": {"type": "string", "minLength": 1, "maxLength": NUMBER_CHARS, "pattern": "^[^/\\n][^\\n]*$",
                     "example": "+19195550100"}}
POOLS = {"type": "array", "minItems": 1, "maxItems": numbers.MAX_POOLS,
         "items": {"type": "string", "pattern": CALLER_ID_POOL.pattern}}
PATCH = {"type": "object", "additionalProperties": False, "properties": {
    "state": {"type": "string", "enum": STATES, "description": "A retired number stays retired"},
    "note": {"type": "string", "maxLength": numbers.MAX_NOTE_CHARS},
    "daily_cap": {"anyOf": [{"type": "integer", "minimum": 1, "maximum": numbers.MAX_DAILY_CAP}, {"type": "null"}],
                  "description": "Calls it may present a day; null: the floor's caller_id_daily_cap"},
    "pools": POOLS}}


class CallerIdChangeSchema(Schema):
    id = fields.Integer(required=True)
    action = fields.String(required=True, metadata={"description": "added, updated, flagged or retired"})
    changed_at_utc = fields.String(required=True, metadata={"description": "ISO 8601 UTC"})
    changed_by = fields.String(required=True, metadata={"description": "The credential's role: crm, cli"})
    old = fields.Dict(allow_none=True)
    new = fields.Dict(required=True)


class CallerIdSchema(Schema):
    number = fields.String(required=True, metadata={"example": "+19195550100", "description": "E.164"})
    country = fields.String(allow_none=True, metadata={"description": "ISO 3166 alpha-2"})
    area_code = fields.String(allow_none=True, metadata={"example": "919", "description": "National digits"})
    regions = fields.List(fields.String(), required=True, metadata={"example": ["US", "US-NC"]})
    pools = fields.List(fields.String(), required=True)
    state = fields.String(required=True, metadata={"description": "active, flagged or retired"})
    daily_cap = fields.Integer(allow_none=True, metadata={"description": "null: the floor's caller_id_daily_cap"})
    presented_today = fields.Integer(required=True)
    presented_day = fields.String(allow_none=True, metadata={"description": "The day presented_today counts"})
    last_used_at_utc = fields.String(allow_none=True)
    retired_at_utc = fields.String(allow_none=True)
    release_after = fields.String(allow_none=True, metadata={"description": "A retired number's last use + 30 days"})
    note = fields.String(required=True)
    updated_at_utc = fields.String(required=True)
    updated_by = fields.String(required=True)
    history = fields.List(fields.Nested(CallerIdChangeSchema), metadata={"description": "PATCH: newest first"})


class CallerIdsResponseSchema(Schema):
    ok = fields.Boolean(required=True)
    caller_ids = fields.List(fields.Nested(CallerIdSchema), required=True)
    next = fields.String(allow_none=True, metadata={"description": "The `after` of the next page, or null"})


class CallerIdResponseSchema(Schema):
    ok = fields.Boolean(required=True)
    caller_id = fields.Nested(CallerIdSchema, required=True)


SCHEMAS = {"CallerIdsResponse": CallerIdsResponseSchema, "CallerIdResponse": CallerIdResponseSchema}


def operations(json, error, writes, limited, common, security, supervisor_security):
    """The /api/caller-ids operations, built with document.py's helpers."""
    return {
        "/api/caller-ids": {"get": {
            "tags": ["caller IDs"], "security": security + supervisor_security,
            "summary": "A page of the floor's caller IDs in number order",
            "parameters": [{"in": "query", "name": name, "schema": schema} for name, schema in (
                ("pool", {"type": "string", "pattern": CALLER_ID_POOL.pattern}),
                ("state", {"type": "string", "enum": STATES}),
                ("after", {"type": "string", "minLength": 1, "maxLength": NUMBER_CHARS}),
                ("limit", {"type": "integer", "minimum": 1, "maximum": numbers.PAGE_ROWS}))],
            "responses": {"200": json("CallerIdsResponse", "The page"),
                          "400": error("A wrong parameter (`validation_failed`, with details)", "validation_failed"),
                          **limited, **common}}},
        "/api/caller-ids/{number}": {"patch": {
            "tags": ["caller IDs"], "summary": "Flag, retire or set active a number; change its note, cap or pools",
            "description": "All or nothing; the change is kept with the credential and told as a caller_id.* event. "
                           "Numbers are added by the operator (`dialerapi caller-ids add|import`).",
            "parameters": [NUMBER],
            "requestBody": {"required": True, "content": {"application/json": {
                "schema": PATCH, "example": {"state": "flagged", "note": "Spam Likely on one carrier"}}}},
            "responses": {"200": json("CallerIdResponse", "The number as it now stands, with its history"),
                          "404": error("The floor has no such number", "unknown_caller_id"),
                          **writes, **limited, **common}}},
    }


class FloorCallerIdSchema(Schema):
    pool = fields.String(required=True, metadata={"description": "The pool its campaign presents from"})
    headroom_today = fields.Integer(required=True, metadata={"description": "Calls the pool may still present today"})
    headroom_share = fields.Float(required=True, metadata={"description": "headroom_today over the pool's daily caps"})


class CallerIdPoolSchema(Schema):
    pool = fields.String(required=True)
    active = fields.Integer(required=True)
    at_cap = fields.Integer(required=True, metadata={"description": "Active numbers at today's cap"})
    flagged = fields.Integer(required=True)
    retired = fields.Integer(required=True)
    capacity_today = fields.Integer(required=True, metadata={"description": "The daily caps of its active numbers"})
    headroom_today = fields.Integer(required=True)
    headroom_share = fields.Float(required=True)
    used_by = fields.List(fields.String(), required=True, metadata={"description": "The form_types presenting from it"})
    low = fields.Boolean(required=True, metadata={"description": "Under the floor's caller_id_headroom_share"})
    empty = fields.Boolean(required=True, metadata={"description": "A campaign presents from it and no number is active"})
