"""The OpenAPI 3.1 document of the HTTP API, generated from the marshmallow schemas with apispec.

Served at GET /openapi.json and rendered by Swagger UI at /docs (flask-swagger-ui's bundled assets,
no CDN); schemathesis checks the service against it in `make test`. Request bodies come from
schemas.py; the response shapes below exist for the document.
"""

from importlib.metadata import PackageNotFoundError, version

from apispec import APISpec
from apispec.ext.marshmallow import MarshmallowPlugin
from marshmallow import Schema, fields
from marshmallow.validate import OneOf

from . import schemas

SECURITY = [{"bearerAuth": []}, {"apiKeyHeader": []}, {"accessKeyHeader": []}]
AGENT_SECURITY = [{"agentToken": []}]
MONITOR_SECURITY = [{"monitorBearerAuth": []}]
ENGINE_SECURITY = [{"engineBearerAuth": []}, {"engineApiKeyHeader": []}, {"engineAccessKeyHeader": []}]
JSON = "application/json"


class DetailSchema(Schema):
    field = fields.String(required=True, metadata={"example": "leads[3].phone_number"})
    message = fields.String(required=True, metadata={"example": "must be 10-15 digits after removing spaces and punctuation"})


class ErrorSchema(Schema):
    ok = fields.Boolean(required=True, metadata={"enum": [False]})
    error = fields.String(required=True, metadata={"example": "validation_failed"})
    details = fields.List(fields.Nested(DetailSchema), metadata={"description": "Only on 400 validation_failed"})
    reason = fields.String(metadata={"description": "On 409 not_claimable: why the agent or lead cannot take it; on 401 "
                                                    "for a bad agent token: token_expired or invalid_token"})


class PushResultSchema(Schema):
    oli_id = fields.String(required=True)
    status = fields.String(required=True, validate=OneOf(["inserted", "updated", "skipped_in_flight"]))
    data_id = fields.UUID(required=True)
    callback_scheduled_at = fields.Raw(required=True, allow_none=True,
                                       metadata={"description": "Exactly as sent; null when omitted"})


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


class HealthResponseSchema(Schema):
    ok = fields.Boolean(required=True)
    status = fields.String(required=True, validate=OneOf(["healthy", "unhealthy"]))
    checks = fields.Dict(required=True, metadata={"description": "db: {ok, host, node (host:port answering), "
                                                                 "cluster (null off Galera, else wsrep_cluster_size, "
                                                                 "wsrep_local_state_comment, wsrep_ready), "
                                                                 "latency_ms, error}; "
                                                                 "ami: {ok, configured, host, latency_ms, error}"})
    metrics = fields.Dict(required=True, metadata={
        "description": "uptime_seconds, requests, pending_actions, open_missed_activities, blocked_agents, "
                       "live_reservations, unleased_reservations, oldest_reservation_seconds, last_sweep_at, "
                       "last_sweep_result, agent_sockets: {open, capacity, left, refused, hosts: [{host, open, "
                       "capacity, left, refused, workers, updated_at}]} (hosts that reported in the last 60 s)"})
    logs = fields.List(fields.String(), required=True)
    version = fields.String(required=True)


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


class EngineClaimResponseSchema(Schema):
    ok = fields.Boolean(required=True)
    lead = fields.Nested(EngineLeadSchema, required=True, allow_none=True, metadata={
        "description": "The reserved lead (Calling, isReserved 1), or null: no lead the claim may take is due "
                       "and unreserved"})


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


class AgentTokenResponseSchema(Schema):
    ok = fields.Boolean(required=True)
    agent_id = fields.Integer(required=True, metadata={"example": 501})
    token = fields.String(required=True, metadata={"description": "Opens this agent's /ws and missed activities only"})
    expires_at = fields.String(required=True, metadata={"example": "2026-11-25T18:30:00Z", "description": "UTC"})
    expires_in = fields.Integer(required=True, metadata={"example": 43200, "description": "Seconds from now"})


