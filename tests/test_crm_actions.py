"""POST /api/send-callback-request, /api/pending-callbacks and /api/pending-dispositions:
lead-intake-api.md (their sections, their rows of "States and transitions", "Pending row") and
decisions.md D2, D3 and D5."""

import uuid
from datetime import datetime, timedelta, timezone

import pytest

from conftest import aware, utc_text

NOW = datetime(2026, 11, 21, 10, 0)
ATTEMPT_COLUMNS = ("last_dial_result", "hangup_by", "hangup_cause", "last_attempt_at", "first_attempt_at", "next_retry_at")


@pytest.fixture(autouse=True)
def fixed_now(frozen_clock):
    frozen_clock(NOW)


@pytest.fixture
def post(client, auth):
    def post(path, body):
        return client.post(path, json=body, headers=auth)

    return post


def dial_history(sql, oli_id):
    """Give a lead the attempt columns an engine leaves after a few unanswered calls."""
    sql("UPDATE sales_master SET dial_status = 'Not Connected', disposeRemark = 'old', last_dial_result = 'NOANSWER',"
        " hangup_by = 'customer', hangup_cause = '19', last_attempt_at = '2026-11-20 18:00:00',"
        " first_attempt_at = '2026-11-19 10:00:00', next_retry_at = '2026-11-21 11:00:00', call_count = 4"
        " WHERE oli_id = %s", oli_id)


def detail_fields(response):
    assert response.status_code == 400, response.get_json()
    assert response.get_json()["error"] == "validation_failed"
    return {d["field"] for d in response.get_json()["details"]}


# --- send-callback-request -------------------------------------------------------------------

@pytest.mark.clock
def test_send_callback_request_sets_callback_and_resets_dial_state(post, sql, new_lead):
    old_data_id = new_lead("OLI-1")
    dial_history(sql, "OLI-1")
    response = post("/api/send-callback-request", {"oliId": "OLI-1", "scheduledAt": "2026-11-22 15:30"})
    assert response.status_code == 200
    body = response.get_json()
    assert body["ok"] is True
    lead = body["lead"]
    assert lead["oli_id"] == "OLI-1" and lead["dial_status"] == "Callback"
    assert lead["callback_scheduled_at"] == "2026-11-22 15:30:00"
    assert lead["data_id"] != old_data_id and uuid.UUID(lead["data_id"])
    row = sql.lead("OLI-1")
    assert row["data_id"] == lead["data_id"] and row["dial_status"] == "Callback"
    assert row["callback_scheduled_at"] == datetime(2026, 11, 22, 15, 30)
    assert row["priority_id"] == 2, "send-callback-request keeps priority_id"
    assert row["call_count"] == 0 and row["isReserved"] == 0 and row["disposeRemark"] is None
    assert all(row[c] is None for c in ATTEMPT_COLUMNS)


@pytest.mark.clock
@pytest.mark.parametrize("key", ["scheduledAt", "ScheduledAt"])
def test_send_callback_request_takes_either_spelling(post, sql, new_lead, tz, key):
    new_lead("OLI-1")
    assert post("/api/send-callback-request", {"oliId": "OLI-1", key: "2026-11-22T10:00:00+05:30"}).status_code == 200
    expected = datetime(2026, 11, 22, 4, 30, tzinfo=timezone.utc).astimezone(tz).replace(tzinfo=None)
    assert sql.lead("OLI-1")["callback_scheduled_at"] == expected


@pytest.mark.clock
def test_send_callback_request_accepts_past_times(post, sql, new_lead):
    new_lead("OLI-1")
    assert post("/api/send-callback-request", {"oliId": "OLI-1", "scheduledAt": "2025-01-01 08:00:00"}).status_code == 200


@pytest.mark.parametrize("body, field", [
    ({"oliId": "OLI-1"}, "scheduledAt"),
    ({"oliId": "OLI-1", "scheduledAt": "2026-11-22 10:00", "ScheduledAt": "2026-11-22 10:00"}, "ScheduledAt"),
    ({"oliId": "OLI-1", "scheduledAt": "2026-11-22"}, "scheduledAt"),
    ({"oliId": "OLI-1", "scheduledAt": ""}, "scheduledAt"),
    ({"oliId": "OLI-1", "scheduledAt": "2026-02-30 10:00"}, "scheduledAt"),
    ({"oliId": "OLI-1", "scheduledAt": None}, "scheduledAt"),
    ({"scheduledAt": "2026-11-22 10:00"}, "oliId"),
    ({"oliId": "OLI-1", "scheduledAt": "2026-11-22 10:00", "agent_id": 7}, "agent_id"),
])
def test_send_callback_request_validation(post, sql, new_lead, body, field):
    new_lead("OLI-1")
    before = sql.lead("OLI-1")
    assert field in detail_fields(post("/api/send-callback-request", body))
    assert sql.lead("OLI-1") == before


