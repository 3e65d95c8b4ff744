"""The batch fast path of lead validation (schemas.plain_lead) against LeadSchema, the definition of a
valid lead (lead-intake-api.md "Lead (master row)", "Limits"; decisions.md D4).

plain_lead may decline any lead (LeadSchema then loads it), but what it accepts must be exactly what
LeadSchema accepts, loaded to the same dict; a rule it let through would let a batch write a lead
that one-by-one pushes refuse.
"""

import itertools
import random
from zoneinfo import ZoneInfo

import pytest
from marshmallow import ValidationError

from dialerapi.sides.crm import schemas
from test_push import errors_of, lead

PRIORITIES = {
    1: {"is_active": True, "is_callback": True, "is_disposed": False},
    2: {"is_active": True, "is_callback": False, "is_disposed": False},
    3: {"is_active": True, "is_callback": False, "is_disposed": True},
    5: {"is_active": False, "is_callback": False, "is_disposed": False},
}
MISSING = object()

# Every field with values that are valid, invalid, or on the edge of a rule.
VALUES = {
    "oli_id": ["OLI-1", "x" * 100, "x" * 101, "", "प" * 100, "प" * 101, "\ud800", 7, None, ["a"], MISSING],
    "phone_number": ["+91 98765 43210", "(415) 555-0134", 9876543210, "123456789012345", "1234567890123456",
                     "12345 6789", "", "no digits", True, False, 98765.4321, ["9876543210"], None, 10**14, -9876543210,
                     "٩٨٧٦٥٤٣٢١٠٩", MISSING],
    "client_name": ["Priya Sharma", "த" * 150, "த" * 151, "🙂" * 150, "", "a\udfffb", 3, None, MISSING],
    "form_type": ["home_loan", "f" * 64, "f" * 65, "", {"a": 1}, None, MISSING],
    "priority_id": [2, 1, 3, 5, 99, 0, -1, "2", True, 2.0, None, MISSING],
    "callback_scheduled_at": [MISSING, None, "2026-11-25 11:30", "2026-11-25", "", 1764064800],
    "data_id": [MISSING, "x"],
    "agent_id": [MISSING, 5],
}


def variant(**changes):
    body = lead()
    body.update(changes)
    return {key: value for key, value in body.items() if value is not MISSING}


def single_changes():
    for field, values in VALUES.items():
        for value in values:
            yield variant(**{field: value})


def random_combinations(count, seed):
    rng = random.Random(seed)
    for _ in range(count):
        yield variant(**{field: rng.choice(values) for field, values in VALUES.items() if rng.random() < 0.5})


def schema_load(body):
    with schemas.RequestContext({"tz": ZoneInfo("America/New_York"), "priorities": PRIORITIES}):
        try:
            return schemas.LeadSchema().load(body)
        except ValidationError:
            return None


@pytest.mark.parametrize("body", itertools.chain(single_changes(), random_combinations(400, seed=12)),
                         ids=lambda body: repr(body)[:60])
def test_the_fast_path_accepts_only_what_lead_schema_accepts_and_loads_it_the_same(body):
    fast = schemas.plain_lead(body, PRIORITIES)
    if fast is not None:
        assert fast == schema_load(body)


def test_a_plain_crm_lead_takes_the_fast_path():
    # Not a rule: without this the fast path could decline everything and batches would cost 10x.
    for body in (lead(), variant(phone_number=9876543210), variant(callback_scheduled_at=None, priority_id=1)):
        assert schemas.plain_lead(body, PRIORITIES) == schema_load(body)


@pytest.mark.parametrize("field, value", [
    (field, value) for field, values in VALUES.items() for value in values
    if value is not MISSING and schema_load(variant(**{field: value})) is None
])
def test_every_invalid_value_rejects_a_batch_at_its_path(client, auth, sql, field, value):
    # Through HTTP on the real catalog (seed priorities 1 callback, 2 plain, 3 Final Disposal).
    sql("INSERT INTO sales_priorities (id, name, is_callback, is_active) VALUES (5, 'Old', 0, 0)")
    batch = {"leads": [lead("A"), variant(**{"oli_id": "B", field: value}), lead("C")]}
    response = client.post("/api/leads", json=batch, headers=auth)
    fields = {path for path, _ in errors_of(response)}
    assert fields and all(path.startswith("leads[1]") for path in fields)
    assert sql("SELECT oli_id FROM sales_master") == []