def _json(schema, description, example=None):
    content = {"schema": schema}
    if example is not None:
        content["example"] = example
    return {"description": description, "content": {JSON: content}}


def _error(description, code):
    return _json("Error", description, {"ok": False, "error": code})


RETRY_AFTER = {"Retry-After": {"description": "Seconds until the counter allows another request",
                               "schema": {"type": "integer"}}}
COMMON = {
    "401": _error("Missing or wrong key, or a bad agent token (`reason` token_expired or invalid_token)",
                  "unauthorized"),
    "403": _error("An agent token on a path it does not open (issue #28)", "forbidden"),
    "500": _error("Unexpected server error (no details)", "internal_error"),
}
WRITES = {
    "400": _json("Error", "Invalid JSON (`invalid_json`) or failed validation (`validation_failed`, with details)",
                 {"ok": False, "error": "validation_failed",
                  "details": [{"field": "phone_number", "message": "must be 10-15 digits after removing spaces and punctuation"}]}),
    "413": _error("Body larger than 1 MiB", "payload_too_large"),
    "503": {**_error("The database cannot answer now; repeat the request after Retry-After seconds. "
                     "`database_unavailable`: nothing was stored (`reason` `no_ready_node`: no node of DATABASE_URL "
                     "is ready; `conflicts`: the write kept losing conflicts for 15 s). `commit_unknown`: the "
                     "connection was lost during COMMIT, so the write may or may not be stored; the same request "
                     "again finds out", "commit_unknown"),
            "headers": {"Retry-After": {"description": "Seconds to wait before repeating the request",
                                        "schema": {"type": "integer"}}}},
}
LIMITED = {"429": {**_error("Rate limited (one counter per client IP)", "rate_limited"), "headers": RETRY_AFTER}}
UNKNOWN_OLI = {"404": _error("No lead has this oliId", "unknown_oli_id")}

LEAD_EXAMPLE = {"oli_id": "CRM-2026-000042", "phone_number": "+91 98765 43210", "client_name": "मीना शर्मा",
                "form_type": "home_loan", "priority_id": 1, "callback_scheduled_at": "2026-11-23 11:30"}