@pytest.mark.parametrize("path, body", [
    ("/api/send-callback-request", {"scheduledAt": "2026-11-22 10:00"}),
    ("/api/pending-callbacks", {"scheduledAt": "2026-11-22 10:00", "agentId": 501}),
    ("/api/pending-dispositions", {"reason": "DND"}),
])
def test_unknown_oli_id_is_404_and_stores_nothing(post, sql, new_lead, path, body):
    new_lead("OLI-1")
    before = sql.lead("OLI-1")
    response = post(path, {"oliId": "ghost", **body})
    assert response.status_code == 404 and response.get_json() == {"ok": False, "error": "unknown_oli_id"}
    assert sql("SELECT * FROM sales_pending_actions") == [] and sql.lead("OLI-1") == before


def test_send_callback_request_on_a_live_lead_is_409_and_changes_nothing(post, sql, new_lead, make_live):
    new_lead("OLI-1")
    before = make_live("OLI-1")
    response = post("/api/send-callback-request", {"oliId": "OLI-1", "scheduledAt": "2026-11-22 10:00"})
    assert response.status_code == 409 and response.get_json() == {"ok": False, "error": "lead_in_flight"}
    assert sql.lead("OLI-1") == before


# --- pending-callbacks -------------------------------------------------------------------------

CALLBACK = {
    "oliId": "OLI-1", "scheduledAt": "2026-11-21 16:00", "agentId": 501, "extension": "4501",
    "callbackType": "today", "workStatus": "Interested", "subDisposition": "Call later", "remarks": "after 4",
}


@pytest.mark.clock
def test_pending_callback_on_an_idle_lead_is_applied_at_once(post, sql, new_lead):
    old_data_id = new_lead("OLI-1")
    dial_history(sql, "OLI-1")
    response = post("/api/pending-callbacks", CALLBACK)
    assert response.status_code == 200
    pending = response.get_json()["pending"]
    assert set(pending) == {"id", "oli_id", "scheduled_at", "status"}
    assert pending["oli_id"] == "OLI-1" and pending["status"] == "applied"
    assert pending["scheduled_at"] == "2026-11-21 16:00:00"
    row = sql.lead("OLI-1")
    assert row["dial_status"] == "Callback" and row["priority_id"] == 1
    assert row["callback_scheduled_at"] == datetime(2026, 11, 21, 16, 0)
    assert row["data_id"] != old_data_id and row["call_count"] == 0 and row["isReserved"] == 0
    assert row["disposeRemark"] is None and all(row[c] is None for c in ATTEMPT_COLUMNS)
    stored = sql.one("SELECT * FROM sales_pending_actions WHERE id = %s", pending["id"])
    assert stored["status"] == "applied" and stored["action"] == "callback"
    assert stored["applied_at"] == stored["created_at"] == datetime(2026, 11, 21, 10, 0)
    assert (stored["agentId"], stored["extension"], stored["callbackType"], stored["workStatus"],
            stored["subDisposition"], stored["remarks"]) == (501, "4501", "today", "Interested", "Call later", "after 4")


def test_pending_callback_on_a_live_lead_is_held(post, sql, new_lead, make_live):
    new_lead("OLI-1")
    before = make_live("OLI-1")
    response = post("/api/pending-callbacks", CALLBACK)
    assert response.status_code == 202
    pending = response.get_json()["pending"]
    assert pending["status"] == "pending" and pending["scheduled_at"] == "2026-11-21 16:00:00"
    assert sql.lead("OLI-1") == before
    stored = sql.one("SELECT status, applied_at FROM sales_pending_actions WHERE id = %s", pending["id"])
    assert stored == {"status": "pending", "applied_at": None}


def _in_kolkata(wall):
    return aware(wall).astimezone(timezone(timedelta(hours=5, minutes=30))).isoformat()


