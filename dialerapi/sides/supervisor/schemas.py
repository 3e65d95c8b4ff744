"""The supervisor side's request schemas: the agent report's query and the supervisor-token request,
on the shared types of web.fields."""

from datetime import date

from marshmallow import EXCLUDE, RAISE, Schema, ValidationError, fields, post_load, validates_schema
from marshmallow.validate import Length, Regexp

from dialerapi.rules.agents import state_history
from dialerapi.web.agent_tokens import MAX_NAME_CHARS
from dialerapi.web.fields import DAY_PATTERN, EMPLOYEE_ID, Text, TokenLifetime

DAY = Regexp(r"\d{4}-\d{2}-\d{2}\Z", error="must be a day, YYYY-MM-DD")


class AgentReportQuery(Schema):
    """GET /api/reports/agents query: `from` and `to` (days, YYYY-MM-DD, DB_TIMEZONE, both included,
    at most state_history.MAX_REPORT_DAYS), optional `agentId`. Loads to {first_day, last_day (dates),
    agent_ids (a list, or None for all)}."""

    class Meta:
        unknown = EXCLUDE

    from_ = Text(data_key="from", required=True, validate=DAY, metadata={"pattern": DAY_PATTERN})
    to = Text(required=True, validate=DAY, metadata={
        "pattern": DAY_PATTERN,
        "description": f"Not before `from`, at most {state_history.MAX_REPORT_DAYS} days after it (400 otherwise)"})
    agentId = fields.Integer(error_messages={"invalid": "must be an integer"}, validate=EMPLOYEE_ID)

    @post_load
    def to_range(self, data, **kwargs):
        try:
            first_day, last_day = date.fromisoformat(data["from_"]), date.fromisoformat(data["to"])
        except ValueError:
            raise ValidationError("must be a real day", "from") from None
        if last_day < first_day:
            raise ValidationError("is before from", "to")
        if (last_day - first_day).days + 1 > state_history.MAX_REPORT_DAYS:
            raise ValidationError(f"the range is over {state_history.MAX_REPORT_DAYS} days", "to")
        return {"first_day": first_day, "last_day": last_day,
                "agent_ids": [data["agentId"]] if "agentId" in data else None}


class SupervisorTokenRequest(TokenLifetime):
    """POST /api/supervisor-tokens body: `name` (1-64 characters, who the token is for, for the
    log) and optionally `lifetimeSeconds` (1 to AGENT_TOKEN_MAX_SECONDS; default AGENT_TOKEN_SECONDS).
    Loads to {name, lifetime_seconds (None when not given)}."""

    class Meta:
        unknown = RAISE

    name = Text(required=True, validate=Length(1, MAX_NAME_CHARS, error=f"must be 1 to {MAX_NAME_CHARS} characters"),
                metadata={"description": "Printable (Python's str.isprintable: no control, format or separator "
                                         "character but the space); 400 otherwise"})
    @validates_schema
    def printable(self, data, **kwargs):
        if "name" in data and not data["name"].isprintable():
            raise ValidationError("must be printable", "name")

    @post_load
    def to_request(self, data, **kwargs):
        return {"name": data["name"], "lifetime_seconds": data.get("lifetimeSeconds")}