OPERATIONS = {
    "/api/leads": {"post": {
        "tags": ["leads"], "summary": "Upsert one lead or a batch of 1-500 (by oli_id)",
        "description": "A lead that is live on a call (Calling + isReserved) is not touched and answers "
                       "`skipped_in_flight`. A batch is all or nothing. Not rate-limited.",
        "requestBody": {"required": True, "content": {JSON: {
            "schema": {"oneOf": [{"$ref": "#/components/schemas/Lead"}, {"$ref": "#/components/schemas/LeadBatch"}]},
            "examples": {"one lead": {"value": LEAD_EXAMPLE},
                         "batch": {"value": {"leads": [LEAD_EXAMPLE, {**LEAD_EXAMPLE, "oli_id": "CRM-2026-000043",
                                                                      "priority_id": 2, "callback_scheduled_at": None}]}}}}}},
        "responses": {"201": _json("PushResponse", "One result per pushed lead, in order"), **WRITES, **COMMON},
    }},
    "/api/send-callback-request": {"post": {
        "tags": ["callbacks"], "summary": "Set a callback time on an existing lead now (priority kept)",
        "requestBody": {"required": True, "content": {JSON: {"schema": "SendCallbackRequest",
                                                           "example": {"oliId": "CRM-2026-000042", "scheduledAt": "2026-11-23 11:30:00"}}}},
        "responses": {"200": _json("SendCallbackResponse", "Callback set"), **UNKNOWN_OLI,
                      "409": _error("The lead is live on a call", "lead_in_flight"), **WRITES, **LIMITED, **COMMON},
    }},
    "/api/pending-callbacks": {"post": {
        "tags": ["callbacks"], "summary": "CRM callback: applied now, or held until the live call settles",
        "requestBody": {"required": True, "content": {JSON: {"schema": "PendingCallbackRequest", "example": {
            "oliId": "CRM-2026-000042", "scheduledAt": "2026-11-23 11:30", "agentId": 501, "extension": "4501",
            "callbackType": "future_day", "workStatus": "Interested", "subDisposition": "Call later",
            "remarks": "call after salary credit"}}}},
        "responses": {"200": _json("PendingCallbackResponse", "Applied at once (the lead was not live)"),
                      "202": _json("PendingCallbackResponse", "Held until the live call settles"),
                      **UNKNOWN_OLI, **WRITES, **LIMITED, **COMMON},
    }},
    "/api/pending-dispositions": {"post": {
        "tags": ["callbacks"], "summary": "CRM final disposition: applied now, or held until the live call settles",
        "requestBody": {"required": True, "content": {JSON: {"schema": "PendingDispositionRequest", "example": {
            "oliId": "CRM-2026-000042", "reason": "Not Intrested", "agentId": 501}}}},
        "responses": {"200": _json("PendingDispositionResponse", "Applied at once (the lead was not live)"),
                      "202": _json("PendingDispositionResponse", "Held until the live call settles"),
                      **UNKNOWN_OLI, **WRITES, **LIMITED, **COMMON},
    }},
    "/api/missed-activities": {"get": {
        "tags": ["agents"], "summary": "One agent's open missed activities (exactly one of agentId and extension)",
        "description": "With an agent's token (issue #28) instead of WS_SECRET: that agent's only; agentId and "
                       "extension may then be left out.",
        "security": SECURITY + AGENT_SECURITY,
        "parameters": [{"in": "query", "schema": "MissedActivitiesQuery"}],
        "responses": {"200": _json("MissedActivitiesResponse", "Oldest first, at most 100; times in UTC"),
                      "400": _json("Error", "Neither or both of agentId and extension, or a malformed one"),
                      "403": _error("An agent token of another agent", "forbidden"),
                      "404": _json("Error", "`unknown_agent` or `unknown_extension`",
                                   {"ok": False, "error": "unknown_extension"}),
                      **LIMITED, **COMMON},
    }},
    "/api/agent-tokens": {"post": {
        "tags": ["agents"], "summary": "Mint a short-lived token for one agent's panel (the agent desktop's server)",
        "description": "The token opens that agent's socket (/ws?token=...) and its GET /api/missed-activities, "
                       "nothing else. Give it to the agent's browser; never give it WS_SECRET.",
        "requestBody": {"required": True, "content": {JSON: {"schema": "AgentTokenRequest",
                                                           "example": {"agentId": 501, "lifetimeSeconds": 43200}}}},
        "responses": {"201": _json("AgentTokenResponse", "The token and its expiry"),
                      "404": _json("Error", "`unknown_agent` or `unknown_extension`",
                                   {"ok": False, "error": "unknown_agent"}),
                      **WRITES, **LIMITED, **COMMON},
    }},
    "/api/pause-reasons": {"get": {
        "tags": ["agents"], "summary": "The pause-reason catalog (public)", "security": [],
        "responses": {"200": _json("PauseReasonsResponse", "Picker and system codes"),
                      "500": COMMON["500"]},
    }},
    "/healthz": {"get": {
        "tags": ["health"], "summary": "Liveness from cached checks (public)", "security": [],
        "responses": {"200": _json("HealthzResponse", "Always 200 while the process serves",
                                   {"ok": True, "ami": True, "db": True})},
    }},
    "/health": {"get": {
        "tags": ["health"], "summary": "Detailed health (WS_SECRET or the read-only MONITOR_SECRET)",
        "security": SECURITY + MONITOR_SECURITY,
        "responses": {"200": _json("HealthResponse", "Healthy"), "503": _json("HealthResponse", "Unhealthy"),
                      **COMMON},
    }},
    "/metrics": {"get": {
        "tags": ["health"], "summary": "Prometheus metrics (WS_SECRET or the read-only MONITOR_SECRET)",
        "security": SECURITY + MONITOR_SECURITY,
        "responses": {"200": {"description": "Prometheus text format",
                              "content": {"text/plain": {"schema": {"type": "string"}}}}, **COMMON},
    }},
}
ENGINE_COMMON = {
    "400": WRITES["400"], "413": WRITES["413"], "503": WRITES["503"], **COMMON,
    "401": _error("Missing or wrong key: /engine/ takes ENGINE_SECRET, not the CRM's WS_SECRET", "unauthorized"),
}
REUSED = _error("A request_id (or call_id) sent again with another body", "idempotency_conflict")
CLAIM_MODES = {"progressive": "ProgressiveClaimRequest", "predictive": "PredictiveClaimRequest",
               "redial": "NamedClaimRequest", "inbound": "NamedClaimRequest"}
