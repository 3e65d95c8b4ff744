"""The document's patterns and types say what the fields accept (issue #66 item 3): every string a
pattern of web.fields admits is accepted by its field, and the values the issue found refused
though the document allowed them are now either accepted or outside the document. make faults
(tests/faults/test_contract.py) holds every operation to its document with schemathesis; this is
the fields' part, fast, in make test. lead-intake-api.md "Resources and their fields"; decisions.md
D2 (times), D4 (types)."""

import re
from datetime import date

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from marshmallow import ValidationError

from conftest import TZ
from dialerapi.plumbing.clock import parse_wall_clock
from dialerapi.web import fields
from dialerapi.web.fields import DAY_PATTERN, OLI_ID_PATTERN, PHONE_TEXT_PATTERN, WALL_CLOCK_PATTERN

SEEDED = settings(max_examples=200, deadline=None, derandomize=True)


@SEEDED
@given(st.from_regex(WALL_CLOCK_PATTERN, fullmatch=True))
def test_every_time_the_pattern_admits_is_accepted(text):
    parse_wall_clock(text, TZ)


@SEEDED
@given(st.from_regex(DAY_PATTERN, fullmatch=True))
def test_every_day_the_pattern_admits_is_a_real_day(text):
    date.fromisoformat(text)


@SEEDED
@given(st.from_regex(OLI_ID_PATTERN, fullmatch=True).filter(lambda text: len(text) <= 100))
def test_every_oli_id_the_pattern_admits_is_accepted(text):
    assert fields.OliId().deserialize(text) == text


@SEEDED
@given(st.from_regex(PHONE_TEXT_PATTERN, fullmatch=True))
def test_every_phone_text_the_pattern_admits_is_accepted(text):
    assert fields.PhoneNumber().deserialize(text) == re.sub("[^0-9]", "", text)


@pytest.mark.parametrize("text", ["0000-00-00T00:00", "00000-00-00 10:00", "2026-02-30 10:00", "2023-02-29 10:00",
                                  "1900-02-29 10:00", "2026-11-21 24:00", "0999-12-31 10:00", "9999-01-01 10:00",
                                  " 2026-11-21 10:00", "2026-11-21"])
def test_a_time_the_service_refuses_is_outside_the_pattern(text):
    assert not re.search(WALL_CLOCK_PATTERN, text)
    if text.strip() == text:
        with pytest.raises(ValueError):
            parse_wall_clock(text, TZ)


@pytest.mark.parametrize("text", [" OLI-1", "OLI-1 ", "\x1cOLI-1", "OLI-1\x85", ""])
def test_an_oli_id_the_service_refuses_is_outside_the_pattern(text):
    assert not re.search(OLI_ID_PATTERN, text)
    with pytest.raises(ValidationError):
        fields.OliId().deserialize(text)


def test_an_integer_field_takes_a_number_without_a_fraction_as_json_schema_does():
    field = fields.StrictInteger()
    assert field.deserialize(501.0) == 501 and type(field.deserialize(501.0)) is int
    for refused in (501.5, "501", True, float("inf")):
        with pytest.raises(ValidationError):
            field.deserialize(refused)
    assert fields.PhoneNumber().deserialize(919876543210.0) == "919876543210"
