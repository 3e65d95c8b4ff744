"""The floor's caller IDs (docs/operations/caller-ids.md; rules.caller_ids.numbers): a number is
E.164, checked with phonenumbers, placed as a lead's number is; in one or more pools; active,
flagged or retired; every change kept with its credential and told as a caller_id.* event."""

import json

import pytest

from dialerapi.rules.caller_ids import numbers


@pytest.mark.parametrize("text, digits, country, area_prefix, regions", [
    ("+19195550100", 19195550100, "US", "1919", ("US", "US-NC")),
    (" +1 (305) 555-0100 ", 13055550100, "US", "1305", ("US", "US-FL")),
    ("+442079460000", 442079460000, "GB", "4420", ("GB",)),
    ("+919876543210", 919876543210, "IN", None, ("IN",)),
])
def test_a_number_is_read_once_with_its_country_area_code_and_regions(text, digits, country, area_prefix, regions):
    assert numbers.read_number(text) == (digits, country, area_prefix, regions)


@pytest.mark.parametrize("text", ["9195550100", "+1919555", "+1 919 555 01000", "caller", "", "+0001234567"])
def test_a_number_not_in_e164_or_not_valid_is_refused_naming_number(text):
    with pytest.raises(numbers.InvalidCallerId) as refused:
        numbers.read_number(text)
    assert list(refused.value.messages) == ["number"]


def test_added_numbers_are_kept_with_their_pools_history_and_event(run, sql, now):
    added, created = run(numbers.add, "+19195550100", ["raleigh", "east"], now, "crm", note="bought 2026-11")
    assert created
    assert (added["number"], added["area_code"], added["regions"], added["pools"], added["state"]) == (
        "+19195550100", "919", ["US", "US-NC"], ["east", "raleigh"], "active")
    again, created = run(numbers.add, "+1 919 555 0100", ["other"], now, "crm")
    assert not created and again["pools"] == ["east", "raleigh"]
    shown = run(numbers.show, "+19195550100")
    assert [(change["action"], change["changed_by"]) for change in shown["history"]] == [("added", "crm")]
    events = sql("SELECT type, oli_id, body FROM dialerapi_lead_events ORDER BY id")
    assert [(event["type"], event["oli_id"]) for event in events] == [("caller_id.added", "")]
    assert json.loads(events[0]["body"])["number"] == "+19195550100"


def test_a_flagged_number_can_be_set_active_and_a_retired_one_never(run, sql, now):
    run(numbers.add, "+19195550100", ["raleigh"], now, "operator")
    flagged = run(numbers.change, "+19195550100", {"state": "flagged", "note": "Spam Likely on one carrier"}, now, "crm")
    assert flagged["state"] == "flagged" and flagged["release_after"] is None
    active = run(numbers.change, "+19195550100", {"state": "active", "daily_cap": 50, "pools": ["raleigh", "nc"]},
                 now, "operator")
    assert (active["state"], active["daily_cap"], active["pools"]) == ("active", 50, ["nc", "raleigh"])
    retired = run(numbers.change, "+19195550100", {"state": "retired"}, now, "operator")
    assert retired["state"] == "retired" and retired["release_after"] is not None
    with pytest.raises(numbers.InvalidCallerId) as refused:
        run(numbers.change, "+19195550100", {"state": "active"}, now, "operator")
    assert list(refused.value.messages) == ["state"]
    history = run(numbers.show, "+19195550100")["history"]
    assert [change["action"] for change in history] == ["retired", "updated", "flagged", "added"]
    assert history[2]["new"]["note"] == "Spam Likely on one carrier" and history[2]["changed_by"] == "crm"
    assert [row["type"] for row in sql("SELECT type FROM dialerapi_lead_events ORDER BY id")] == [
        "caller_id.added", "caller_id.flagged", "caller_id.updated", "caller_id.retired"]


@pytest.mark.parametrize("patch, field", [
    ({"state": "spam"}, "state"), ({"daily_cap": 0}, "daily_cap"), ({"daily_cap": True}, "daily_cap"),
    ({"note": "x" * 201}, "note"), ({"pools": []}, "pools"), ({"pools": ["Raleigh"]}, "pools"),
    ({"pools": [f"p{n}" for n in range(21)]}, "pools"), ({"colour": "red"}, "colour"),
])
def test_a_wrong_change_is_refused_naming_its_field_and_changes_nothing(run, now, patch, field):
    run(numbers.add, "+19195550100", ["raleigh"], now, "operator")
    with pytest.raises(numbers.InvalidCallerId) as refused:
        run(numbers.change, "+19195550100", patch, now, "operator")
    assert list(refused.value.messages) == [field]
    shown = run(numbers.show, "+19195550100")
    assert (shown["state"], shown["daily_cap"], shown["pools"], len(shown["history"])) == ("active", None, ["raleigh"], 1)


def test_an_unknown_number_is_named(run, now):
    with pytest.raises(numbers.UnknownCallerId, match=r"\+19195550199"):
        run(numbers.change, "+19195550199", {"state": "flagged"}, now, "operator")


def test_pages_of_numbers_by_pool_and_state(run, now):
    for n in range(5):
        run(numbers.add, f"+1919555010{n}", ["raleigh" if n % 2 else "east"], now, "operator")
    run(numbers.change, "+19195550103", {"state": "flagged"}, now, "operator")
    first, after = run(numbers.page, max_rows=2)
    assert [row["number"] for row in first] == ["+19195550100", "+19195550101"] and after == "+19195550101"
    rest, after = run(numbers.page, after=after, max_rows=10)
    assert [row["number"] for row in rest] == ["+19195550102", "+19195550103", "+19195550104"] and after is None
    raleigh, _ = run(numbers.page, pool="raleigh")
    assert [row["number"] for row in raleigh] == ["+19195550101", "+19195550103"]
    flagged, _ = run(numbers.page, state="flagged")
    assert [(row["number"], row["pools"]) for row in flagged] == [("+19195550103", ["raleigh"])]
