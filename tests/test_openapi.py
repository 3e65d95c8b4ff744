"""The OpenAPI document and Swagger UI at /docs (issue: the API contract). schemathesis holds every
operation to the document in make faults: tests/faults/test_contract.py."""

import re

from openapi_spec_validator import OpenAPIV31SpecValidator

from dialerapi.rules.core import vocabulary
from dialerapi.rules.dialing import engine


def test_the_document_covers_every_route_status_and_auth_header(client, app):
    document = client.get("/openapi.json").get_json()
    assert document["openapi"] == "3.1.0"
    documented = {(path, method.upper()) for path, ops in document["paths"].items() for method in ops}
    served = {(re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", rule.rule), method) for rule in app.url_map.iter_rules()
              for method in rule.methods - {"HEAD", "OPTIONS"}
              if not rule.rule.startswith(("/docs", "/openapi.json", "/ws", "/panel", "/favicon.ico", "/board"))}
    assert served == documented
    schemes = document["components"]["securitySchemes"]
    assert [(s["type"], s.get("scheme"), s.get("name")) for s in schemes.values()] == 2 * [
        ("http", "bearer", None), ("apiKey", None, "X-API-Key"), ("apiKey", None, "X-Access-Key")] + 3 * [
        ("http", "bearer", None)]
    # Issue #28: an agent's token opens its missed activities; the monitor's key, health and metrics.
    security = {path: {next(iter(s)) for s in document["paths"][path]["get"]["security"]}
                for path in ("/api/missed-activities", "/health", "/api/health", "/metrics")}
    assert security["/api/missed-activities"] == {"bearerAuth", "apiKeyHeader", "accessKeyHeader", "agentToken"}
    for path in ("/health", "/api/health", "/metrics"):
        assert security[path] == {"bearerAuth", "apiKeyHeader", "accessKeyHeader", "monitorBearerAuth"}
    assert {"201", "400", "401", "404"} <= set(document["paths"]["/api/agent-tokens"]["post"]["responses"])
    for path in ("/engine/claim", "/engine/bridge", "/engine/call-connected", "/engine/settle", "/engine/agent-state"):
        operation = document["paths"][path]["post"]
        assert operation["tags"] == ["engine"] and {next(iter(s)) for s in operation["security"]} == {
            "engineBearerAuth", "engineApiKeyHeader", "engineAccessKeyHeader"}
        assert {"200", "400", "401"} <= set(operation["responses"])
    push = document["paths"]["/api/leads"]["post"]
    assert set(push["responses"]) == {"201", "400", "401", "403", "413", "500", "503"}
    assert push["responses"]["503"]["content"]["application/json"]["example"]["error"] == "commit_unknown"
    assert set(document["paths"]["/api/send-callback-request"]["post"]["responses"]) >= {"200", "404", "409", "429"}
    assert set(document["paths"]["/api/pending-callbacks"]["post"]["responses"]) >= {"200", "202", "404", "429"}
    assert "Retry-After" in document["paths"]["/api/pending-dispositions"]["post"]["responses"]["429"]["headers"]
    assert document["paths"]["/healthz"]["get"]["security"] == []
    assert push["requestBody"]["content"]["application/json"]["examples"]["one lead"]["value"]["oli_id"]


def test_docs_render_from_local_assets(client):
    page = client.get("/docs/")
    assert page.status_code == 200 and b"swagger-ui" in page.data
    html = page.get_data(as_text=True)
    assets = re.findall(r'(?:src|href)="([^"]+)"', html)
    assert assets and not [a for a in assets if a.startswith(("http:", "https:", "//"))], "no CDN"
    for asset in assets:
        response = client.get(asset)
        assert response.status_code == 200 and len(response.data) > 100, asset
    assert '"url": "/openapi.json"' in html
    assert b"SwaggerUIBundle" in client.get("/docs/swagger-ui-bundle.js").data


def _refs(node):
    if isinstance(node, dict):
        if isinstance(node.get("$ref"), str):
            yield node["$ref"]
        for value in node.values():
            yield from _refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from _refs(value)


def test_the_document_validates_and_every_ref_resolves(client):
    """A client generator reads the whole document (issue #16): it must be valid OpenAPI 3.1 and no
    $ref may point at a schema that does not exist."""
    document = client.get("/openapi.json").get_json()
    OpenAPIV31SpecValidator(document).validate()
    refs = set(_refs(document))
    assert "#/components/schemas/Error" in refs
    for ref in refs:
        node = document
        assert ref.startswith("#/"), ref
        for part in ref[2:].split("/"):
            assert part in node, f"{ref} does not resolve"
            node = node[part]


def test_the_claim_request_is_described_mode_by_mode(client):
    document = client.get("/openapi.json").get_json()
    schemas = document["components"]["schemas"]
    request = document["paths"]["/engine/claim"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert request["discriminator"]["propertyName"] == "mode"
    mapping = request["discriminator"]["mapping"]
    assert set(mapping) == set(engine.CLAIM_MODES)
    assert {ref["$ref"] for ref in request["oneOf"]} == set(mapping.values())
    required = {mode: set(schemas[ref.rsplit("/", 1)[1]]["required"]) for mode, ref in mapping.items()}
    assert required == {"progressive": {"mode", "request_id", "agent_id"}, "predictive": {"mode", "request_id"},
                        "redial": {"mode", "request_id", "agent_id", "oli_id"},
                        "inbound": {"mode", "request_id", "agent_id"}}
    inbound = schemas[mapping["inbound"].rsplit("/", 1)[1]]["properties"]
    assert {"oli_id", "phone_number", "dialed_number"} <= set(inbound), "a named lead, or a return call"
    for mode, ref in mapping.items():
        described = schemas[ref.rsplit("/", 1)[1]]
        assert mode in described["properties"]["mode"]["enum"] and described["additionalProperties"] is False


def test_settle_documents_started_at_and_each_outcomes_last_dial_result(client):
    settle = client.get("/openapi.json").get_json()["components"]["schemas"]["EngineSettleRequest"]["properties"]
    started_at = settle["started_at"]
    assert re.fullmatch(started_at["pattern"], started_at["example"])
    assert re.fullmatch(started_at["pattern"], "2026-11-21T04:30:05Z") and "DB_TIMEZONE" in started_at["description"]
    assert not re.fullmatch(started_at["pattern"], "2026-11-21"), "date-only is refused"
    for outcome, (_, result) in vocabulary.OUTCOMES.items():
        assert f"`{outcome}`: " in settle["outcome"]["description"] and f"last_dial_result {result}" in settle[
            "outcome"]["description"]
