"""The shipped table of US state calling rules held to the rules each row cites (issue #68 item 1;
docs/compliance/state-rules.md). Each case restates its statute's words and checks the table's row
at the edges they name: the first and last minute of a day's hours, a Sunday, a legal holiday of
the `holidays` package's subdivision, and the weekend rule that moves a holiday. Pure functions:
no database.
"""

from datetime import date, datetime, time
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from dialerapi.rules.compliance import calling_rules, places, state_table
from dialerapi.rules.config.dialer import DialerConfig, Restriction

CHICAGO, NEW_YORK, DENVER = ZoneInfo("America/Chicago"), ZoneInfo("America/New_York"), ZoneInfo("America/Denver")
EVERY_RULE = tuple(rule.name for rule in state_table.RULES)


def config(*names, restrictions=()):
    return DialerConfig(isMaintainance=False, outbound_obey_work_hours=False, retry_pattern=(), retry_seconds=0,
                        max_tries=1, work_start=time(9), work_end=time(21), disposed_priority_id=3,
                        calling_rules=names or EVERY_RULE, restrictions=restrictions)


def held(state, local, consent=None, kind=calling_rules.PROGRESSIVE, settings=None):
    """The reason (or None) a customer in `state` is held at naive `local` time, their state's zone."""
    region = f"US-{state}"
    zones = places.STATE_ZONES[state][:1]
    names = calling_rules.profile(zones, (region,), consent)
    moment = local.replace(tzinfo=ZoneInfo(zones[0]))
    found = calling_rules.held(names, moment, settings or config(), kind, ZoneInfo("UTC"))
    return found and found.reason


# (state, statute's words, [(local time, reason or None)]): each row at the edges its statute names.
# 2026-11-23 is a Monday, 2026-11-28 a Saturday, 2026-11-29 a Sunday.
HOURS = [
    ("AL", "not before 8 a.m. or after 8 p.m.; not on Sunday", [
        (datetime(2026, 11, 23, 7, 59), "state_hours"), (datetime(2026, 11, 23, 8, 0), None),
        (datetime(2026, 11, 23, 19, 59), None), (datetime(2026, 11, 23, 20, 0), "state_hours"),
        (datetime(2026, 11, 28, 12, 0), None), (datetime(2026, 11, 29, 12, 0), "state_sunday")]),
    ("LA", "8:00 A.M. to 8:00 P.M. Monday through Saturday; none on Sunday", [
        (datetime(2026, 11, 28, 8, 0), None), (datetime(2026, 11, 28, 20, 0), "state_hours"),
        (datetime(2026, 11, 29, 10, 0), "state_sunday")]),
    ("MS", "8 a.m. to 8 p.m.; not on Sunday", [
        (datetime(2026, 11, 23, 7, 59), "state_hours"), (datetime(2026, 11, 29, 10, 0), "state_sunday")]),
    ("TX", "9 a.m. to 9 p.m. Monday to Saturday; noon to 9 p.m. Sunday", [
        (datetime(2026, 11, 28, 8, 59), "state_hours"), (datetime(2026, 11, 28, 9, 0), None),
        (datetime(2026, 11, 29, 11, 59), "state_hours"), (datetime(2026, 11, 29, 12, 0), None),
        (datetime(2026, 11, 29, 20, 59), None), (datetime(2026, 11, 29, 21, 0), "state_hours")]),
    ("KY", "not before 10 a.m. or after 9 p.m.", [
        (datetime(2026, 11, 23, 9, 59), "state_hours"), (datetime(2026, 11, 23, 10, 0), None),
        (datetime(2026, 11, 23, 21, 0), "state_hours")]),
    ("CT", "not before 9 a.m. or after 9 p.m.", [
        (datetime(2026, 11, 23, 8, 59), "state_hours"), (datetime(2026, 11, 23, 9, 0), None)]),
    ("FL", "not before 8 a.m. or after 8 p.m.", [
        (datetime(2026, 11, 23, 8, 0), None), (datetime(2026, 11, 23, 20, 0), "state_hours")]),
    ("OK", "not before 8 a.m. or after 8 p.m.", [
        (datetime(2026, 11, 23, 19, 59), None), (datetime(2026, 11, 23, 20, 0), "state_hours")]),
    ("MA", "not before 8 a.m. or after 8 p.m.", [
        (datetime(2026, 11, 23, 7, 59), "state_hours"), (datetime(2026, 11, 23, 20, 0), "state_hours")]),
    ("RI", "9 a.m. to 6 p.m. weekdays, 10 a.m. to 5 p.m. Saturday, none on Sunday", [
        (datetime(2026, 11, 23, 17, 59), None), (datetime(2026, 11, 23, 18, 0), "state_hours"),
        (datetime(2026, 11, 28, 9, 59), "state_hours"), (datetime(2026, 11, 28, 16, 59), None),
        (datetime(2026, 11, 28, 17, 0), "state_hours"), (datetime(2026, 11, 29, 12, 0), "state_sunday")]),
    ("UT", "8 a.m. to 9 p.m.", [
        (datetime(2026, 11, 23, 20, 59), None), (datetime(2026, 11, 23, 21, 0), "state_hours"),
        (datetime(2026, 11, 29, 12, 0), None)]),
    ("NY", "the TCPA's 8 a.m. to 9 p.m. (no state row)", [
        (datetime(2026, 11, 23, 7, 59), "state_hours"), (datetime(2026, 11, 23, 8, 0), None),
        (datetime(2026, 11, 23, 20, 59), None), (datetime(2026, 11, 23, 21, 0), "state_hours")]),
]