CLAIM_REQUEST = {
    "oneOf": [{"$ref": f"#/components/schemas/{name}"} for name in dict.fromkeys(CLAIM_MODES.values())],
    "discriminator": {"propertyName": "mode",
                      "mapping": {mode: f"#/components/schemas/{name}" for mode, name in CLAIM_MODES.items()}},
}


def _engine(summary, description, request, request_example, response, example, **responses):
    return {"post": {
        "tags": ["engine"], "summary": summary, "description": description, "security": ENGINE_SECURITY,
        "requestBody": {"required": True, "content": {JSON: {"schema": request, "example": request_example}}},
        "responses": {"200": _json(response, "Done", example), **responses, **ENGINE_COMMON},
    }}


OPERATIONS.update({
    "/engine/claim": _engine(
        "Reserve a lead: progressive, predictive, redial or inbound",
        "progressive: the next due lead for `agent_id` (due Callback, Pending, Abandoned, Not Connected); "
        "predictive: one for the skills of whoever is free (then /engine/bridge); redial and inbound: "
        "`oli_id` for `agent_id` (reopens Received, Rejected and Disposed). The lead becomes Calling and "
        "reserved. Sent again with the same `request_id`, it answers the same lead and reserves nothing more. "
        "`lead: null` means that no lead the claim may take is due and unreserved; every other refusal is a 409 "
        "that says why (README, \"The engine API\", the error table mode by mode).",
        CLAIM_REQUEST, {"mode": "progressive", "agent_id": 501, "request_id": "c-7f3a-0001"},
        "EngineClaimResponse", None,
        **{"404": _json("Error", "`unknown_agent` (progressive, redial, inbound) or `unknown_oli_id` (redial, "
                                 "inbound)", {"ok": False, "error": "unknown_agent"}),
           "409": _json("Error", "`maintenance` (progressive, predictive, redial); `not_claimable` with `reason`: "
                                 "the agent's (panel_inactive, paused, ami_busy, wrap_up, outbound_blocked; "
                                 "progressive, redial, inbound) or no_free_agent (predictive); `lead_in_flight` "
                                 "(redial, inbound); `idempotency_conflict`",
                        {"ok": False, "error": "not_claimable", "reason": "ami_busy"})},
    ),
    "/engine/bridge": _engine(
        "Predictive: the customer answered; a free skilled agent, or null (hold)",
        "The agent chosen is marked AMI-busy. A customer who hangs up while held is settled `abandoned`.",
        "EngineBridgeRequest", {"oli_id": "CRM-2026-000042", "request_id": "b-7f3a-0001"},
        "EngineBridgeResponse", {"ok": True, "oli_id": "CRM-2026-000042", "agent_id": 501},
        **{"404": _error("No lead has this oli_id", "unknown_oli_id"),
           "409": _json("Error", "`lead_not_live` (the lead is not on a call) or `idempotency_conflict`",
                        {"ok": False, "error": "lead_not_live"})},
    ),
    "/engine/call-connected": _engine(
        "A bridged outgoing or redial call connected: open the agent's missed activity",
        "Settle ends it and starts the grace window; without a CRM callback or disposition by then the "
        "agent's outbound is paused.",
        "EngineCallConnectedRequest", {"oli_id": "CRM-2026-000042", "agent_id": 501, "request_id": "m-7f3a-0001"},
        "EngineCallConnectedResponse", {"ok": True, "missed_activity_id": 12},
        **{"404": _json("Error", "`unknown_oli_id` or `unknown_agent`", {"ok": False, "error": "unknown_agent"}),
           "409": _json("Error", "`lead_not_live` (the lead is not on a call: nothing is opened) or "
                                 "`idempotency_conflict`", {"ok": False, "error": "lead_not_live"})},
    ),
    "/engine/settle": _engine(
        "The hangup of a live call: the state table's transition, then the latest held CRM action",
        "Records the attempt, applies the outcome (Received; Not Connected on the retry schedule, or Disposed "
        "at max_tries; Rejected; Abandoned; an originate failure restores the status), clears the "
        "reservation, starts the missed activity's grace window, then applies the newest held callback or "
        "disposition, which wins. A settle is known by `call_id`, else by `oli_id` and `started_at`: sent "
        "again, it settles nothing more and answers the first result.",
        "EngineSettleRequest", {"oli_id": "CRM-2026-000042", "outcome": "no_answer", "agent_id": 501,
                                "started_at": "2026-11-21 10:00:05", "hangup_by": "customer", "hangup_cause": "19",
                                "call_id": "1732183205.42"},
        "EngineSettleResponse", None,
        **{"404": _json("Error", "`unknown_oli_id`, or `unknown_agent` for an agent_id not on the roster "
                                 "(nothing is stored)", {"ok": False, "error": "unknown_oli_id"}),
           "409": _json("Error", "`lead_not_live` (nothing to settle), `stale_reservation` (the reservation_id sent "
                                 "was released by its lease or an operator, or already settled) or "
                                 "`idempotency_conflict`", {"ok": False, "error": "lead_not_live"})},
    ),
    "/engine/agent-state": _engine(
        "What the engine knows of an agent: panel, AMI idle, wrap-up; answers the availability",
        "Fields left out are kept; `wrapup_seconds: 0` ends wrap-up.",
        "EngineAgentStateRequest", {"agent_id": 501, "ami_idle": True, "wrapup_seconds": 30},
        "EngineAgentStateResponse", None,
        **{"404": _error("No agent has this id", "unknown_agent")},
    ),
})
OPERATIONS["/api/master"] = {"post": {**OPERATIONS["/api/leads"]["post"], "summary": "Same handler as /api/leads"}}
OPERATIONS["/api/health"] = {"get": {**OPERATIONS["/health"]["get"], "summary": "Same as /health"}}

