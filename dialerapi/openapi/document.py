"""The OpenAPI 3.1 document of the HTTP API, generated from the marshmallow schemas with apispec.

Served at GET /openapi.json and rendered by Swagger UI at /docs (flask-swagger-ui's bundled assets,
no CDN); schemathesis checks the service against it in `make test`. Request bodies come from
each side's schemas; the response shapes, which exist for the document, from responses.py.
"""

from apispec import APISpec
from apispec.ext.marshmallow import MarshmallowPlugin

from dialerapi.openapi import board_responses, responses
from dialerapi.openapi import caller_ids as caller_id_document
from dialerapi.openapi import campaigns as campaign_document
from dialerapi.openapi import dnc as dnc_document
from dialerapi.plumbing import release
from dialerapi.rules.config.campaign_settings import CampaignSettingsSchema
from dialerapi.sides.agent import schemas as agent_schemas
from dialerapi.sides.crm import schemas as crm_schemas
from dialerapi.sides.engine import schemas as engine_schemas
from dialerapi.sides.supervisor import schemas as supervisor_schemas
from dialerapi.web import fields as shared_fields

SECURITY = [{"bearerAuth": []}, {"apiKeyHeader": []}, {"accessKeyHeader": []}]
AGENT_SECURITY = [{"agentToken": []}]
MONITOR_SECURITY = [{"monitorBearerAuth": []}]
SUPERVISOR_SECURITY = [{"supervisorBearerAuth": []}]
ENGINE_SECURITY = [{"engineBearerAuth": []}, {"engineApiKeyHeader": []}, {"engineAccessKeyHeader": []}]
JSON = "application/json"


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
    "403": _error("An agent token on a path it does not open", "forbidden"),
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
UNKNOWN_OLI_OR_OWNER = {"404": _json("Error", "`unknown_oli_id`, or `unknown_agent` for a callbackAgentId not on the "
                                     "roster (nothing is stored)", {"ok": False, "error": "unknown_oli_id"})}

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
        "responses": {"200": _json("SendCallbackResponse", "Callback set"), **UNKNOWN_OLI_OR_OWNER,
                      "409": _error("The lead is live on a call", "lead_in_flight"), **WRITES, **LIMITED, **COMMON},
    }},
    "/api/pending-callbacks": {"post": {
        "tags": ["callbacks"], "summary": "CRM callback: applied now, or held until the live call settles",
        "requestBody": {"required": True, "content": {JSON: {"schema": "PendingCallbackRequest", "example": {
            "oliId": "CRM-2026-000042", "scheduledAt": "2099-01-15 11:30", "agentId": 501, "extension": "4501",
            "callbackType": "future_day", "workStatus": "Interested", "subDisposition": "Call later",
            "remarks": "call after salary credit"}}}},
        "responses": {"200": _json("PendingCallbackResponse", "Applied at once (the lead was not live)"),
                      "202": _json("PendingCallbackResponse", "Held until the live call settles"),
                      **UNKNOWN_OLI_OR_OWNER, **WRITES, **LIMITED, **COMMON},
    }},
    "/api/pending-dispositions": {"post": {
        "tags": ["callbacks"], "summary": "CRM final disposition: applied now, or held until the live call settles",
        "requestBody": {"required": True, "content": {JSON: {"schema": "PendingDispositionRequest", "example": {
            "oliId": "CRM-2026-000042", "reason": "Not Intrested", "agentId": 501}}}},
        "responses": {"200": _json("PendingDispositionResponse", "Applied at once (the lead was not live)"),
                      "202": _json("PendingDispositionResponse", "Held until the live call settles"),
                      **UNKNOWN_OLI, **WRITES, **LIMITED, **COMMON},
    }},
    "/api/leads/{oli_id}": {"get": {
        "tags": ["results"], "summary": "One lead as it stands and its call attempts, newest first",
        "description": "Times are wall-clock DB_TIMEZONE. Page the calls with `cursor` (the `next` of the page "
                       "before). Shares a counter of 6,000 requests a minute per client address with GET /api/lead-events.",
        "parameters": [{"in": "path", "name": "oli_id", "required": True, "schema": {
                            "type": "string", "minLength": 1, "maxLength": 100, "pattern": shared_fields.OLI_ID_PATTERN}},
                       # The class, not its name: a name resolves through marshmallow's class registry, where
                       # LeadReadQuery is the loader that adds the path's oli_id.
                       {"in": "query", "schema": crm_schemas.LeadReadQueryParameters}],
        "responses": {"200": _json("LeadReadResponse", "The lead and a page of its calls"),
                      "400": _json("Error", "A bad oli_id, limit or cursor (`validation_failed`, with details)"),
                      **UNKNOWN_OLI, **LIMITED, **COMMON},
    }},
    "/api/lead-events": {"get": {
        "tags": ["results"], "summary": "The lead events after a cursor, in commit order",
        "description": "Without `after`: from the oldest event kept (LEAD_EVENTS_RETENTION_DAYS). Resume with "
                       "after=next. The same events are delivered as signed webhooks (Standard Webhooks).",
        "parameters": [{"in": "query", "schema": "LeadEventsQuery"}],
        "responses": {"200": _json("LeadEventsResponse", "A page of events; `next` resumes after it"),
                      "400": _json("Error", "A bad after or limit (`validation_failed`, with details)"),
                      **LIMITED, **COMMON},
    }},
    "/api/missed-activities": {"get": {
        "tags": ["agents"], "summary": "One agent's open missed activities (exactly one of agentId and extension)",
        "description": "With an agent's token instead of WS_SECRET: that agent's only; agentId and "
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
    "/api/callbacks": {"get": {
        "tags": ["agents"], "summary": "One agent's personal callbacks (exactly one of agentId and extension)",
        "description": "The callbacks the CRM filed for this agent (callbackAgentId), due in the next "
                       "24 hours or already due, as the agent's socket gets them in `dialer.callbacks`. With an "
                       "agent's token: that agent's only; agentId and extension may then be left out.",
        "security": SECURITY + AGENT_SECURITY,
        "parameters": [{"in": "query", "schema": "MissedActivitiesQuery"}],
        "responses": {"200": _json("AgentCallbacksResponse", "Oldest first, at most 100; times DB_TIMEZONE"),
                      "400": _json("Error", "Neither or both of agentId and extension, or a malformed one"),
                      "403": _error("An agent token of another agent", "forbidden"),
                      "404": _json("Error", "`unknown_agent` or `unknown_extension`",
                                   {"ok": False, "error": "unknown_agent"}),
                      **LIMITED, **COMMON},
    }},
    "/api/agent-tokens": {"post": {
        "tags": ["agents"], "summary": "Mint a short-lived token for one agent's panel (the agent desktop's server)",
        "description": "The token opens that agent's socket (/ws?token=...), its GET /api/missed-activities and GET /api/callbacks, "
                       "nothing else. Give it to the agent's browser; never give it WS_SECRET.",
        "requestBody": {"required": True, "content": {JSON: {"schema": "AgentTokenRequest",
                                                           "example": {"agentId": 501, "lifetimeSeconds": 43200}}}},
        "responses": {"201": _json("AgentTokenResponse", "The token and its expiry"),
                      "404": _json("Error", "`unknown_agent` or `unknown_extension`",
                                   {"ok": False, "error": "unknown_agent"}),
                      **WRITES, **LIMITED, **COMMON},
    }},
    "/api/supervisor-tokens": {"post": {
        "tags": ["supervisors"], "summary": "Mint a short-lived token for a supervisor's board",
        "description": "The token opens the board's socket (/board/ws?token=..., or /board/#token=... in a browser), "
                       "GET /api/board and GET /api/reports/agents: reads only.",
        "requestBody": {"required": True, "content": {JSON: {"schema": "SupervisorTokenRequest",
                                                           "example": {"name": "Priya (floor 2)"}}}},
        "responses": {"201": _json("SupervisorTokenResponse", "The token and its expiry"),
                      **WRITES, **LIMITED, **COMMON},
    }},
    "/api/board": {"get": {
        "tags": ["supervisors"], "summary": "The supervisor board's snapshot: tiles per form_type and every agent",
        "description": "What /board/ws sends as `board.snapshot`. SUPERVISOR_SECRET or a supervisor token only.",
        "security": SUPERVISOR_SECURITY,
        "responses": {"200": _json("BoardResponse", "The floor now"), **LIMITED, **COMMON},
    }},
    "/api/reports/agents": {"get": {
        "tags": ["supervisors"], "summary": "The agent time report per agent and day",
        "description": "From the agent state history: login (panel open) time and its parts, seconds; login is the "
                       "sum of free, talk, wrap-up, blocked and pause. At most 92 days.",
        "security": SECURITY + SUPERVISOR_SECURITY,
        "parameters": [{"in": "query", "schema": "AgentReportQuery"}],
        "responses": {"200": _json("AgentReportResponse", "Rows per agent and day, and totals per agent"),
                      "400": _json("Error", "A missing, malformed, backwards or too long range"),
                      **LIMITED, **COMMON},
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
               "redial": "NamedClaimRequest", "inbound": "InboundClaimRequest"}
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
        "reserved; `caller_id` is the number the call presents once the floor has caller IDs (docs/operations/"
        "caller-ids.md). Sent again with the same `request_id`, it answers the same lead and reserves nothing more. "
        "`lead: null` means that no lead the claim may take is due and unreserved; every other refusal is a 409 "
        "that says why (docs/engine/api.md, \"The engine API\", the error table mode by mode).",
        CLAIM_REQUEST, {"mode": "progressive", "agent_id": 501, "request_id": "c-7f3a-0001"},
        "EngineClaimResponse", None,
        **{"404": _json("Error", "`unknown_agent` (progressive, redial, inbound) or `unknown_oli_id` (redial, "
                                 "inbound)", {"ok": False, "error": "unknown_agent"}),
           "409": _json("Error", "`maintenance` (progressive, predictive, redial); `not_claimable` with `reason`: "
                                 "the agent's (panel_inactive, paused, ami_busy, wrap_up, outbound_blocked; "
                                 "progressive, redial, inbound), no_free_agent (predictive), do_not_call (redial, "
                                 "inbound: the phone is listed), outside_calling_window (redial: the customer's "
                                 "local time), contact_cap (redial: the phone number is at a contact cap, with "
                                 "`cap` and `frees_at`), number_in_call (redial: the phone number is live through "
                                 "another lead, `oli_id_in_call`), a calling rule's reason (redial: emergency, "
                                 "state_holiday, state_sunday, state_hours, with `rule`, `source`, `note` and "
                                 "`next_at`; outside_calling_window carries `next_at` too), caller_id_exhausted (redial: no caller ID "
                                 "of the campaign's `pool` may present the call) or abandon_limit (predictive: the "
                                 "form_type's abandon rate is at its "
                                 "limit, with the figures in `abandons`); `lead_in_flight` (redial, inbound); "
                                 "`idempotency_conflict`",
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
    "/engine/floor": _engine(
        "The floor per form_type, for a pacing engine: agents by state, calls reserved, leads due",
        "One consistent snapshot. Per form_type some agent has (or only `form_type`): agents free, on a call, in "
        "wrap-up, paused, outbound-blocked and panel-inactive; live reservations and how many are connected; "
        "due unreserved leads counted up to `leads_due_cap`. Reads only (docs/engine/pacing.md, \"Pacing per skill\").",
        "EngineFloorRequest", {"form_type": "home_loan"},
        "EngineFloorResponse", None,
    ),
})
OPERATIONS["/api/master"] = {"post": {**OPERATIONS["/api/leads"]["post"], "summary": "Same handler as /api/leads"}}
OPERATIONS["/api/health"] = {"get": {**OPERATIONS["/health"]["get"], "summary": "Same as /health"}}
OPERATIONS.update(campaign_document.operations(_json, _error, WRITES, LIMITED, COMMON, SECURITY, SUPERVISOR_SECURITY))
OPERATIONS.update(dnc_document.operations(_json, _error, WRITES, LIMITED, COMMON))
OPERATIONS.update(caller_id_document.operations(_json, _error, WRITES, LIMITED, COMMON, SECURITY, SUPERVISOR_SECURITY))

SCHEMAS = {
    "Lead": crm_schemas.LeadSchema, "LeadBatch": crm_schemas.LeadBatchSchema,
    "SendCallbackRequest": crm_schemas.SendCallbackSchema, "PendingCallbackRequest": crm_schemas.PendingCallbackSchema,
    "PendingDispositionRequest": crm_schemas.PendingDispositionSchema, "MissedActivitiesQuery": agent_schemas.MissedActivitiesQuery,
    "LeadReadQuery": crm_schemas.LeadReadQueryParameters, "LeadEventsQuery": crm_schemas.LeadEventsQuery,
    "LeadReadResponse": responses.LeadReadResponseSchema, "LeadEventsResponse": responses.LeadEventsResponseSchema,
    "Error": responses.ErrorSchema, "PushResponse": responses.PushResponseSchema, "SendCallbackResponse": responses.SendCallbackResponseSchema,
    "PendingCallbackResponse": responses.PendingCallbackResponseSchema,
    "PendingDispositionResponse": responses.PendingDispositionResponseSchema,
    "MissedActivitiesResponse": responses.MissedActivitiesResponseSchema,
    "AgentCallbacksResponse": responses.AgentCallbacksResponseSchema,
    "AgentTokenRequest": agent_schemas.AgentTokenRequest, "AgentTokenResponse": responses.AgentTokenResponseSchema, "PauseReasonsResponse": responses.PauseReasonsResponseSchema,
    "SupervisorTokenRequest": supervisor_schemas.SupervisorTokenRequest,
    "SupervisorTokenResponse": board_responses.SupervisorTokenResponseSchema,
    "BoardResponse": board_responses.BoardResponseSchema, "AgentReportQuery": supervisor_schemas.AgentReportQuery,
    "AgentReportResponse": board_responses.AgentReportResponseSchema,
    "HealthzResponse": responses.HealthzResponseSchema, "HealthResponse": responses.HealthResponseSchema,
    "ProgressiveClaimRequest": engine_schemas.ProgressiveClaimSchema, "PredictiveClaimRequest": engine_schemas.PredictiveClaimSchema,
    "NamedClaimRequest": engine_schemas.NamedClaimSchema, "InboundClaimRequest": engine_schemas.InboundClaimSchema,
    "EngineBridgeRequest": engine_schemas.EngineBridgeSchema,
    "EngineCallConnectedRequest": engine_schemas.EngineCallConnectedSchema, "EngineSettleRequest": engine_schemas.EngineSettleSchema,
    "EngineAgentStateRequest": engine_schemas.EngineAgentStateSchema,
    "EngineFloorRequest": engine_schemas.EngineFloorSchema, "EngineFloorResponse": responses.EngineFloorResponseSchema, "EngineClaimResponse": responses.EngineClaimResponseSchema,
    "EngineBridgeResponse": responses.EngineBridgeResponseSchema, "EngineCallConnectedResponse": responses.EngineCallConnectedResponseSchema,
    "EngineSettleResponse": responses.EngineSettleResponseSchema, "EngineAgentStateResponse": responses.EngineAgentStateResponseSchema,
    **campaign_document.SCHEMAS, "CampaignSettings": CampaignSettingsSchema, **dnc_document.SCHEMAS,
    **caller_id_document.SCHEMAS,
}

# What a body's schema says beside its fields (the document is the contract): exactly one
# of two fields, which the schemas' own validators check.
BODY_RULES = {
    "InboundClaimRequest": {"oneOf": [{"required": ["oli_id"], "not": {"required": ["dialed_number"]}},
                                      {"required": ["phone_number"], "not": {"required": ["oli_id"]}}]},
    "SendCallbackRequest": {"oneOf": [{"required": ["scheduledAt"]}, {"required": ["ScheduledAt"]}]},
    "AgentTokenRequest": {"oneOf": [{"required": ["agentId"]}, {"required": ["extension"]}]},
}

DESCRIPTION = """The push interface of an outbound dialer: CRMs upsert leads into the master table,
set callbacks and file dispositions, which are held while a lead is live on a call and applied when
it settles. Every error is `{"ok": false, "error": CODE}` (400 adds `details`). The key goes in
`Authorization: Bearer`, `X-API-Key` or `X-Access-Key`: the CRM's WS_SECRET, except for the
dialing engine's operations under `/engine/` (tag `engine`), which take ENGINE_SECRET. Agent panels
use the websocket at `/ws` with a token of their own agent (POST /api/agent-tokens; see the docs, Agent desktops). Times: `YYYY-MM-DD HH:MM[:SS]` is wall-clock time in the service's DB_TIMEZONE;
ISO 8601 with an offset is converted. With daylight saving, a wall-clock time that does not exist
moves forward by the gap and one that exists twice is its first occurrence (docs/operations/time.md, "Time and
daylight saving")."""


def build():
    """The OpenAPI 3.1 document as a dict."""
    plugin = MarshmallowPlugin()
    spec = APISpec(title="dialerapi: lead intake and callbacks", version=release.VERSION, openapi_version="3.1.0",
                   plugins=[plugin], info={"description": DESCRIPTION})
    # A phone number is a string or an integer (its metadata's anyOf); query integers are digits.
    plugin.map_to_openapi_type(shared_fields.PhoneNumber, None, None)
    plugin.map_to_openapi_type(shared_fields.WallClockDateTime, "string", None)
    plugin.map_to_openapi_type(crm_schemas.Cursor, "integer", None)
    plugin.map_to_openapi_type(crm_schemas.QueryInteger, "integer", None)
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
    spec.components.security_scheme("supervisorBearerAuth", {
        "type": "http", "scheme": "bearer",
        "description": "SUPERVISOR_SECRET or a supervisor token (POST /api/supervisor-tokens), read-only: the board and reports"})
    spec.components.security_scheme("monitorBearerAuth", {
        "type": "http", "scheme": "bearer", "description": "MONITOR_SECRET, read-only: /health, /api/health, /metrics"})
    for name, schema in SCHEMAS.items():
        spec.components.schema(name, schema=schema)
    for path, operations in OPERATIONS.items():
        spec.path(path=path, operations={method: {"security": SECURITY, **op} for method, op in operations.items()})
    spec.tag({"name": "engine", "description": "The dialing engine's operations (ENGINE_SECRET); see the docs, Dialing engine"})
    document = spec.to_dict()
    for name, rule in BODY_RULES.items():
        document["components"]["schemas"][name].update(rule)
    schemas = document["components"]["schemas"]
    schemas["CampaignPatch"] = campaign_document.patch_schema(schemas.pop("CampaignSettings"),
                                                              schemas.pop("RestrictedDate"))
    document["security"] = SECURITY
    return document
