"""The shipped table of US calling rules (docs/compliance/state-rules.md).

Each row (StateRule) names its source and the date it was last checked. Rows are off until
enabled (`dialerapi rules enable NAME`, rules.compliance.calling_rules), like the contact caps' presets; the
enabled names are rows of dialerapi_calling_rules, read with the config by every claim.

A row holds, in the customer's local time (every zone the lead's region or number may ring in):
- `hours`: seven (start, end) pairs, Monday first, the day's calling window; None for a day on
  which no call may be made (a Sunday ban);
- `holidays`: whether the state's legal holidays are barred, computed for any year from the
  `holidays` package's subdivision of the state (never typed-in dates), with the state's own rule
  for a holiday on a weekend (`moved`: {weekday: days to the day that is barred too}; Alabama's
  Saturday holiday bars the Friday before, its Sunday holiday the Monday after);
- `holiday_consent`: the consent types (rules.consent) that exempt a call from the holiday ban;
- `consent_for` and `consent_types`: the claims (PREDICTIVE, or AUTOMATED: progressive too) that
  need one of those consent types; an agent's manual redial is never one of them.

"checked" is the date each row was last compared with its sources (the statute and the
compilations docs/compliance/state-rules.md lists); the law changes, and the table with it.
"""

import functools
from dataclasses import dataclass, field
from datetime import date, time, timedelta

import holidays

from dialerapi.rules.core.kinds import ConsentFor

PREDICTIVE, AUTOMATED = ConsentFor.PREDICTIVE, ConsentFor.AUTOMATED
CHECKED = date(2026, 11, 29)


def _week(weekdays, saturday=None, sunday=None):
    """Seven (start, end) pairs, Monday first: `weekdays` for Monday to Friday, then Saturday's and
    Sunday's (each the weekdays' unless given; None bans the day)."""
    return (weekdays,) * 5 + (weekdays if saturday is None else saturday,) + (
        (weekdays if sunday is None else sunday) if sunday is not False else None,)


def _hours(start, end):
    return time(start), time(end)


@dataclass(frozen=True)
class StateRule:
    """One row of the table: see the module's docstring for its fields. `region` is the state's
    ISO 3166-2 code (`US-LA`), or `US` for a rule of every state."""

    name: str
    region: str
    hours: tuple
    source: str
    holidays: bool = False
    moved: dict = field(default_factory=dict, hash=False, compare=False)
    holiday_consent: tuple = ()
    consent_for: str = None
    consent_types: tuple = ()
    checked: date = CHECKED

    @property
    def state(self):
        return self.region.partition("-")[2]

    def applies_to(self, region):
        """Whether this rule holds a customer in `region` (`US-LA`; a country's code)."""
        return region == self.region or (self.region == "US" and region.startswith("US-"))


SAT_TO_FRIDAY, SUN_TO_MONDAY = {5: -1}, {6: 1}

