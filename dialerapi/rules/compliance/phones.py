"""Phone numbers as the do-not-call list and the calling window see them, through
Google's libphonenumber (the `phonenumbers` package).

- `e164(text, region)`: the number's E.164 form as an integer of its digits (+91 98765 43210 is
  919876543210), the one form the list stores and a lead is compared in. `region` (ISO 3166
  alpha-2, sales_dialer_config.phone_default_region) reads national numbers: with IN,
  `098765-43210`, `9876543210` and `+91 98765 43210` are one number. A lead's phone_number is
  stored as digits only (decisions.md D4: `+91 98765-43210` becomes `919876543210`), so digits
  that are not a valid number of `region` are read once more as if they began with `+` (a country
  code): `12125550100` is +1 212 555 0100 whatever the region.
- `zones(number)`: the IANA zones the number may ring in, from phonenumbers' time-zone data;
  () when it has none (the caller falls back to DB_TIMEZONE). `facts(text, region)` gives both from
  one reading of the text; nothing is cached per number, so a worker's memory does not
  grow with the numbers it has seen (an lru_cache of 65,536 zone sets held 14 MB).
- `window_open(zone_names, moment, start, end, fallback)`: whether the aware instant `moment`
  falls inside [start, end) of local time in every one of the zones (a number spanning zones gets
  the window all of them share); daylight saving comes from each zone's own rules.
"""

import functools
from datetime import timezone
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import phonenumbers
from phonenumbers import timezone as phone_zones

UNKNOWN_ZONE = "Etc/Unknown"
UNKNOWN_TYPE = phonenumbers.PhoneNumberType.UNKNOWN


class InvalidNumber(ValueError):
    """Text that is no phone number phonenumbers can read (too short, letters, no country code)."""


def _parse(text, region):
    try:
        return phonenumbers.parse(text, region)
    except phonenumbers.NumberParseException:
        return None


def _read(text, region):
    """phonenumbers' reading of `text` as `e164` describes it, and its number type (UNKNOWN when it
    is not valid). Raises InvalidNumber.

    phonenumbers' is_valid_number is its number type not being UNKNOWN; the type is worked out
    once here and serves both the validity and the zones (it was worked out twice)."""
    text = str(text).strip()
    number = _parse(text, region)
    kind = _type(number)
    if kind == UNKNOWN_TYPE and text.isdigit():
        international = _parse("+" + text, None)
        international_kind = _type(international)
        if international_kind != UNKNOWN_TYPE:
            number, kind = international, international_kind
    if number is None or not number.national_number:
        raise InvalidNumber(text)
    return number, kind


def _type(number):
    return UNKNOWN_TYPE if number is None else phonenumbers.number_type(number)


def _digits(number):
    return int(f"{number.country_code}{number.national_number}")


def e164(text, region):
    """The E.164 digits of `text` as an int, read with default region `region`.

    A valid number of `region` (or with its own country code) wins; digits-only text that is not
    valid is read again with a leading `+`; failing both, the number as first read (a possible but
    unassigned number still compares equal to itself). Raises InvalidNumber when nothing parses.
    """
    return _digits(_read(text, region)[0])


def facts(text, region):
    """(e164(text, region), zones of that number) from one reading of `text` (a push
    parses a new or changed number once). Raises InvalidNumber."""
    return reading(text, region)[:2]


def reading(text, region):
    """facts(text, region) and the number's country (ISO 3166 alpha-2, None when phonenumbers
    places it in none), from the same one reading (its region). Raises InvalidNumber."""
    number, kind = _read(text, region)
    return _digits(number), _zones_of(number, kind), phonenumbers.region_code_for_number(number)


def format_e164(digits):
    """`+` and the digits: the text the list is exported and answered in."""
    return f"+{digits}"


def parse_e164(number):
    """phonenumbers' PhoneNumber of `number` (E.164 digits, an int), or None when it does not parse."""
    return _parse(format_e164(number), None)


def zones(number):
    """The IANA zone names number `number` (E.164 digits, an int) may ring in, sorted; () for none."""
    parsed = parse_e164(number)
    return () if parsed is None else _zones_of(parsed, _type(parsed))


def _zones_of(parsed, kind):
    """phone_zones.time_zones_for_number of `parsed`, whose number type `kind` is known: a valid
    number of a geographical type by its prefix, another valid one by its country."""
    if kind == UNKNOWN_TYPE:
        return ()
    if phonenumbers.is_number_type_geographical(kind, parsed.country_code):
        names = phone_zones.time_zones_for_geographical_number(parsed)
    else:
        names = phone_zones._country_level_time_zones_for_number(parsed)
    return tuple(sorted({name for name in names if name != UNKNOWN_ZONE}))


@functools.lru_cache(maxsize=1024)
def _zone(name):
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return None


def window_open(zone_names, moment, start, end, fallback):
    """True when aware instant `moment` is inside [start, end) (datetime.time, local) in every zone
    of `zone_names`, or in `fallback` (a ZoneInfo, DB_TIMEZONE) when there are none or none is
    known. A window whose end is not after its start crosses midnight (21:00-09:00)."""
    moment = moment.astimezone(timezone.utc)
    return all(_inside(moment.astimezone(zone).time(), start, end) for zone in local_zones(zone_names, fallback))


def local_zones(zone_names, fallback):
    """The ZoneInfos of `zone_names` that exist, or [fallback] (DB_TIMEZONE) when none does: a
    calling profile's other names (its regions, its consent) are no zones and are left out."""
    return [zone for zone in map(_zone, zone_names) if zone is not None] or [fallback]


def _inside(local, start, end):
    if start < end:
        return start <= local < end
    return local >= start or local < end