SCHEMAS = {
    "Lead": schemas.LeadSchema, "LeadBatch": schemas.LeadBatchSchema,
    "SendCallbackRequest": schemas.SendCallbackSchema, "PendingCallbackRequest": schemas.PendingCallbackSchema,
    "PendingDispositionRequest": schemas.PendingDispositionSchema, "MissedActivitiesQuery": schemas.MissedActivitiesQuery,
    "Error": ErrorSchema, "PushResponse": PushResponseSchema, "SendCallbackResponse": SendCallbackResponseSchema,
    "PendingCallbackResponse": PendingCallbackResponseSchema,
    "PendingDispositionResponse": PendingDispositionResponseSchema,
    "MissedActivitiesResponse": MissedActivitiesResponseSchema,
    "AgentTokenRequest": schemas.AgentTokenRequest, "AgentTokenResponse": AgentTokenResponseSchema, "PauseReasonsResponse": PauseReasonsResponseSchema,
    "HealthzResponse": HealthzResponseSchema, "HealthResponse": HealthResponseSchema,
    "ProgressiveClaimRequest": schemas.ProgressiveClaimSchema, "PredictiveClaimRequest": schemas.PredictiveClaimSchema,
    "NamedClaimRequest": schemas.NamedClaimSchema, "EngineBridgeRequest": schemas.EngineBridgeSchema,
    "EngineCallConnectedRequest": schemas.EngineCallConnectedSchema, "EngineSettleRequest": schemas.EngineSettleSchema,
    "EngineAgentStateRequest": schemas.EngineAgentStateSchema, "EngineClaimResponse": EngineClaimResponseSchema,
    "EngineBridgeResponse": EngineBridgeResponseSchema, "EngineCallConnectedResponse": EngineCallConnectedResponseSchema,
    "EngineSettleResponse": EngineSettleResponseSchema, "EngineAgentStateResponse": EngineAgentStateResponseSchema,
}

