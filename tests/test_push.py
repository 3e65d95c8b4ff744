"""POST /api/leads and /api/master: lead-intake-api.md "Lead (master row)", the push rows of
"States and transitions", "Dial-state reset", the endpoint's Rules, and decisions.md D2-D4."""

import json
import uuid
from datetime import datetime, timezone

import pytest

DIAL_STATE_COLUMNS = (
    "disposeRemark", "last_dial_result", "hangup_by", "hangup_cause", "last_attempt_at", "first_attempt_at",
    "next_retry_at", "callback_scheduled_at",
)


def lead(oli_id="OLI-1", **fields):
    body = {
        "oli_id": oli_id,
        "phone_number": "+91 98765 43210",
        "client_name": "Priya Sharma",
        "form_type": "home_loan",
        "priority_id": 2,
    }
    body.update(fields)
    return body


@pytest.fixture
def push(client, auth):
    def push(body, path="/api/leads"):
        return client.post(path, json=body, headers=auth)

    return push


def errors_of(response):
    assert response.status_code == 400, response.get_json()
    body = response.get_json()
    assert body["ok"] is False and body["error"] == "validation_failed"
    return {(d["field"], d["message"]) for d in body["details"]}


def fields_of(response):
    return {field for field, _ in errors_of(response)}


def make_dirty(sql, oli_id, dial_status="Not Connected", reserved=0):
    """Give a lead the dial state an engine would leave behind."""
    sql(
        "UPDATE sales_master SET dial_status = %s, isReserved = %s, disposeRemark = 'x', last_dial_result = 'NOANSWER',"
        " hangup_by = 'customer', hangup_cause = '16', last_attempt_at = '2026-11-20 10:00:00',"
        " first_attempt_at = '2026-11-19 10:00:00', next_retry_at = '2026-11-20 11:00:00',"
        " callback_scheduled_at = '2026-11-20 12:00:00', call_count = 3 WHERE oli_id = %s",
        dial_status, reserved, oli_id,
    )


@pytest.mark.clock
def test_new_lead_is_inserted_pending_with_a_new_data_id(push, sql, frozen_clock):
    frozen_clock(datetime(2026, 11, 21, 10, 0))
    response = push(lead("OLI-1"))
    assert response.status_code == 201
    body = response.get_json()
    assert body["ok"] is True
    [entry] = body["leads"]
    assert entry["oli_id"] == "OLI-1" and entry["status"] == "inserted" and entry["callback_scheduled_at"] is None
    row = sql.lead("OLI-1")
    assert row["data_id"] == entry["data_id"] and uuid.UUID(entry["data_id"])
    assert row["dial_status"] == "Pending" and row["call_count"] == 0 and row["isReserved"] == 0
    assert row["phone_number"] == "919876543210" and row["priority_id"] == 2
    assert all(row[c] is None for c in DIAL_STATE_COLUMNS)
    assert row["created_at"] == row["updated_at"] == datetime(2026, 11, 21, 10, 0)


def test_master_path_is_the_same_handler(push, sql):
    response = push(lead("OLI-M"), path="/api/master")
    assert response.status_code == 201 and response.get_json()["leads"][0]["status"] == "inserted"
    assert sql.lead("OLI-M")["client_name"] == "Priya Sharma"


@pytest.mark.clock
def test_existing_lead_is_updated_with_the_dial_state_reset(push, sql):
    first = push(lead("OLI-1")).get_json()["leads"][0]
    make_dirty(sql, "OLI-1")
    created = sql.lead("OLI-1")["created_at"]
    response = push(lead("OLI-1", client_name="Rahul Verma", phone_number="(415) 555-0134", form_type="credit_card"))
    [entry] = response.get_json()["leads"]
    assert entry["status"] == "updated" and entry["data_id"] != first["data_id"]
    row = sql.lead("OLI-1")
    assert row["data_id"] == entry["data_id"]
    assert (row["client_name"], row["phone_number"], row["form_type"]) == ("Rahul Verma", "4155550134", "credit_card")
    assert row["dial_status"] == "Pending" and row["call_count"] == 0 and row["isReserved"] == 0
    assert all(row[c] is None for c in DIAL_STATE_COLUMNS)
    assert row["created_at"] == created
    assert sql.one("SELECT COUNT(*) AS n FROM sales_master")["n"] == 1