@pytest.mark.parametrize("state, words, cases", HOURS, ids=[row[0] for row in HOURS])
def test_each_rows_hours_and_sunday_are_its_statutes(state, words, cases):
    # A manual redial: Florida's consent rule (its own test below) holds automated claims only.
    assert [(local, held(state, local, kind=calling_rules.REDIAL)) for local, _ in cases] == cases, words


# (state, date, reason): the holidays the `holidays` package gives each state, with its weekend rule.
HOLIDAYS = [
    ("AL", date(2026, 12, 25), "state_holiday"),   # Christmas, a Friday
    ("AL", date(2027, 12, 24), "state_holiday"),   # Christmas 2027 is a Saturday: kept the Friday before
    ("AL", date(2026, 4, 27), "state_holiday"),    # Confederate Memorial Day (Alabama's own)
    ("LA", date(2026, 2, 17), "state_holiday"),    # Mardi Gras (Louisiana's own)
    ("LA", date(2026, 12, 25), "state_holiday"),
    ("MS", date(2027, 7, 5), "state_holiday"),     # Independence Day 2027 is a Sunday: kept Monday
    ("MS", date(2026, 7, 3), None),                # 2026's is a Saturday: Mississippi moves only Sunday's
    ("RI", date(2026, 8, 10), "state_holiday"),    # Victory Day (Rhode Island's own)
    ("UT", date(2026, 7, 24), "state_holiday"),    # Pioneer Day (Utah's own)
    ("UT", date(2027, 12, 24), "state_holiday"),   # Saturday's Christmas, kept Friday
    ("TX", date(2026, 12, 25), None),              # Texas bars no holiday
    ("FL", date(2026, 12, 25), None),
]


@pytest.mark.parametrize("state, day, reason", HOLIDAYS, ids=[f"{s}-{d}" for s, d, _ in HOLIDAYS])
def test_barred_holidays_come_from_the_holidays_package_with_each_states_weekend_rule(state, day, reason):
    assert held(state, datetime.combine(day, time(12, 0)), kind=calling_rules.REDIAL) == reason


def test_the_holiday_bars_the_whole_local_day_from_midnight_to_midnight():
    assert held("LA", datetime(2026, 12, 24, 19, 59)) is None
    assert held("LA", datetime(2026, 12, 25, 0, 0)) == "state_holiday"
    assert held("LA", datetime(2026, 12, 25, 23, 59)) == "state_holiday"


@pytest.mark.parametrize("state, consent, reason", [
    ("LA", "express", None), ("LA", "written", None), ("LA", "ebr", "state_holiday"), ("LA", None, "state_holiday"),
    ("UT", "express", None), ("AL", "written", "state_holiday"), ("MS", "express", "state_holiday"),
])
def test_louisiana_and_utah_exempt_consented_calls_from_their_holiday_bans(state, consent, reason):
    christmas = datetime(2026, 12, 25, 12, 0)
    assert held(state, christmas, consent) == reason


@pytest.mark.parametrize("consent, kind, reason", [
    (None, calling_rules.PROGRESSIVE, "consent_required"), (None, calling_rules.PREDICTIVE, "consent_required"),
    ("express", calling_rules.PREDICTIVE, "consent_required"), ("written", calling_rules.PREDICTIVE, None),
    (None, calling_rules.REDIAL, None), (None, calling_rules.INBOUND, None),
])
def test_florida_asks_written_consent_of_every_automated_claim_and_leaves_the_manual_redial(consent, kind, reason):
    assert held("FL", datetime(2026, 11, 23, 12, 0), consent, kind) == reason


