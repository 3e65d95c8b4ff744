"""The agent side's request schemas: the missed-activities query (D7) and the agent-token request
(decisions.md D9), on the shared types of web.fields.
"""

from marshmallow import EXCLUDE, RAISE, Schema, ValidationError, fields, post_load, validates_schema
from marshmallow.validate import Regexp

from dialerapi.web.fields import EMPLOYEE_ID, Text, TokenLifetime


class MissedActivitiesQuery(Schema):
    """GET /api/missed-activities query: exactly one of `agentId` (employee id) and `extension` (3-16 digits) (D7).

    Other query parameters (cache busters) are ignored. Loads to {agent_id} or {extension}.
    """

    class Meta:
        unknown = EXCLUDE

    agentId = fields.Integer(error_messages={"invalid": "must be an integer"}, validate=EMPLOYEE_ID)
    extension = Text(validate=Regexp(r"[0-9]{3,16}\Z", error="must be 3-16 digits"), metadata={"pattern": "^[0-9]{3,16}$"})

    @validates_schema(pass_original=True, skip_on_field_errors=False)
    def exactly_one(self, data, original_data, **kwargs):
        if not isinstance(original_data, dict):
            return
        if ("agentId" in original_data) == ("extension" in original_data):
            raise ValidationError("give exactly one of agentId and extension", "agentId")

    @post_load
    def to_lookup(self, data, **kwargs):
        return {"agent_id": data["agentId"]} if "agentId" in data else {"extension": data["extension"]}



class AgentTokenRequest(MissedActivitiesQuery, TokenLifetime):
    """POST /api/agent-tokens body: exactly one of `agentId` and `extension`, and
    optionally `lifetimeSeconds` (1 to AGENT_TOKEN_MAX_SECONDS; default AGENT_TOKEN_SECONDS).

    Loads to {agent_id} or {extension}, plus lifetime_seconds (None when not given).
    """

    class Meta:
        unknown = RAISE

    @post_load
    def to_lookup(self, data, **kwargs):
        lookup = {"agent_id": data["agentId"]} if "agentId" in data else {"extension": data["extension"]}
        return {**lookup, "lifetime_seconds": data.get("lifetimeSeconds")}

# --- the engine API (/engine/) ------------------------------------------------------------------
# snake_case like the columns the engine shares (decisions.md D1); times per D2.