@pytest.mark.parametrize("dial_status", ["Received", "Disposed", "Rejected", "Abandoned", "Callback"])
def test_any_state_but_live_is_reset_by_a_push(push, sql, dial_status):
    push(lead("OLI-1"))
    make_dirty(sql, "OLI-1", dial_status=dial_status)
    assert push(lead("OLI-1")).get_json()["leads"][0]["status"] == "updated"
    assert sql.lead("OLI-1")["dial_status"] == "Pending"


def test_calling_but_not_reserved_is_not_live_and_is_updated(push, sql):
    push(lead("OLI-1"))
    make_dirty(sql, "OLI-1", dial_status="Calling", reserved=0)
    assert push(lead("OLI-1")).get_json()["leads"][0]["status"] == "updated"


def test_live_lead_is_skipped_and_left_untouched(push, sql):
    push(lead("OLI-1"))
    make_dirty(sql, "OLI-1", dial_status="Calling", reserved=1)
    before = sql.lead("OLI-1")
    response = push(lead("OLI-1", client_name="Changed", priority_id=1, callback_scheduled_at="2026-12-01 10:00"))
    assert response.status_code == 201
    [entry] = response.get_json()["leads"]
    assert entry == {
        "oli_id": "OLI-1", "status": "skipped_in_flight", "data_id": before["data_id"],
        "callback_scheduled_at": "2026-12-01 10:00",
    }
    assert sql.lead("OLI-1") == before


def test_batch_mixes_inserted_updated_and_skipped(push, sql):
    push({"leads": [lead("A"), lead("B")]})
    make_dirty(sql, "B", dial_status="Calling", reserved=1)
    response = push({"leads": [lead("A"), lead("B"), lead("C")]})
    statuses = [(e["oli_id"], e["status"]) for e in response.get_json()["leads"]]
    assert statuses == [("A", "updated"), ("B", "skipped_in_flight"), ("C", "inserted")]


def test_same_oli_id_twice_in_a_batch_is_applied_in_order(push, sql):
    response = push({"leads": [lead("DUP", client_name="First"), lead("DUP", client_name="Second")]})
    first, second = response.get_json()["leads"]
    assert (first["status"], second["status"]) == ("inserted", "updated")
    assert first["data_id"] != second["data_id"]
    row = sql.lead("DUP")
    assert row["client_name"] == "Second" and row["data_id"] == second["data_id"]


@pytest.mark.clock
def test_callback_priority_with_time_becomes_callback(push, sql):
    response = push(lead("CB", priority_id=1, callback_scheduled_at="2026-11-25 11:30:00"))
    [entry] = response.get_json()["leads"]
    assert entry["callback_scheduled_at"] == "2026-11-25 11:30:00"
    row = sql.lead("CB")
    assert row["dial_status"] == "Callback"
    assert row["callback_scheduled_at"] == datetime(2026, 11, 25, 11, 30)
    assert row["next_retry_at"] is None


def test_callback_priority_without_time_is_pending(push, sql):
    push(lead("CB", priority_id=1))
    row = sql.lead("CB")
    assert row["dial_status"] == "Pending" and row["callback_scheduled_at"] is None


def test_null_callback_time_is_the_same_as_omitting_it(push, sql):
    response = push(lead("CB", priority_id=2, callback_scheduled_at=None))
    assert response.status_code == 201 and response.get_json()["leads"][0]["callback_scheduled_at"] is None
    assert sql.lead("CB")["dial_status"] == "Pending"