def test_a_row_holds_only_when_enabled_and_only_its_own_state():
    sunday = datetime(2026, 11, 29, 12, 0)
    assert held("AL", sunday, settings=config("us-la")) is None
    assert held("LA", sunday, settings=config("us-la")) == "state_sunday"
    assert held("LA", sunday, settings=config("us-al")) is None


def test_a_restriction_holds_its_region_while_it_lasts():
    utc = ZoneInfo("UTC")
    ban = Restriction(1, "US-LA", datetime(2026, 9, 1, 5, 0), datetime(2026, 9, 3, 5, 0), "state of emergency")
    settings = config("us-federal", restrictions=(ban,))
    assert held("LA", datetime(2026, 9, 1, 10, 0), settings=settings) == "emergency"
    assert held("TX", datetime(2026, 9, 1, 10, 0), settings=settings) is None
    assert held("LA", datetime(2026, 9, 3, 10, 0), settings=settings) is None
    whole_country = Restriction(2, "US", datetime(2026, 9, 1), datetime(2026, 9, 2), "national day of mourning")
    assert held("TX", datetime(2026, 9, 1, 10, 0), settings=config(restrictions=(whole_country,))) == "emergency"
    assert ban.active(datetime(2026, 9, 3, 4, 59, tzinfo=utc).replace(tzinfo=None))


def test_next_open_is_the_first_lawful_minute():
    settings = config()
    names = calling_rules.profile(("America/Chicago",), ("US-LA",), None)
    window = lambda at: True  # noqa: E731 - the calling window is not obeyed here

    def next_open(local):
        found = calling_rules.next_open(names, local.replace(tzinfo=CHICAGO), settings, calling_rules.PROGRESSIVE,
                                        ZoneInfo("UTC"), window)
        return found.astimezone(CHICAGO).replace(tzinfo=None)

    assert next_open(datetime(2026, 12, 24, 20, 30)) == datetime(2026, 12, 26, 8, 0)  # Christmas, then Saturday
    assert next_open(datetime(2026, 11, 28, 21, 0)) == datetime(2026, 11, 30, 8, 0)   # past Sunday
    assert next_open(datetime(2026, 11, 30, 7, 0)) == datetime(2026, 11, 30, 8, 0)


def test_every_row_names_its_source_and_when_it_was_checked():
    rows = state_table.listing({"us-la"})
    assert len({row["name"] for row in rows}) == len(rows) == len(state_table.RULES)
    assert all(row["source"] and row["checked"] for row in rows)
    assert [row["name"] for row in rows if row["enabled"]] == ["us-la"]
    assert {row["region"] for row in rows} >= {"US", "US-AL", "US-LA", "US-MS", "US-RI", "US-UT", "US-TX"}


@pytest.mark.parametrize("text, region", [
    ("70112", "US-LA"), ("70112-1234", "US-LA"), ("35203", "US-AL"), ("39201", "US-MS"), ("02903", "US-RI"),
    ("84101", "US-UT"), ("73301", "US-TX"), ("10001", "US-NY"), ("96910", None), ("ABCDE", None),
])
def test_a_zip_code_places_the_customer_in_its_state(text, region):
    assert places.postal_region(text) == region


def test_the_crms_region_wins_over_the_postal_code_and_the_area_code():
    new_york = 12125550100
    assert places.place("US-LA", "35203", new_york) == (("US-LA",), "region")
    assert places.place(None, "35203", new_york) == (("US-AL",), "postal_code")
    assert places.place(None, None, new_york) == (("US-NY",), "area_code")
    assert places.place(None, "96910", new_york) == (("US-NY",), "area_code")  # a ZIP that places no state


def test_the_docs_table_is_the_shipped_table():
    """docs/compliance/state-rules.md shows each row as the service holds it."""
    text = (Path(__file__).resolve().parent.parent / "docs" / "compliance" / "state-rules.md").read_text()
    table = text.split("<!-- state-rules-table -->")[1].split("<!-- /state-rules-table -->")[0]
    documented = [[cell.strip() for cell in line.strip("|").split("|")] for line in table.strip().splitlines()[2:]]
    shipped = [[f"`{row['name']}`", row["region"], row["hours"]["monday"], row["hours"]["saturday"],
                row["hours"]["sunday"] or "no calls", "yes" if row["holidays"] else "no", row["checked"]]
               for row in state_table.listing(set())]
    assert [cells[:6] + cells[8:] for cells in documented] == shipped
    for cells, row in zip(documented, state_table.RULES):
        assert all(part.strip() in row.source for part in cells[7].split(";")), row.name
