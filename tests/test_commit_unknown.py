"""A COMMIT whose reply is lost (issue #17, finding 8): the server stored the work, the connection
died before it said so. The answer is 503 `commit_unknown` with Retry-After, never a 500 that
tells the client nothing was done; repeating the request is how the client finds out, and the
repeat neither fails nor stores anything twice. The fault comes from tests/dbproxy.py, a proxy
that reads the MySQL wire protocol between the service and the test MariaDB."""

import pytest

from conftest import ENGINE_SECRET, make_app
from dbproxy import DatabaseProxy
from dialerapi.plumbing.limits import limiter


@pytest.fixture
def proxy(database_url):
    proxy = DatabaseProxy.for_url(database_url)
    yield proxy
    proxy.close()


@pytest.fixture
def proxied_client(proxy, database_url):
    app = make_app(proxy.url(database_url), DB_POOL_SIZE=2)
    limiter.reset()
    yield app.test_client()
    app.extensions["dialerapi.db"].close()


def lead(oli_id):
    return {"oli_id": oli_id, "phone_number": "9876543210", "client_name": "Meena", "form_type": "home_loan",
            "priority_id": 2}


def answer_of_lost_commit(proxy, send):
    proxy.drop_commits = 1
    response = send()
    assert proxy.commit_drops == 1, "the fault was injected"
    return response


def test_a_batch_whose_commit_reply_is_lost_says_it_may_be_stored(proxied_client, proxy, auth, sql):
    batch = {"leads": [lead("LOST-1"), lead("LOST-2"), lead("LOST-3")]}
    response = answer_of_lost_commit(proxy, lambda: proxied_client.post("/api/leads", json=batch, headers=auth))
    assert response.status_code == 503
    assert response.get_json() == {"ok": False, "error": "commit_unknown"}
    assert response.headers["Retry-After"] == "1"
    assert [row["oli_id"] for row in sql("SELECT oli_id FROM sales_master ORDER BY oli_id")] == \
        ["LOST-1", "LOST-2", "LOST-3"], "the server had committed"
    again = proxied_client.post("/api/leads", json=batch, headers=auth)
    assert again.status_code == 201, "the retry is answered on a fresh connection"
    assert sql.one("SELECT COUNT(*) AS n FROM sales_master")["n"] == 3


def test_a_crm_callback_whose_commit_reply_is_lost(proxied_client, proxy, auth, sql):
    assert proxied_client.post("/api/leads", json=lead("LOST-CB"), headers=auth).status_code == 201
    body = {"oliId": "LOST-CB", "scheduledAt": "2026-11-22 11:00"}
    response = answer_of_lost_commit(
        proxy, lambda: proxied_client.post("/api/pending-callbacks", json=body, headers=auth))
    assert (response.status_code, response.get_json()["error"]) == (503, "commit_unknown")
    assert sql.lead("LOST-CB")["dial_status"] == "Callback"
    assert proxied_client.post("/api/pending-callbacks", json=body, headers=auth).status_code == 200


def test_an_engine_claim_whose_commit_reply_is_lost_is_found_by_its_request_id(proxied_client, proxy, auth, sql):
    sql("INSERT INTO sales_agents (id, extension, name, panel_active, ami_idle) VALUES (501, '4501', 'Kavya', 1, 1)")
    sql("INSERT INTO sales_agent_skills (agent_id, form_type) VALUES (501, 'home_loan')")
    for oli_id in ("LOST-A", "LOST-B"):
        assert proxied_client.post("/api/leads", json=lead(oli_id), headers=auth).status_code == 201
    claim = {"mode": "progressive", "agent_id": 501, "request_id": "claim-lost-1"}
    engine = {"X-API-Key": ENGINE_SECRET}
    response = answer_of_lost_commit(proxy, lambda: proxied_client.post("/engine/claim", json=claim, headers=engine))
    assert (response.status_code, response.get_json()["error"]) == (503, "commit_unknown")
    reserved = sql("SELECT oli_id FROM sales_master WHERE isReserved = 1")
    assert len(reserved) == 1
    again = proxied_client.post("/engine/claim", json=claim, headers=engine)
    assert again.status_code == 200
    assert again.get_json()["lead"]["oli_id"] == reserved[0]["oli_id"], "the stored answer, not a second claim"
    assert len(sql("SELECT oli_id FROM sales_master WHERE isReserved = 1")) == 1
