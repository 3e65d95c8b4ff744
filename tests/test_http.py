"""Authentication (lead-intake-api.md "Authentication"), error bodies and codes (decisions.md D3),
the 1 MB body limit, GET /api/pause-reasons and GET /healthz (D8)."""

import time

import pytest
import requests

from conftest import SECRET

UNAUTHORIZED = {"ok": False, "error": "unauthorized"}
LEAD = {"oli_id": "A-1", "phone_number": "9876543210", "client_name": "Asha", "form_type": "loan", "priority_id": 2}


@pytest.mark.parametrize("headers", [
    {"Authorization": f"Bearer {SECRET}"},
    {"Authorization": f"bearer {SECRET}"},
    {"X-API-Key": SECRET},
    {"X-Access-Key": SECRET},
])
def test_each_of_the_three_headers_authenticates(client, headers):
    assert client.post("/api/leads", json=LEAD, headers=headers).status_code == 201


@pytest.mark.parametrize("headers", [
    {},
    {"Authorization": "Bearer wrong"},
    {"Authorization": "Bearer "},
    {"Authorization": SECRET},
    {"Authorization": f"Basic {SECRET}"},
    {"X-API-Key": ""},
    {"X-API-Key": SECRET[:-1]},
    {"X-Access-Key": SECRET + "x"},
    {"X-Api-Secret": SECRET},
])
def test_wrong_or_missing_secret_is_401_with_the_exact_body(client, sql, headers):
    response = client.post("/api/leads", json=LEAD, headers=headers)
    assert response.status_code == 401 and response.get_json() == UNAUTHORIZED
    assert sql("SELECT * FROM sales_master") == []


@pytest.mark.parametrize("method, path", [
    ("GET", "/api/leads"), ("DELETE", "/api/leads"), ("PATCH", "/api/master"),
    ("GET", "/api/no-such-thing"), ("POST", "/api/pause-reasons"), ("GET", "/health"), ("POST", "/healthz-not"),
])
def test_authentication_comes_before_routing(client, method, path):
    response = client.open(path, method=method)
    assert response.status_code == 401 and response.get_json() == UNAUTHORIZED


def test_public_endpoints_need_no_secret(client):
    assert client.get("/healthz").status_code == 200
    assert client.get("/api/pause-reasons").status_code == 200


@pytest.mark.parametrize("method", ["GET", "PATCH", "DELETE", "PUT"])
def test_other_methods_on_leads_are_405(client, auth, method):
    response = client.open("/api/leads", method=method, headers=auth)
    assert response.status_code == 405
    assert response.get_json() == {"ok": False, "error": "method_not_allowed"}


def test_unknown_path_is_404_not_found_after_authentication(client, auth):
    response = client.get("/api/nothing-here", headers=auth)
    assert response.status_code == 404 and response.get_json() == {"ok": False, "error": "not_found"}


@pytest.mark.parametrize("data", [b"", b"{", b'{"oli_id": }', b"\xff\xfe{}", b"[" * 1000, b"NaN-ish"])
def test_bodies_that_are_not_json_are_invalid_json(client, auth, data):
    response = client.post("/api/leads", data=data, headers=auth)
    assert response.status_code == 400 and response.get_json() == {"ok": False, "error": "invalid_json"}


def test_body_is_json_whatever_the_content_type(client, auth):
    import json

    response = client.post("/api/leads", data=json.dumps(LEAD), headers={**auth, "Content-Type": "text/plain"})
    assert response.status_code == 201


def test_body_over_1_mb_is_413(client, auth, sql):
    body = b'{"leads": [' + b" " * (1024 * 1024) + b"]}"
    response = client.post("/api/leads", data=body, headers=auth)
    assert response.status_code == 413
    assert response.get_json() == {"ok": False, "error": "payload_too_large"}


def test_chunked_body_over_1_mb_is_413_on_a_real_server(live_server, sql):
    def chunks():
        yield b'{"leads": ['
        for _ in range(1100):
            yield b" " * 1024
        yield b"]}"

    response = requests.post(
        live_server.url("/api/leads"), data=chunks(), headers={"X-API-Key": SECRET}, timeout=30
    )
    assert response.status_code == 413 and response.json()["error"] == "payload_too_large"
    assert "Content-Length" not in response.request.headers


def test_chunked_body_under_the_limit_is_accepted(live_server, sql):
    import json

    payload = json.dumps(LEAD).encode()
    response = requests.post(
        live_server.url("/api/leads"), data=iter([payload[:10], payload[10:]]), headers={"X-API-Key": SECRET}, timeout=30
    )
    assert response.status_code == 201
    assert sql.lead("A-1")["client_name"] == "Asha"


def test_unexpected_errors_are_500_internal_error_without_details(database_url, auth, monkeypatch):
    from conftest import make_app
    from dialerapi.rules.leads import push as leads

    def explode(conn, *args):
        raise RuntimeError("SELECT secret FROM somewhere; password=hunter2")

    monkeypatch.setattr(leads, "push_leads", explode)
    client = make_app(database_url).test_client()
    response = client.post("/api/leads", json=LEAD, headers=auth)
    assert response.status_code == 500
    assert response.get_json() == {"ok": False, "error": "internal_error"}
    assert b"hunter2" not in response.data and b"SELECT" not in response.data


def test_database_down_is_503_with_retry_after(auth, monkeypatch):
    from conftest import make_app
    from dialerapi.plumbing import db

    monkeypatch.setattr(db, "FAILOVER_BUDGET_SECONDS", 0.5)
    client = make_app("mysql://root@127.0.0.1:9/nowhere").test_client()
    response = client.post("/api/leads", json=LEAD, headers=auth)
    assert (response.status_code, response.headers.get("Retry-After")) == (503, "2")
    assert response.get_json() == {"ok": False, "error": "database_unavailable", "reason": "no_ready_node"}


PICKER = ["bio", "tea", "lunch", "meeting", "training", "backoffice", "acw", "escalation", "process_query",
          "system", "logout", "personal", "poa", "ondemand", "other"]


def test_pause_reason_catalog(client):
    body = client.get("/api/pause-reasons").get_json()
    assert body["ok"] is True and body["note_max_words"] == 12 and body["note_max_chars"] == 80
    assert [r["code"] for r in body["reasons"]] == PICKER
    assert [r["code"] for r in body["system"]] == ["left", "toggle", "day_reset"]
    assert all(r["label"] for r in body["reasons"] + body["system"])
    assert [r["code"] for r in body["reasons"] if r.get("note") is True] == ["other"]
    assert all("note" not in r for r in body["reasons"] if r["code"] != "other")
    assert all(len(r["code"]) <= 32 for r in body["reasons"] + body["system"])


def test_healthz_reports_cached_checks_only(client, app):
    from dialerapi.upkeep.health import check_database

    assert check_database(app) is True
    response = client.get("/healthz")
    assert response.status_code == 200 and response.get_json() == {"ok": True, "ami": False, "db": True}


def test_healthz_answers_at_once_and_reports_a_dead_database(database_url):
    from conftest import make_app
    from dialerapi.upkeep.health import check_database

    app = make_app("mysql://root@127.0.0.1:9/nowhere")
    started = time.monotonic()
    assert app.test_client().get("/healthz").get_json() == {"ok": True, "ami": False, "db": False}
    assert time.monotonic() - started < 0.5
    assert check_database(app) is False
    assert app.test_client().get("/healthz").get_json()["db"] is False