RULES = (
    StateRule("us-federal", "US", _week(_hours(8, 21)),
              "47 CFR 64.1200(c)(1) (TCPA): no telephone solicitation before 8 a.m. or after 9 p.m. local time"),
    StateRule("us-al", "US-AL", _week(_hours(8, 20), sunday=False),
              "Ala. Admin. Code r. 770-X-9-.04 (08:00-20:00, no Sundays, no state legal holidays); "
              "Ala. Code 1-3-8(a) (a Sunday holiday is kept Monday, a Saturday holiday Friday)",
              holidays=True, moved={**SAT_TO_FRIDAY, **SUN_TO_MONDAY}),
    StateRule("us-ct", "US-CT", _week(_hours(9, 21)),
              "Conn. Gen. Stat. 42-288a (as amended by Public Act 23-98): no telephonic sales call before 9 a.m. "
              "or after 9 p.m."),
    StateRule("us-fl", "US-FL", _week(_hours(8, 20)),
              "Fla. Stat. 501.616(6)(a) (08:00-20:00); Fla. Stat. 501.059(8)(a) (FTSA as amended 2021 and 2023: "
              "prior express written consent for a call made with an automated system that selects and dials)",
              consent_for=AUTOMATED, consent_types=("written",)),
    StateRule("us-ky", "US-KY", _week(_hours(10, 21)),
              "Ky. Rev. Stat. 367.46955(14): no telephone solicitation before 10 a.m. or after 9 p.m."),
    StateRule("us-la", "US-LA", _week(_hours(8, 20), sunday=False),
              "La. R.S. 45:811 and La. PSC General Order R-29617 V(A)(2) (08:00-20:00 Monday to Saturday, no "
              "Sundays, no legal holidays of La. R.S. 1:55); La. R.S. 45:816 (calls with prior consent exempt)",
              holidays=True, holiday_consent=("express", "written")),
    StateRule("us-ma", "US-MA", _week(_hours(8, 20)),
              "Mass. Gen. Laws ch. 159C, 3 and 201 CMR 12.02: no unsolicited telephonic sales call before 8 a.m. "
              "or after 8 p.m."),
    StateRule("us-ms", "US-MS", _week(_hours(8, 20), sunday=False),
              "Miss. Code Ann. 77-3-725 (08:00-20:00, no Sundays, no legal holidays); Miss. Code Ann. 3-3-7 "
              "(a Sunday holiday is kept Monday)",
              holidays=True, moved=SUN_TO_MONDAY),
    StateRule("us-ok", "US-OK", _week(_hours(8, 20)),
              "Okla. Stat. tit. 15, 775C.4 (Telephone Solicitation Act of 2022): 08:00-20:00"),
    StateRule("us-ri", "US-RI", _week(_hours(9, 18), saturday=_hours(10, 17), sunday=False),
              "R.I. Gen. Laws 5-61-3.6 and 5-61-2(9) (09:00-18:00 Monday to Friday, 10:00-17:00 Saturday, no "
              "Sundays or legal holidays); R.I. Gen. Laws 25-1-1 (a Sunday holiday is kept Monday)",
              holidays=True, moved=SUN_TO_MONDAY),
    StateRule("us-tx", "US-TX", _week(_hours(9, 21), sunday=_hours(12, 21)),
              "Tex. Bus. & Com. Code 301.051: 09:00-21:00 Monday to Saturday, 12:00-21:00 Sunday"),
    StateRule("us-ut", "US-UT", _week(_hours(8, 21)),
              "Utah Code 13-25a-103 (08:00-21:00, no legal holidays; calls with prior express consent exempt); "
              "Utah Code 63G-1-301 (a Sunday holiday is kept Monday, a Saturday holiday Friday)",
              holidays=True, moved={**SAT_TO_FRIDAY, **SUN_TO_MONDAY}, holiday_consent=("express", "written")),
)
BY_NAME = {rule.name: rule for rule in RULES}


class UnknownRule(LookupError):
    """No row of the table has this name."""

    def __str__(self):
        return f"no calling rule is named {self.args[0]!r}: `dialerapi rules list` shows them"


def rule(name):
    """The row named `name`. Raises UnknownRule."""
    try:
        return BY_NAME[name]
    except KeyError:
        raise UnknownRule(name) from None


@functools.lru_cache(maxsize=256)
def barred_days(name, year):
    """{date: holiday name} of the days row `name` bars in `year`: the state's legal holidays of the
    years around it (a holiday of 1 January on a Saturday bars 31 December), each on its own date
    and on the day its weekend rule moves it to."""
    row = BY_NAME[name]
    found = holidays.US(subdiv=row.state, years=(year - 1, year, year + 1), observed=False)
    days = {}
    for day, title in sorted(found.items()):
        for barred in (day, day + timedelta(days=row.moved.get(day.weekday(), 0))):
            if barred.year == year:
                days.setdefault(barred, title if barred == day else f"{title} (kept)")
    return days


def holiday_on(row, day):
    """The name of the holiday row `row` bars on `day` (a local date), or None."""
    return barred_days(row.name, day.year).get(day) if row.holidays else None


def listing(enabled):
    """Every row as a dict (name, region, enabled, hours by weekday, holidays, consent, source,
    checked), for `dialerapi rules list` and the docs; `enabled`: the names switched on."""
    weekdays = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
    return [{
        "name": row.name, "region": row.region, "enabled": row.name in enabled,
        "hours": {day: None if hours is None else f"{hours[0]:%H:%M}-{hours[1]:%H:%M}"
                  for day, hours in zip(weekdays, row.hours)},
        "holidays": row.holidays, "holiday_consent": list(row.holiday_consent),
        "consent_for": row.consent_for, "consent_types": list(row.consent_types),
        "source": row.source, "checked": row.checked.isoformat(),
    } for row in RULES]