DESCRIPTION = """The push interface of an outbound dialer: CRMs upsert leads into the master table,
set callbacks and file dispositions, which are held while a lead is live on a call and applied when
it settles. Every error is `{"ok": false, "error": CODE}` (400 adds `details`). The key goes in
`Authorization: Bearer`, `X-API-Key` or `X-Access-Key`: the CRM's WS_SECRET, except for the
dialing engine's operations under `/engine/` (tag `engine`), which take ENGINE_SECRET. Agent panels
use the websocket at `/ws` with a token of their own agent (POST /api/agent-tokens; see the README). Times: `YYYY-MM-DD HH:MM[:SS]` is wall-clock time in the service's DB_TIMEZONE;
ISO 8601 with an offset is converted. With daylight saving, a wall-clock time that does not exist
moves forward by the gap and one that exists twice is its first occurrence (README, "Time and
daylight saving")."""


def build():
    """The OpenAPI 3.1 document as a dict."""
    plugin = MarshmallowPlugin()
    spec = APISpec(title="dialerapi: lead intake and callbacks", version=_version(), openapi_version="3.1.0",
                   plugins=[plugin], info={"description": DESCRIPTION})
    plugin.map_to_openapi_type(schemas.PhoneNumber, "string", None)
    plugin.map_to_openapi_type(schemas.WallClockDateTime, "string", None)
    spec.components.security_scheme("bearerAuth", {"type": "http", "scheme": "bearer"})
    spec.components.security_scheme("apiKeyHeader", {"type": "apiKey", "in": "header", "name": "X-API-Key"})
    spec.components.security_scheme("accessKeyHeader", {"type": "apiKey", "in": "header", "name": "X-Access-Key"})
    engine_key = "ENGINE_SECRET, the dialing engine's key (only /engine/)"
    spec.components.security_scheme("engineBearerAuth", {"type": "http", "scheme": "bearer", "description": engine_key})
    spec.components.security_scheme("engineApiKeyHeader", {"type": "apiKey", "in": "header", "name": "X-API-Key",
                                                           "description": engine_key})
    spec.components.security_scheme("engineAccessKeyHeader", {"type": "apiKey", "in": "header", "name": "X-Access-Key",
                                                              "description": engine_key})
    spec.components.security_scheme("agentToken", {
        "type": "http", "scheme": "bearer", "description": "An agent's token from POST /api/agent-tokens"})
    spec.components.security_scheme("monitorBearerAuth", {
        "type": "http", "scheme": "bearer", "description": "MONITOR_SECRET, read-only: /health, /api/health, /metrics"})
    for name, schema in SCHEMAS.items():
        spec.components.schema(name, schema=schema)
    for path, operations in OPERATIONS.items():
        spec.path(path=path, operations={method: {"security": SECURITY, **op} for method, op in operations.items()})
    spec.tag({"name": "engine", "description": "The dialing engine's operations (ENGINE_SECRET); see the README"})
    document = spec.to_dict()
    document["security"] = SECURITY
    return document


def _version():
    try:
        return version("dialerapi")
    except PackageNotFoundError:
        return "0.0.0"
