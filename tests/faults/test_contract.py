"""The OpenAPI document is the contract (issue #66 item 3): schemathesis at depth, 300 cases per
operation (30 for one that takes no input), positive (requests the document calls valid) and
negative: a valid request is accepted (no 400), every answer matches the document's status codes,
content types, response schemas and headers, and nothing answers 5xx. Each operation is a test of its own, so make faults' workers share them (issue #63),
called with the key of a caller its route opens (the routes' own declarations), seeded
(derandomize): a run is the same every time.

What JSON Schema cannot say is in the operation's description and left out here by name
(EXCLUDED), not by silence: each rule below is one the service checks against its tables, the
clock or another field.
"""

import json
import re
from datetime import datetime, timedelta
from pathlib import Path

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.generation import GenerationMode
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    positive_data_acceptance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)
from test_docs import route_roles

from conftest import DEFAULT_NOW, ENGINE_SECRET, MONITOR_SECRET, SECRET, SUPERVISOR_SECRET, make_app
from dialerapi.plumbing.limits import limiter
from dialerapi.rules.agents import state_history
from dialerapi.rules.caller_ids import numbers
from dialerapi.rules.core.kinds import CALLER_ID_TIERS

pytestmark = pytest.mark.faults
EXAMPLES = 300
# An operation that takes nothing (no parameter, no body) varies only in what negative mode sends
# beside it: 300 cases of /health cost 50 s of CI for nothing more than 30 find.
EXAMPLES_WITHOUT_INPUT = 30
# An operation whose only input is one path segment of free text (a campaign's form_type): past a
# few dozen strings, more find nothing the first ones did not.
EXAMPLES_PATH_ONLY = 60
# A campaign's read and change: each case first empties the campaigns (a merge patch then meets only
# what it sends) and takes the change's locks; 100 cases a method find what 300 did (CI's time).
EXAMPLES_BY_PATH = {"/api/campaigns/{form_type}": 100}
CHECKS = [not_a_server_error, positive_data_acceptance, status_code_conformance, content_type_conformance,
          response_schema_conformance, response_headers_conformance]
KEYS = {"crm": SECRET, "engine": ENGINE_SECRET, "monitor": MONITOR_SECRET, "supervisor": SUPERVISOR_SECRET}
DOCUMENT = json.loads((Path(__file__).parents[1] / "data" / "openapi.json").read_text())
OPERATION_PATHS = list(DOCUMENT["paths"])
CALLBACK_PRIORITY, FRESH_PRIORITY = 1, 2  # the seeded catalog (migrate.seed_rows)


def _wall(text):
    return datetime.fromisoformat(text.strip()).replace(tzinfo=None)


def _push_priority(lead):
    # A table, not a schema: an active priority but Final Disposal, a callback time only with a callback one.
    return lead.get("priority_id") in (CALLBACK_PRIORITY, FRESH_PRIORITY) and (
        lead.get("callback_scheduled_at") is None or lead.get("priority_id") == CALLBACK_PRIORITY)


def _pushable(body):
    leads = body["leads"] if isinstance(body, dict) and "leads" in body else [body]
    return all(isinstance(lead, dict) and _push_priority(lead) for lead in leads)


def _not_past(body):
    # The clock: a callback may not be more than 5 minutes in the past (the service's clock is
    # DEFAULT_NOW). Its offset can move a time by up to a day, so a day after now is the edge kept.
    moment = body.get("scheduledAt") if isinstance(body, dict) else None
    return not isinstance(moment, str) or _wall(moment) >= DEFAULT_NOW + timedelta(days=1)


def _one_agent(query):
    # Two query parameters, exactly one of them: OpenAPI parameters cannot say so.
    return query is None or ("agentId" in query) != ("extension" in query)


def _report_range(query):
    try:
        first, last = datetime.fromisoformat(query["from"]), datetime.fromisoformat(query["to"])
    except (KeyError, TypeError, ValueError):
        return True
    return first <= last and (last - first).days < state_history.MAX_REPORT_DAYS


def _campaign_patch(body):
    # Rules between values (rules.config.campaign_settings): a day's intervals end after they start and do
    # not overlap, a range's `to` is not before its `date`, end_date not before start_date, and the
    # calling window's ends differ.
    if not isinstance(body, dict):
        return True
    for intervals in (body.get("open_hours") or {}).values():
        spans = sorted(tuple(int(t[:2]) * 60 + int(t[3:]) for t in text.split("-")) for text in intervals)
        if any(start >= end for start, end in spans) or any(b[0] < a[1] for a, b in zip(spans, spans[1:])):
            return False
    for item in body.get("restricted_dates") or ():
        if item.get("to") is not None and item["to"] < item["date"]:
            return False
    if body.get("start_date") and body.get("end_date") and body["end_date"] < body["start_date"]:
        return False
    match = body.get("caller_id_match")
    if isinstance(match, list) and (len(set(match)) != len(match) or match != [tier for tier in CALLER_ID_TIERS
                                                                               if tier in match]):
        return False
    if isinstance(body.get("caller_id_default"), str) and not _e164(body["caller_id_default"]):
        return False
    if body.get("caller_id_fallback") == "default" and not body.get("caller_id_default"):
        return False
    return body.get("calling_window_start") is None or body.get("calling_window_start") != body.get(
        "calling_window_end")