@pytest.mark.clock
def test_callback_time_is_echoed_exactly_as_sent_and_stored_in_db_timezone(push, sql, tz):
    sent = "2026-11-25T15:00:00+05:30"
    [entry] = push(lead("CB", priority_id=1, callback_scheduled_at=sent)).get_json()["leads"]
    assert entry["callback_scheduled_at"] == sent
    expected = datetime(2026, 11, 25, 9, 30, tzinfo=timezone.utc).astimezone(tz).replace(tzinfo=None)
    assert sql.lead("CB")["callback_scheduled_at"] == expected


@pytest.mark.clock
def test_past_callback_time_is_accepted(push, sql):
    assert push(lead("CB", priority_id=1, callback_scheduled_at="2020-01-01 08:00")).status_code == 201
    assert sql.lead("CB")["callback_scheduled_at"] == datetime(2020, 1, 1, 8, 0)


def test_callback_time_on_a_non_callback_priority_is_rejected(push, sql):
    response = push(lead("CB", priority_id=2, callback_scheduled_at="2026-11-25 11:30"))
    assert errors_of(response) == {("callback_scheduled_at", "callback_scheduled_at is only allowed for callback priorities")}
    assert sql("SELECT * FROM sales_master") == []


@pytest.mark.parametrize("value", ["2026-11-25", "", "tomorrow", "2026-02-30 10:00", "25/11/2026 10:00", 1764064800])
def test_bad_callback_times_are_rejected(push, value):
    assert fields_of(push(lead("CB", priority_id=1, callback_scheduled_at=value))) == {"callback_scheduled_at"}


def test_final_disposal_priority_is_rejected(push):
    assert fields_of(push(lead(priority_id=3))) == {"priority_id"}


def test_priority_equal_to_disposed_priority_id_is_rejected(push, sql):
    sql("INSERT INTO sales_priorities (id, name, is_callback, is_active) VALUES (7, 'Closed', 0, 1)")
    sql("UPDATE sales_dialer_config SET disposed_priority_id = 7")
    assert fields_of(push(lead(priority_id=7))) == {"priority_id"}
    assert push(lead(priority_id=3)).status_code == 201


@pytest.mark.parametrize("priority_id", [99, 0, -1])
def test_unknown_priority_is_rejected(push, priority_id):
    assert errors_of(push(lead(priority_id=priority_id))) == {("priority_id", "unknown priority_id")}


def test_inactive_priority_is_unknown(push, sql):
    sql("UPDATE sales_priorities SET is_active = 0 WHERE id = 2")
    assert errors_of(push(lead(priority_id=2))) == {("priority_id", "unknown priority_id")}


def test_a_new_callback_priority_takes_a_callback_time(push, sql):
    sql("INSERT INTO sales_priorities (id, name, is_callback, is_active) VALUES (4, 'Hot callback', 1, 1)")
    assert push(lead("CB", priority_id=4, callback_scheduled_at="2026-11-25 11:30")).status_code == 201
    assert sql.lead("CB")["dial_status"] == "Callback"


@pytest.mark.parametrize("value", ["2", True, 2.5, None])
def test_priority_must_be_a_json_integer(push, value):
    assert fields_of(push(lead(priority_id=value))) == {"priority_id"}


def test_an_integer_sent_with_a_zero_fraction_is_that_integer(push, sql):
    """Issue #66: JSON Schema's `integer`, which the OpenAPI document says, takes 2.0."""
    assert push(lead("F", priority_id=2.0, phone_number=9876543210.0)).status_code == 201
    assert (sql.lead("F")["priority_id"], sql.lead("F")["phone_number"]) == (2, "9876543210")


@pytest.mark.parametrize("sent, stored", [
    ("+91 98765 43210", "919876543210"),
    ("098765-43210", "09876543210"),
    ("(415) 555-0134", "4155550134"),
    ("+44 20 7946 0958", "442079460958"),
    (9876543210, "9876543210"),
    ("123456789012345", "123456789012345"),
])
def test_phone_number_is_stored_as_digits(push, sql, sent, stored):
    assert push(lead("P", phone_number=sent)).status_code == 201
    assert sql.lead("P")["phone_number"] == stored


