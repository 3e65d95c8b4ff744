"""Request ids, the JSON access log and Prometheus metrics (issue: logs and metrics)."""

import json
import logging

import pytest

LEAD = {"oli_id": "OB-1", "phone_number": "9876543210", "client_name": "A", "form_type": "f", "priority_id": 2}


def test_every_response_has_a_request_id(client, auth):
    generated = client.get("/healthz").headers["X-Request-ID"]
    assert len(generated) == 32
    assert client.get("/healthz", headers={"X-Request-ID": "crm-7f3a.42"}).headers["X-Request-ID"] == "crm-7f3a.42"
    unsafe = 'bad id" forged={"level":"ERROR"}'
    replaced = client.get("/healthz", headers={"X-Request-ID": unsafe}).headers["X-Request-ID"]
    assert replaced != unsafe and len(replaced) == 32
    assert client.get("/api/nothing").headers["X-Request-ID"], "errors carry one too"


def test_one_json_access_line_per_request_without_secrets_or_bodies(client, auth, caplog):
    from pythonjsonlogger.json import JsonFormatter

    formatter = JsonFormatter("%(levelname)s %(name)s %(message)s")
    with caplog.at_level(logging.INFO, logger="dialerapi.access"):
        client.post("/api/leads?key=leaked-secret", json=LEAD, headers={**auth, "X-Request-ID": "r-1"})
    [record] = [r for r in caplog.records if r.name == "dialerapi.access"]
    line = json.loads(formatter.format(record))
    assert {k: line[k] for k in ("method", "path", "status", "request_id", "client_ip")} == {
        "method": "POST", "path": "/api/leads", "status": 201, "request_id": "r-1", "client_ip": "127.0.0.1"}
    assert line["duration_ms"] >= 0
    text = formatter.format(record)
    assert "leaked-secret" not in text and "9876543210" not in text and auth["Authorization"] not in text


def test_metrics_need_the_key_and_count_requests_leads_and_state(client, auth, sql, new_lead, make_live):
    assert client.get("/metrics").status_code == 401
    new_lead("M-1")
    make_live("M-1")
    client.post("/api/leads", json={**LEAD, "oli_id": "M-1"}, headers=auth)
    client.post("/api/pending-dispositions", json={"oliId": "M-1", "reason": "DND"}, headers=auth)
    sql("INSERT INTO sales_agents (id, extension, name, outbound_blocked) VALUES (7, '4007', 'A', 1)")
    response = client.get("/metrics", headers=auth)
    assert response.status_code == 200 and response.headers["Content-Type"].startswith("text/plain")
    body = response.get_data(as_text=True)

    def sample(name, **labels):
        label_text = ",".join(f'{k}="{v}"' for k, v in labels.items())
        pattern = re.escape(f"{name}{{{label_text}}}" if labels else name) + r" ([0-9.e+]+)"
        match = re.search(pattern, body)
        assert match, f"{name} {labels} not in /metrics"
        return float(match.group(1))

    import re

    assert sample("dialerapi_leads_pushed_total", status="skipped_in_flight") >= 1
    assert sample("dialerapi_leads_pushed_total", status="inserted") >= 1
    assert sample("dialerapi_pending_actions", status="pending") == 1
    assert sample("dialerapi_agents_blocked") == 1
    assert sample("dialerapi_open_missed_activities") == 0
    assert sample("dialerapi_request_duration_seconds_count", method="POST", route="/api/leads", status="201") >= 2
    assert "dialerapi_sweeps_total" in body


@pytest.mark.parametrize("path", ["/openapi.json", "/docs/"])
def test_the_api_description_is_public(client, path):
    assert client.get(path).status_code == 200


def test_pushed_leads_are_counted_by_result(client, auth, new_lead, make_live):
    from prometheus_client import REGISTRY

    def counts():
        return {status: REGISTRY.get_sample_value("dialerapi_leads_pushed_total", {"status": status}) or 0
                for status in ("inserted", "updated", "skipped_in_flight")}

    new_lead("C-1")
    new_lead("C-2")
    make_live("C-2")
    before = counts()
    batch = {"leads": [{**LEAD, "oli_id": oli_id} for oli_id in ("C-1", "C-2", "C-3", "C-4", "C-3")]}
    assert client.post("/api/leads", json=batch, headers=auth).status_code == 201
    after = counts()
    assert {status: after[status] - before[status] for status in after} == {
        "inserted": 2, "updated": 2, "skipped_in_flight": 1}
