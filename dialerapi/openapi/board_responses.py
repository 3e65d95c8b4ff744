"""The supervisor side's response shapes in the OpenAPI document: the board's tiles
and rows, the agent time report, the supervisor token. Shapes for the document only, as in
responses.py, whose engine floor the tiles extend.
"""

from marshmallow import Schema, fields
from marshmallow.validate import OneOf

from dialerapi.openapi.responses import AbandonsSchema, EngineFloorResponseSchema, FloorCallsSchema, FloorFormTypeSchema


class BoardCallsSchema(FloorCallsSchema):
    ringing = fields.Integer(required=True, metadata={"description": "Not answered yet"})
    holding = fields.Integer(required=True, metadata={
        "description": "Answered, waiting for an agent; ringing + holding = not_connected"})


class BoardAbandonsSchema(AbandonsSchema):
    level = fields.String(required=True, validate=OneOf(["green", "amber", "red"]), metadata={
        "description": "red: over_limit; amber: a window with answered calls within half a percentage point of the "
                       "limit; else green"})


class BoardFormTypeSchema(FloorFormTypeSchema):
    calls = fields.Nested(BoardCallsSchema, required=True)
    abandons = fields.Nested(BoardAbandonsSchema, required=True)


class BoardFloorSchema(EngineFloorResponseSchema):
    """The board's tiles: the engine's floor, with `at` in UTC, each abandons' `level` and
    each form_type's not-connected calls split into `ringing` and `holding`."""

    class Meta:
        exclude = ("ok",)

    at = fields.String(required=True, metadata={"example": "2026-11-21T10:00:05Z", "description": "UTC"})
    form_types = fields.List(fields.Nested(BoardFormTypeSchema), required=True, metadata={
        "description": "As /engine/floor's, with `abandons.level` (green, amber, red) and `calls.ringing` and "
                       "`calls.holding` (answered, waiting for an agent), which add up to `calls.not_connected`"})


class BoardAgentSchema(Schema):
    agent_id = fields.Integer(required=True, metadata={"example": 501})
    name = fields.String(required=True)
    extension = fields.String(required=True, metadata={"example": "4501"})
    skills = fields.List(fields.String(), required=True, metadata={"description": "form_types"})
    state = fields.String(required=True, metadata={
        "enum": ["free", "on_call", "wrap_up", "paused", "outbound_blocked", "panel_inactive"]})
    since = fields.String(required=True, allow_none=True, metadata={
        "example": "2026-11-21T09:58:10Z", "description": "UTC: when the state began (null: no history yet)"})
    pause_code = fields.String(required=True, allow_none=True, metadata={"example": "lunch"})
    reason_note = fields.String(required=True, allow_none=True)
    form_type = fields.String(required=True, allow_none=True, metadata={"description": "Of the call the agent is on"})
    wrapup_until = fields.String(required=True, allow_none=True, metadata={"description": "UTC, in wrap-up only"})
    calls = fields.Integer(required=True, metadata={"description": "Calls today (DB_TIMEZONE day)"})
    talk_seconds = fields.Integer(required=True, metadata={"description": "Seconds on a call today"})


class BoardResponseSchema(Schema):
    ok = fields.Boolean(required=True)
    now = fields.String(required=True, metadata={"example": "2026-11-21T10:00:05.250Z",
                                                  "description": "The service clock, UTC, to the millisecond"})
    floor = fields.Nested(BoardFloorSchema, required=True)
    agents = fields.List(fields.Nested(BoardAgentSchema), required=True)


class AgentTimeSchema(Schema):
    agent_id = fields.Integer(required=True, metadata={"example": 501})
    login_seconds = fields.Integer(required=True, metadata={"description": "Panel open; the sum of the five below"})
    free_seconds = fields.Integer(required=True)
    talk_seconds = fields.Integer(required=True, metadata={"description": "On a call (ringing or talking)"})
    wrap_up_seconds = fields.Integer(required=True)
    blocked_seconds = fields.Integer(required=True, metadata={"description": "Outbound blocked (D7)"})
    pause_seconds = fields.Integer(required=True)
    calls = fields.Integer(required=True, metadata={"description": "Times the agent went on a call"})
    answered_calls = fields.Integer(required=True, metadata={"description": "Calls connected to the agent"})
    pause = fields.Dict(keys=fields.String(), values=fields.Integer(), required=True,
                        metadata={"description": "Seconds per pause code", "example": {"lunch": 1800}})


class AgentDaySchema(AgentTimeSchema):
    day = fields.String(required=True, metadata={"example": "2026-11-21", "description": "DB_TIMEZONE day"})


class AgentReportResponseSchema(Schema):
    ok = fields.Boolean(required=True)
    from_ = fields.String(required=True, data_key="from", metadata={"example": "2026-11-21"})
    to = fields.String(required=True, metadata={"example": "2026-11-21"})
    timezone = fields.String(required=True, metadata={"example": "Asia/Kolkata"})
    days = fields.List(fields.Nested(AgentDaySchema), required=True)
    agents = fields.List(fields.Nested(AgentTimeSchema), required=True, metadata={"description": "Totals per agent"})


class SupervisorTokenResponseSchema(Schema):
    ok = fields.Boolean(required=True)
    supervisor = fields.String(required=True, metadata={"example": "Priya (floor 2)"})
    token = fields.String(required=True, metadata={"description": "Opens /board/ws, GET /api/board and the agent report"})
    expires_at = fields.String(required=True, metadata={"example": "2026-11-25T18:30:00Z", "description": "UTC"})
    expires_in = fields.Integer(required=True, metadata={"example": 43200, "description": "Seconds from now"})