@pytest.mark.clock
@pytest.mark.parametrize("scheduled, ok", [
    ("2026-11-21 09:55:00", True),
    ("2026-11-21 09:54:59", False),
    (lambda: _in_kolkata(NOW - timedelta(minutes=4)), True),
    (lambda: _in_kolkata(NOW - timedelta(minutes=6)), False),
    (lambda: utc_text(NOW - timedelta(minutes=5)), True),
    (lambda: utc_text(NOW - timedelta(minutes=5, seconds=1)), False),
    ("2026-11-21 09:56", True),
])
def test_pending_callback_time_may_be_at_most_5_minutes_in_the_past(post, new_lead, scheduled, ok):
    new_lead("OLI-1")
    scheduled = scheduled() if callable(scheduled) else scheduled  # an ISO form of a time relative to NOW
    response = post("/api/pending-callbacks", {"oliId": "OLI-1", "scheduledAt": scheduled})
    if ok:
        assert response.status_code == 200
    else:
        assert detail_fields(response) == {"scheduledAt"}


@pytest.mark.parametrize("change, field", [
    ({"scheduledAt": "2026-11-22"}, "scheduledAt"),
    ({"scheduledAt": None}, "scheduledAt"),
    ({"callbackType": "tomorrow"}, "callbackType"),
    ({"agentId": "501"}, "agentId"),
    ({"remarks": "x" * 501}, "remarks"),
    ({"oliId": ""}, "oliId"),
    ({"oli_id": "OLI-1"}, "oli_id"),
    ({"agent_id": 501}, "agent_id"),
])
def test_pending_callback_validation(post, sql, new_lead, change, field):
    new_lead("OLI-1")
    assert field in detail_fields(post("/api/pending-callbacks", {**CALLBACK, **change}))
    assert sql("SELECT * FROM sales_pending_actions") == []


def test_pending_callback_accepts_null_audit_fields_and_500_char_remarks(post, new_lead):
    new_lead("OLI-1")
    body = {"oliId": "OLI-1", "scheduledAt": "2026-11-21 16:00", "agentId": None, "remarks": "r" * 500}
    assert post("/api/pending-callbacks", body).status_code == 200


@pytest.mark.clock
def test_storing_a_callback_clears_every_open_missed_activity_of_the_lead(post, sql, new_lead, make_live, open_missed_activity):
    new_lead("OLI-1")
    new_lead("OLI-2")
    make_live("OLI-1")
    first = open_missed_activity("OLI-1", agent_id=501)
    second = open_missed_activity("OLI-1", agent_id=502, ended_at="2026-11-21 09:00:00", due_at="2026-11-21 09:10:00")
    other = open_missed_activity("OLI-2", agent_id=501)
    assert post("/api/pending-callbacks", CALLBACK).status_code == 202
    for activity in (first, second):
        row = sql.one("SELECT cleared_at, cleared_by FROM sales_missed_activities WHERE id = %s", activity["id"])
        assert row == {"cleared_at": datetime(2026, 11, 21, 10, 0), "cleared_by": "callback"}
    assert sql.one("SELECT cleared_at FROM sales_missed_activities WHERE id = %s", other["id"])["cleared_at"] is None


# --- pending-dispositions ------------------------------------------------------------------------

DISPOSITION = {"oliId": "OLI-1", "reason": "Not Intrested", "agentId": 501, "extension": "4501",
               "workStatus": "Closed", "subDisposition": "Price", "remarks": "bought elsewhere"}


def test_pending_disposition_on_an_idle_lead_is_applied_at_once(post, sql, new_lead):
    new_lead("OLI-1", priority_id=1, callback_scheduled_at="2026-11-23 10:00")
    dial_history(sql, "OLI-1")
    old = sql.lead("OLI-1")
    response = post("/api/pending-dispositions", DISPOSITION)
    assert response.status_code == 200
    pending = response.get_json()["pending"]
    assert pending["action"] == "dispose" and pending["reason"] == "Not Intrested" and pending["status"] == "applied"
    assert set(pending) == {"id", "oli_id", "action", "reason", "status"}
    row = sql.lead("OLI-1")
    assert row["dial_status"] == "Disposed" and row["disposeRemark"] == "CRM: Not Intrested"
    assert row["priority_id"] == 3 and row["callback_scheduled_at"] is None and row["next_retry_at"] is None
    assert row["isReserved"] == 0 and row["data_id"] != old["data_id"]
    assert row["call_count"] == old["call_count"], "a disposition keeps the attempt history"