def _e164(text):
    try:
        numbers.read_number(text)
    except numbers.InvalidCallerId:
        return False
    return True


def _one_lead(body):
    # mode inbound names a lead (oli_id) or a return call (phone_number, dialed_number with it).
    if not isinstance(body, dict) or body.get("mode") != "inbound":
        return True
    return ("oli_id" in body) != ("phone_number" in body) and ("dialed_number" not in body or "phone_number" in body)


def _one_number(body):
    # phone_number, or its alias phone: one of the two.
    return not isinstance(body, dict) or ("phone_number" in body) != ("phone" in body)


def _after_a_caller_id(query):
    return query is None or not isinstance(query.get("after"), str) or _e164(query["after"])


def _a_caller_id(path_parameters):
    return _e164(path_parameters["number"])


def _printable_name(body):
    return not isinstance(body, dict) or not isinstance(body.get("name"), str) or body["name"].isprintable()


# (path, where, rule, why): each is in its operation's or field's description in the document.
EXCLUDED = [
    ("/api/leads", "body", _pushable, "priority_id from sales_priorities, a callback time only with a callback one"),
    ("/api/master", "body", _pushable, "priority_id from sales_priorities, a callback time only with a callback one"),
    ("/api/pending-callbacks", "body", _not_past, "scheduledAt not more than 5 minutes in the past"),
    ("/api/missed-activities", "query", _one_agent, "exactly one of agentId and extension"),
    ("/api/callbacks", "query", _one_agent, "exactly one of agentId and extension"),
    ("/api/reports/agents", "query", _report_range, "to not before from, at most MAX_REPORT_DAYS days"),
    ("/api/supervisor-tokens", "body", _printable_name, "a printable name"),
    ("/api/campaigns/{form_type}", "body", _campaign_patch,
     "intervals, ranges and windows that open; caller_id_match in the order area_code, state, pool, each once;"
     " caller_id_default a valid number, and given for fallback default"),
    ("/engine/claim", "body", _one_lead, "mode inbound: oli_id, or the caller's phone_number (dialed_number with it)"),
    ("/api/dnc", "body", _one_number, "phone_number or its alias phone, one of the two"),
    ("/api/caller-ids", "query", _after_a_caller_id, "after: a valid number in E.164 (phonenumbers)"),
    ("/api/caller-ids/{number}", "path_parameters", _a_caller_id, "number: a valid number in E.164 (phonenumbers)"),
]


@pytest.fixture
def unlimited_app(database_url):
    """The app with rate limits off, so every case reaches validation and the database."""
    app = make_app(database_url, RATELIMIT_ENABLED=False)
    yield app
    limiter.enabled = True


@pytest.fixture
def contract_schema(unlimited_app):
    schema = schemathesis.openapi.from_wsgi("/openapi.json", unlimited_app)
    schema.config.generation.update(modes=[GenerationMode.POSITIVE, GenerationMode.NEGATIVE], max_examples=EXAMPLES)
    return schema


schema = schemathesis.pytest.from_fixture("contract_schema")


def key_for(app, path):
    """A header with the key of a caller the route of `path` opens (its own declaration)."""
    roles = route_roles(app).get(path, {"crm"})
    role = next(role for role in ("crm", "engine", "supervisor", "monitor") if role in roles)
    return {"Authorization": f"Bearer {KEYS[role]}"}


def allowed(case):
    """False for a valid case one of EXCLUDED's rules leaves out."""
    if case.meta is None or not case.meta.generation.mode.is_positive:
        return True
    for path, where, rule, _ in EXCLUDED:
        if case.path == path and not rule(getattr(case, where)):
            return False
    return True


def takes_input(path):
    return any(operation.get("parameters") or operation.get("requestBody")
               for operation in DOCUMENT["paths"][path].values())


def path_only(path):
    return all(not operation.get("requestBody") and all(p.get("in") == "path" for p in operation.get("parameters", ()))
               for operation in DOCUMENT["paths"][path].values())


def contract_test(path):
    examples = (EXAMPLES_PATH_ONLY if path_only(path) else EXAMPLES) if takes_input(path) else EXAMPLES_WITHOUT_INPUT
    examples = EXAMPLES_BY_PATH.get(path, examples)

    @pytest.mark.slow
    @schema.include(path=path).parametrize()
    @settings(max_examples=examples, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
    def test(case, unlimited_app, sql):
        if not allowed(case):
            return
        if case.path.startswith("/api/campaigns/"):
            # Each case starts with no campaign: a merge patch then meets only what it sends.
            sql.empty(("dialerapi_campaigns", "dialerapi_campaign_changes"))
        case.call_and_validate(headers=key_for(unlimited_app, case.path), checks=CHECKS)

    return test


for _path in OPERATION_PATHS:
    globals()["test_contract_" + re.sub(r"\W+", "_", _path).strip("_")] = contract_test(_path)
