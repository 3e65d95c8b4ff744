"""Where a customer is: the region a lead's calling rules are read for.

A lead's region is, in this order of preference:
1. `region`, the CRM's own (ISO 3166-2, `US-LA`; or a country's alpha-2 code, `GB`), pushed with
   the lead;
2. the state of its `postal_code` (a US ZIP code, by its first three digits: ZIP3_STATES);
3. the state(s) of its phone number's area code (us_area_codes.py, the contact caps' table; a code
   in two states gives both), or for a number outside the US its country.

`place(lead, number)` answers (regions, source), source being "region", "postal_code" or
"area_code". A region the CRM names moves the customer's local time too: the calling window and
the state's hours are read in that state's zones (STATE_ZONES), not in the number's, since a
customer who moved keeps their number.
"""

import phonenumbers

from dialerapi.rules.compliance import phones
from dialerapi.rules.compliance.us_area_codes import AREA_CODES

REGION = "region"
POSTAL_CODE = "postal_code"
AREA_CODE = "area_code"

# The IANA zones of each state (and DC): a state across two zones is held to the window both share.
STATE_ZONES = {
    "AK": ("America/Adak", "America/Anchorage"), "AL": ("America/Chicago",), "AR": ("America/Chicago",),
    "AZ": ("America/Phoenix",), "CA": ("America/Los_Angeles",), "CO": ("America/Denver",),
    "CT": ("America/New_York",), "DC": ("America/New_York",), "DE": ("America/New_York",),
    "FL": ("America/Chicago", "America/New_York"), "GA": ("America/New_York",), "HI": ("Pacific/Honolulu",),
    "IA": ("America/Chicago",), "ID": ("America/Boise", "America/Los_Angeles"),
    "IL": ("America/Chicago",), "IN": ("America/Chicago", "America/Indiana/Indianapolis"),
    "KS": ("America/Chicago", "America/Denver"), "KY": ("America/Chicago", "America/New_York"),
    "LA": ("America/Chicago",), "MA": ("America/New_York",), "MD": ("America/New_York",),
    "ME": ("America/New_York",), "MI": ("America/Detroit", "America/Menominee"), "MN": ("America/Chicago",),
    "MO": ("America/Chicago",), "MS": ("America/Chicago",), "MT": ("America/Denver",),
    "NC": ("America/New_York",), "ND": ("America/Chicago", "America/Denver"),
    "NE": ("America/Chicago", "America/Denver"), "NH": ("America/New_York",), "NJ": ("America/New_York",),
    "NM": ("America/Denver",), "NV": ("America/Los_Angeles",), "NY": ("America/New_York",),
    "OH": ("America/New_York",), "OK": ("America/Chicago",), "OR": ("America/Boise", "America/Los_Angeles"),
    "PA": ("America/New_York",), "RI": ("America/New_York",), "SC": ("America/New_York",),
    "SD": ("America/Chicago", "America/Denver"), "TN": ("America/Chicago", "America/New_York"),
    "TX": ("America/Chicago", "America/Denver"), "UT": ("America/Denver",), "VA": ("America/New_York",),
    "VT": ("America/New_York",), "WA": ("America/Los_Angeles",), "WI": ("America/Chicago",),
    "WV": ("America/New_York",), "WY": ("America/Denver",),
}

