"""Findings of the attack run of issue #17 that are fixed at their root, each with a test that
fails without its fix: a bounded metrics label set, the batch count checked before any lead is
loaded, oli_ids that MariaDB's PAD SPACE comparison would confuse refused, engine request keys
compared byte for byte, and two input patterns that let too much through."""

import pytest

from conftest import ENGINE_SECRET


def lead(oli_id, **fields):
    return {"oli_id": oli_id, "phone_number": "9876543210", "client_name": "Meena", "form_type": "home_loan",
            "priority_id": 2, **fields}


def test_made_up_methods_share_one_metrics_label(client, auth):
    for method in ("FOOBAR", "QWERTYUIOP", "BREW"):
        assert client.open("/api/leads", method=method, headers=auth).status_code == 405
    metrics = client.get("/metrics", headers=auth).get_data(as_text=True)
    assert 'method="other",route="unmatched",status="405"' in metrics
    assert "FOOBAR" not in metrics and "BREW" not in metrics


def test_a_batch_over_500_is_refused_before_any_lead_is_loaded(client, auth, sql):
    response = client.post("/api/leads", json={"leads": [{}] * 600}, headers=auth)
    assert response.status_code == 400
    assert response.get_json()["details"] == [{"field": "leads", "message": "Length must be between 1 and 500."}]
    assert client.post("/api/leads", json={"leads": []}, headers=auth).get_json()["details"][0]["field"] == "leads"


def test_a_body_of_many_objects_is_refused_before_it_is_parsed(client, auth, sql):
    """1 MiB of `{},` parsed to 350,000 dicts, about 25 MB per request (issue #17, finding 3)."""
    response = client.post("/api/leads", json={"leads": [{}] * 5000}, headers=auth)
    assert response.status_code == 400
    assert response.get_json() == {"ok": False, "error": "validation_failed", "details": [
        {"field": "body", "message": "more than 1024 JSON objects and arrays (a batch holds at most 500 leads)"}]}
    # Counted before parsing, so a body that would not even parse gets this answer, not invalid_json.
    for data in ("[" * 2000 + "]" * 2000, "[" * 100_000):
        nested = client.post("/api/pending-callbacks", data=data, headers=auth)
        assert nested.status_code == 400 and nested.get_json()["details"][0]["field"] == "body"


def test_braces_inside_strings_are_not_counted(client, auth, sql):
    batch = [lead(f"BR-{n}", client_name="{[" * 20) for n in range(500)]
    response = client.post("/api/leads", json={"leads": batch}, headers=auth)
    assert response.status_code == 201, response.get_json()
    assert sql.one("SELECT COUNT(*) AS n FROM sales_master")["n"] == 500


@pytest.mark.parametrize("oli_id", ["PAD-1 ", " PAD-1", "PAD-1\t"])
def test_an_oli_id_with_whitespace_around_it_is_refused_everywhere(client, auth, sql, new_lead, oli_id):
    new_lead("PAD-1")
    before = sql.lead("PAD-1")
    pushed = client.post("/api/leads", json=lead(oli_id), headers=auth)
    batch = client.post("/api/leads", json={"leads": [lead("OK-1"), lead(oli_id)]}, headers=auth)
    assert pushed.status_code == batch.status_code == 400
    assert pushed.get_json()["details"] == [{"field": "oli_id", "message": "must not begin or end with whitespace"}]
    assert batch.get_json()["details"] == [{"field": "leads[1].oli_id",
                                            "message": "must not begin or end with whitespace"}]
    callback = client.post("/api/pending-callbacks", json={"oliId": oli_id, "scheduledAt": "2026-11-22 10:00"},
                           headers=auth)
    dispose = client.post("/api/pending-dispositions", json={"oliId": oli_id, "reason": "DND"}, headers=auth)
    direct = client.post("/api/send-callback-request", json={"oliId": oli_id, "scheduledAt": "2026-11-22 10:00"},
                         headers=auth)
    engine = client.post("/engine/claim", json={"mode": "redial", "agent_id": 501, "oli_id": oli_id,
                                                "request_id": "r"}, headers={"X-API-Key": ENGINE_SECRET})
    for response in (callback, dispose, direct, engine):
        assert response.status_code == 400, response.get_json()
    assert sql.lead("PAD-1") == before and sql("SELECT oli_id FROM sales_master") == [{"oli_id": "PAD-1"}]


def test_engine_request_keys_are_compared_byte_for_byte(client, sql, new_lead):
    sql("INSERT INTO sales_agents (id, extension, name, panel_active, ami_idle) VALUES (501, '4501', 'Kavya', 1, 1)")
    sql("INSERT INTO sales_agent_skills (agent_id, form_type) VALUES (501, 'home_loan')")
    for oli_id in ("A", "B", "C"):
        new_lead(oli_id)
    got = []
    for request_id in ("Claim-CI", "claim-ci", "clâim-ci"):
        response = client.post("/engine/claim", json={"mode": "progressive", "agent_id": 501, "request_id": request_id},
                               headers={"X-API-Key": ENGINE_SECRET})
        assert response.status_code == 200, response.get_json()
        got.append(response.get_json()["lead"]["oli_id"])
    assert got == ["A", "B", "C"], "three keys, three claims"


def test_an_extension_with_a_trailing_newline_is_refused(client, auth):
    response = client.get("/api/missed-activities", query_string={"extension": "4501\n"}, headers=auth)
    assert response.status_code == 400
    assert response.get_json()["details"] == [{"field": "extension", "message": "must be 3-16 digits"}]


def test_a_negative_integer_phone_number_is_refused(client, auth, sql):
    response = client.post("/api/leads", json=lead("NEG-1", phone_number=-9876543210), headers=auth)
    assert response.status_code == 400
    assert response.get_json()["details"][0]["field"] == "phone_number"
    assert sql("SELECT * FROM sales_master") == []