@pytest.mark.parametrize("value", ["12345 6789", "1234567890123456", "", "no digits", True, ["9876543210"], 98765.4321])
def test_bad_phone_numbers_are_rejected(push, value):
    response = push(lead(phone_number=value))
    assert fields_of(response) == {"phone_number"}


def test_phone_message_states_the_digit_range(push):
    [(field, message)] = errors_of(push(lead(phone_number="12345")))
    assert field == "phone_number" and "10-15 digits" in message


@pytest.mark.parametrize("field, ok, bad", [
    ("oli_id", "x" * 100, "x" * 101),
    ("oli_id", "प" * 100, ""),
    ("client_name", "த" * 150, "த" * 151),
    ("client_name", "🙂" * 150, ""),
])
def test_lengths_are_counted_in_characters(push, sql, field, ok, bad):
    assert push(lead(**{field: ok})).status_code == 201
    assert fields_of(push(lead(**{field: bad}))) == {field}


@pytest.mark.parametrize("field", ["oli_id", "phone_number", "client_name", "form_type", "priority_id"])
def test_required_fields(push, field):
    body = lead()
    del body[field]
    assert fields_of(push(body)) == {field}


@pytest.mark.parametrize("extra", ["data_id", "agent_id", "dial_status", "call_count"])
def test_extra_fields_are_rejected_at_their_path(push, sql, extra):
    assert errors_of(push(lead(**{extra: "x"}))) == {(extra, "unknown field")}
    response = push({"leads": [lead("A"), lead("B", **{extra: 1})]})
    assert errors_of(response) == {(f"leads[1].{extra}", "unknown field")}
    assert sql("SELECT * FROM sales_master") == []


def test_unknown_key_beside_leads_is_rejected(push):
    assert errors_of(push({"leads": [lead()], "source": "crm"})) == {("source", "unknown field")}


def test_one_bad_lead_rejects_the_whole_batch(push, sql):
    batch = {"leads": [lead(f"L{i}") for i in range(10)]}
    batch["leads"][7]["phone_number"] = "123"
    response = push(batch)
    assert fields_of(response) == {"leads[7].phone_number"}
    assert sql("SELECT * FROM sales_master") == []


def test_every_error_of_a_batch_is_reported(push):
    batch = {"leads": [lead("A", phone_number="1"), lead("B"), lead("C", priority_id=3, client_name="")]}
    assert fields_of(push(batch)) == {"leads[0].phone_number", "leads[2].priority_id", "leads[2].client_name"}


@pytest.mark.parametrize("leads", [[], [lead(f"L{i}") for i in range(501)], "nope", [1]])
def test_batch_size_and_shape(push, leads):
    fields = fields_of(push({"leads": leads}))
    assert fields <= {"leads", "leads[0]"} and fields


def test_batch_of_500_is_accepted(push, sql):
    response = push({"leads": [lead(f"L{i:03d}") for i in range(500)]})
    assert response.status_code == 201 and len(response.get_json()["leads"]) == 500
    assert sql.one("SELECT COUNT(*) AS n FROM sales_master")["n"] == 500


@pytest.mark.parametrize("body", ['[{"oli_id": "A"}]', '"lead"', "42", "null"])
def test_a_body_that_is_not_an_object_fails_validation(client, auth, body):
    response = client.post("/api/leads", data=body, headers=auth)
    assert response.status_code == 400 and response.get_json()["error"] == "validation_failed"


@pytest.mark.clock
# Dial-state reset, next_retry_at: NULL inside working hours (09:00-21:00), otherwise the next work_start.
@pytest.mark.parametrize("now, expected", [
    (datetime(2026, 11, 21, 10, 0), None),
    (datetime(2026, 11, 21, 9, 0), None),
    (datetime(2026, 11, 21, 20, 59, 59), None),
    (datetime(2026, 11, 21, 21, 0), datetime(2026, 11, 22, 9, 0)),
    (datetime(2026, 11, 21, 23, 30), datetime(2026, 11, 22, 9, 0)),
    (datetime(2026, 11, 21, 6, 15), datetime(2026, 11, 21, 9, 0)),
])
def test_next_retry_at_follows_the_work_window(push, sql, frozen_clock, now, expected):
    frozen_clock(now)
    push(lead("W"))
    assert sql.lead("W")["next_retry_at"] == expected
    make_dirty(sql, "W")
    push(lead("W"))
    assert sql.lead("W")["next_retry_at"] == expected