# ZIP code prefixes (first three digits, inclusive ranges) of each state, from the USPS's
# sectional centers; military (AA, AE, AP) and territories' prefixes place no state.
_ZIP3_RANGES = (
    (5, 5, "NY"), (10, 27, "MA"), (28, 29, "RI"), (30, 38, "NH"), (39, 49, "ME"), (50, 54, "VT"),
    (55, 55, "MA"), (56, 59, "VT"), (60, 69, "CT"), (70, 89, "NJ"), (100, 149, "NY"), (150, 196, "PA"),
    (197, 199, "DE"), (200, 205, "DC"), (206, 219, "MD"), (220, 246, "VA"), (247, 268, "WV"),
    (270, 289, "NC"), (290, 299, "SC"), (300, 319, "GA"), (320, 339, "FL"), (341, 349, "FL"),
    (350, 369, "AL"), (370, 385, "TN"), (386, 397, "MS"), (398, 399, "GA"), (400, 427, "KY"),
    (430, 459, "OH"), (460, 479, "IN"), (480, 499, "MI"), (500, 528, "IA"), (530, 549, "WI"),
    (550, 567, "MN"), (569, 569, "DC"), (570, 577, "SD"), (580, 588, "ND"), (590, 599, "MT"),
    (600, 629, "IL"), (630, 658, "MO"), (660, 679, "KS"), (680, 693, "NE"), (700, 714, "LA"),
    (716, 729, "AR"), (730, 732, "OK"), (733, 733, "TX"), (734, 749, "OK"), (750, 799, "TX"),
    (800, 816, "CO"), (820, 831, "WY"), (832, 838, "ID"), (840, 847, "UT"), (850, 865, "AZ"),
    (870, 884, "NM"), (885, 885, "TX"), (889, 898, "NV"), (900, 961, "CA"), (967, 968, "HI"),
    (970, 979, "OR"), (980, 994, "WA"), (995, 999, "AK"),
)
ZIP3_STATES = {prefix: state for low, high, state in _ZIP3_RANGES for prefix in range(low, high + 1)}
US_STATES = frozenset(STATE_ZONES)
# Every region a lead may name, exactly as written (upper case): the states as US-XX, and the
# countries phonenumbers knows.
REGIONS = tuple(sorted({f"US-{state}" for state in US_STATES} | set(phonenumbers.SUPPORTED_REGIONS)))
KNOWN_REGIONS = frozenset(REGIONS)


class UnknownPlace(ValueError):
    """A region or postal code that names no place these tables know; the message says which."""


def check_region(text):
    """`text` as a region: `US-XX` with a US state code, or a country's ISO 3166 alpha-2 code.
    Returns it upper-cased; raises UnknownPlace."""
    region = str(text).strip().upper()
    if region in KNOWN_REGIONS:
        return region
    raise UnknownPlace(f"{text!r} is no region: a US state as US-XX (US-LA), or a country's alpha-2 code (GB)")


def postal_region(postal_code):
    """The region (`US-XX`) of a US ZIP code (`70112` or `70112-1234`), or None when its prefix
    places no state (military, territories, unassigned)."""
    digits = str(postal_code).strip()[:5]
    if len(digits) != 5 or not digits.isdigit():
        return None
    state = ZIP3_STATES.get(int(digits[:3]))
    return f"US-{state}" if state else None


def regions_of(number):
    """The regions number `number` (E.164 digits, an int) is in: its country, and for a US number
    its state by area code (`US-FL`; both states of a code that lies in two). A
    frozenset, empty when phonenumbers cannot place it."""
    parsed = phones.parse_e164(number)
    return frozenset() if parsed is None else number_regions(number, phonenumbers.region_code_for_number(parsed))


def number_regions(number, country):
    """regions_of a number (E.164 digits) whose `country` is known (phones.reading): no parsing."""
    found = {country} if country else set()
    if country == "US":  # +1 and the area code's three digits
        found.update(f"US-{state}" for state in AREA_CODES.get(int(str(number)[1:4]), ()))
    return frozenset(found)


def place(region, postal_code, number, country=None):
    """(regions, source) of a lead: its CRM `region` when given, else its `postal_code`'s state when
    that places one, else the regions of its number (E.164 digits or None; its `country` when the
    caller read it, else the number is read again) by area code: a US number's states (without the
    bare `US`), another's country. Regions are a sorted tuple, () when nothing places the customer."""
    if region:
        return (region,), REGION
    if postal_code:
        found = postal_region(postal_code)
        if found:
            return (found,), POSTAL_CODE
    if number is None:
        found = frozenset()
    else:
        found = regions_of(number) if country is None else number_regions(number, country)
    states = sorted(name for name in found if "-" in name)
    return tuple(states or sorted(found)), AREA_CODE


def zones_of(region):
    """The IANA zones of a US state region (`US-LA`), () for another."""
    country, _, state = region.partition("-")
    return STATE_ZONES.get(state, ()) if country == "US" else ()