def test_disposition_uses_the_configured_disposed_priority(post, sql, new_lead):
    sql("INSERT INTO sales_priorities (id, name, is_callback, is_active) VALUES (9, 'Closed by CRM', 0, 1)")
    sql("UPDATE sales_dialer_config SET disposed_priority_id = 9")
    new_lead("OLI-1")
    post("/api/pending-dispositions", DISPOSITION)
    assert sql.lead("OLI-1")["priority_id"] == 9


@pytest.mark.parametrize("reason", ["Not Intrested", "Invalid Lead", "Language Barrier", "DND"])
def test_pending_disposition_on_a_live_lead_is_held(post, sql, new_lead, make_live, reason):
    new_lead("OLI-1")
    before = make_live("OLI-1")
    response = post("/api/pending-dispositions", {"oliId": "OLI-1", "reason": reason})
    assert response.status_code == 202
    assert response.get_json()["pending"] | {"id": 0} == {
        "id": 0, "oli_id": "OLI-1", "action": "dispose", "reason": reason, "status": "pending"}
    assert sql.lead("OLI-1") == before


@pytest.mark.parametrize("change, field", [
    ({"reason": ""}, "reason"), ({"reason": "r" * 201}, "reason"), ({"reason": None}, "reason"),
    ({"scheduledAt": "2026-11-21 16:00"}, "scheduledAt"), ({"callbackType": "today"}, "callbackType"),
])
def test_pending_disposition_validation(post, new_lead, change, field):
    new_lead("OLI-1")
    assert field in detail_fields(post("/api/pending-dispositions", {**DISPOSITION, **change}))


def test_missing_reason_is_required(post, new_lead):
    new_lead("OLI-1")
    assert detail_fields(post("/api/pending-dispositions", {"oliId": "OLI-1"})) == {"reason"}


def test_storing_a_disposition_clears_missed_activities(post, sql, new_lead, open_missed_activity):
    new_lead("OLI-1")
    activity = open_missed_activity("OLI-1")
    post("/api/pending-dispositions", DISPOSITION)
    assert sql.one("SELECT cleared_by FROM sales_missed_activities WHERE id = %s", activity["id"])["cleared_by"] == "disposition"


# --- latest wins --------------------------------------------------------------------------------

def test_a_newer_action_supersedes_older_pending_ones_of_the_lead(post, sql, new_lead, make_live):
    new_lead("OLI-1")
    new_lead("OLI-2")
    make_live("OLI-1")
    make_live("OLI-2")
    first = post("/api/pending-callbacks", CALLBACK).get_json()["pending"]
    other = post("/api/pending-callbacks", {**CALLBACK, "oliId": "OLI-2"}).get_json()["pending"]
    second = post("/api/pending-dispositions", DISPOSITION).get_json()["pending"]
    third = post("/api/pending-callbacks", {**CALLBACK, "scheduledAt": "2026-11-21 18:00"}).get_json()["pending"]
    statuses = {r["id"]: r["status"] for r in sql("SELECT id, status FROM sales_pending_actions")}
    assert statuses == {first["id"]: "superseded", second["id"]: "superseded", third["id"]: "pending",
                        other["id"]: "pending"}


def test_applied_at_once_also_supersedes_held_rows(post, sql, new_lead, make_live):
    new_lead("OLI-1")
    make_live("OLI-1")
    held = post("/api/pending-callbacks", CALLBACK).get_json()["pending"]
    sql("UPDATE sales_master SET dial_status = 'Not Connected', isReserved = 0 WHERE oli_id = 'OLI-1'")
    applied = post("/api/pending-dispositions", DISPOSITION)
    assert applied.status_code == 200
    assert sql.one("SELECT status FROM sales_pending_actions WHERE id = %s", held["id"])["status"] == "superseded"
    assert sql.lead("OLI-1")["dial_status"] == "Disposed"


@pytest.mark.parametrize("path", ["/api/send-callback-request", "/api/pending-callbacks", "/api/pending-dispositions"])
@pytest.mark.parametrize("body", ["null", "[]", "7", '"x"'])
def test_a_body_that_is_not_an_object_is_validation_failed(client, auth, path, body):
    response = client.post(path, data=body, headers=auth)
    assert response.status_code == 400 and response.get_json()["error"] == "validation_failed"