@pytest.mark.clock
def test_callbacks_wait_on_their_time_not_the_work_window(push, sql, frozen_clock):
    frozen_clock(datetime(2026, 11, 21, 23, 0))
    push(lead("CB", priority_id=1, callback_scheduled_at="2026-11-22 07:00"))
    assert sql.lead("CB")["next_retry_at"] is None


@pytest.mark.clock
def test_work_window_comes_from_the_dialer_config(push, sql, frozen_clock):
    sql("UPDATE sales_dialer_config SET work_start = '07:30:00', work_end = '12:00:00'")
    frozen_clock(datetime(2026, 11, 21, 13, 0))
    push(lead("W"))
    assert sql.lead("W")["next_retry_at"] == datetime(2026, 11, 22, 7, 30)


@pytest.mark.clock
def test_times_are_wall_clock_in_db_timezone(database_url, sql, auth, frozen_clock):
    from conftest import make_app

    app = make_app(database_url, DB_TIMEZONE="Asia/Kolkata")
    client = app.test_client()
    # 04:00 UTC is 09:30 in Kolkata: inside the window there, although 04:00 is outside it.
    frozen_clock(datetime(2026, 11, 21, 4, 0, tzinfo=timezone.utc))
    client.post("/api/leads", json=lead("TZ"), headers=auth)
    row = sql.lead("TZ")
    assert row["next_retry_at"] is None and row["created_at"] == datetime(2026, 11, 21, 9, 30)
    client.post("/api/leads", json=lead("TZ2", priority_id=1, callback_scheduled_at="2026-11-25T10:00:00Z"), headers=auth)
    assert sql.lead("TZ2")["callback_scheduled_at"] == datetime(2026, 11, 25, 15, 30)
    client.post("/api/leads", json=lead("TZ3", priority_id=1, callback_scheduled_at="2026-11-25 10:00"), headers=auth)
    assert sql.lead("TZ3")["callback_scheduled_at"] == datetime(2026, 11, 25, 10, 0)


@pytest.mark.parametrize("field", ["oli_id", "client_name", "form_type"])
def test_lone_surrogates_are_refused_not_stored(client, auth, sql, field):
    body = json.dumps(lead("SUR-1")).replace(f'"{field}": "', f'"{field}": "\\ud800', 1)
    response = client.post("/api/leads", data=body, headers=auth)
    assert response.status_code == 400
    assert {d["field"] for d in response.get_json()["details"]} == {field}
    assert sql("SELECT * FROM sales_master") == []


def test_a_lone_surrogate_key_is_reported_at_its_path(client, auth, sql):
    # The error body echoes the key; it cannot be written as UTF-8, so it goes back as the escape it came as.
    body = json.dumps(lead("SUR-2")).replace('"oli_id"', '"\\ud800": 1, "oli_id"', 1)
    response = client.post("/api/leads", data=body, headers=auth)
    assert response.status_code == 400 and b'"\\ud800"' in response.data
    assert {(d["field"], d["message"]) for d in response.get_json()["details"]} == {("\ud800", "unknown field")}
    assert sql("SELECT * FROM sales_master") == []


def test_responses_are_utf8_json_in_field_order(push):
    response = push(lead("प्रिया-1", client_name="प्रिया"))
    assert response.status_code == 201 and response.mimetype == "application/json"
    assert '"oli_id":"प्रिया-1"'.encode() in response.data
    assert list(response.get_json()["leads"][0]) == ["oli_id", "status", "data_id", "callback_scheduled_at"]
