"""GET /api/caller-ids and PATCH /api/caller-ids/{number} (docs/operations/caller-ids.md): a
reputation feed reads the floor's numbers and flags one with the CRM key; the supervisor role
reads only, the engine's key opens neither; every 4xx follows decisions.md D3."""

import json

import pytest

from conftest import ENGINE_SECRET, SUPERVISOR_SECRET
from dialerapi.rules.caller_ids import numbers

SUPERVISOR = {"Authorization": f"Bearer {SUPERVISOR_SECRET}"}
ENGINE = {"Authorization": f"Bearer {ENGINE_SECRET}"}


@pytest.fixture
def floor_numbers(run, now):
    for n in range(3):
        run(numbers.add, f"+1919555010{n}", ["raleigh"], now, "cli")
    run(numbers.add, "+13055550100", ["miami"], now, "cli")


def test_the_crm_and_the_supervisor_read_pages_of_numbers(client, auth, floor_numbers):
    first = client.get("/api/caller-ids?pool=raleigh&limit=2", headers=auth)
    assert first.status_code == 200
    body = first.get_json()
    assert [item["number"] for item in body["caller_ids"]] == ["+19195550100", "+19195550101"]
    assert body["next"] == "+19195550101"
    rest = client.get("/api/caller-ids", query_string={"pool": "raleigh", "after": body["next"]}, headers=SUPERVISOR)
    assert [item["number"] for item in rest.get_json()["caller_ids"]] == ["+19195550102"]
    assert rest.get_json()["next"] is None
    assert client.get("/api/caller-ids", headers=ENGINE).status_code == 401


def test_a_feed_flags_a_number_and_the_change_is_kept_with_its_credential(client, auth, sql, floor_numbers):
    flagged = client.patch("/api/caller-ids/+19195550101", headers=auth,
                           json={"state": "flagged", "note": "Spam Likely on one carrier"})
    assert flagged.status_code == 200, flagged.get_json()
    caller_id = flagged.get_json()["caller_id"]
    assert caller_id["state"] == "flagged" and caller_id["history"][0]["changed_by"] == "crm"
    event = sql.one("SELECT type, body FROM dialerapi_lead_events WHERE type = 'caller_id.flagged'")
    assert json.loads(event["body"])["new"]["note"] == "Spam Likely on one carrier"
    assert client.patch("/api/caller-ids/+19195550101", headers=SUPERVISOR, json={"state": "active"}).status_code == 403
    cap = client.patch("/api/caller-ids/%2B19195550101", headers=auth, json={"daily_cap": 40, "state": "active"})
    assert cap.status_code == 200 and (cap.get_json()["caller_id"]["daily_cap"], cap.get_json()["caller_id"]["state"]) \
        == (40, "active")


@pytest.mark.parametrize("path, body, status, error, field", [
    ("/api/caller-ids/+19195550199", {"state": "flagged"}, 404, "unknown_caller_id", None),
    ("/api/caller-ids/+19195550100", {"state": "spam"}, 400, "validation_failed", "state"),
    ("/api/caller-ids/+19195550100", {"daily_cap": 0}, 400, "validation_failed", "daily_cap"),
    ("/api/caller-ids/+19195550100", {"pools": []}, 400, "validation_failed", "pools"),
    ("/api/caller-ids/+19195550100", [1], 400, "validation_failed", "body"),
    ("/api/caller-ids/919555", {"state": "flagged"}, 400, "validation_failed", "number"),
    ("/api/caller-ids/+1" + "9" * 40, {"state": "flagged"}, 400, "validation_failed", "number"),
])
def test_a_wrong_change_answers_d3_and_changes_nothing(client, auth, sql, floor_numbers, path, body, status, error, field):
    answer = client.patch(path, headers=auth, json=body)
    assert answer.status_code == status
    assert answer.get_json()["ok"] is False and answer.get_json()["error"] == error
    if field:
        assert [detail["field"] for detail in answer.get_json()["details"]] == [field]
    assert sql.one("SELECT COUNT(*) AS n FROM dialerapi_caller_id_changes")["n"] == 4


@pytest.mark.parametrize("query, field", [({"limit": 0}, "limit"), ({"state": "spam"}, "state"),
                                          ({"after": "x" * 40}, "after"), ({"colour": "red"}, "colour")])
def test_a_wrong_query_answers_d3(client, auth, query, field):
    answer = client.get("/api/caller-ids", query_string=query, headers=auth)
    assert answer.status_code == 400 and [detail["field"] for detail in answer.get_json()["details"]] == [field]


@pytest.mark.parametrize("pool", ["Raleigh", "r\u00e4leigh", "a" * 65, ""])
def test_a_wrong_pool_name_is_refused_naming_pool(client, auth, pool):
    """A pool's name is checked before it reaches the database (its column is ASCII)."""
    answer = client.get("/api/caller-ids", query_string={"pool": pool}, headers=auth)
    assert answer.status_code == 400, answer.get_json()
    assert answer.get_json()["details"][0]["field"] == "pool"
