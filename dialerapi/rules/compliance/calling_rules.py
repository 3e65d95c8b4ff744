"""When may this person be called: the state rules, declared emergencies, consent.

What a lead may be held by, beyond the calling window (rules.compliance.claim_checks) and the do-not-call list,
is decided by its calling profile: the call zone a push works out for it (dialerapi_call_zones),
whose names are its IANA zones, its regions (`@US-LA`, rules.compliance.places) and its consent type
(`+written`). Every lead with one profile is held by the same rules at the same moment, so the
claim's candidate reads leave held leads out by the ids of the profiles open now (compliance.
open_zone_ids), at a cost that does not grow with the leads held.

`held(names, moment, config, kind, fallback)` says what holds a profile at an instant, in this
order: a restriction (EMERGENCY: `dialerapi restrictions add`, a declared state of emergency or a
one-off ban of a region), then each enabled row of the state table (rules.compliance.state_table) that applies
to one of the profile's regions: STATE_HOLIDAY, STATE_SUNDAY, STATE_HOURS (in every zone of the
profile's), then CONSENT_REQUIRED for the claims the row names. `kind` is the claim's: PROGRESSIVE,
PREDICTIVE, REDIAL (an agent's manual call: only a campaign's consent_required `all` holds it) or
INBOUND (never held).

Settings live with the config (rules.config.dialer): `config.calling_rules`, the enabled rows'
names, and `config.restrictions` (Restriction), read by every claim in its own transaction, so a
switch or a restriction holds at the next claim on every host.
"""

from dataclasses import dataclass
from datetime import datetime, time, timedelta, timezone

from dialerapi.plumbing.db import queries
from dialerapi.rules.compliance import phones, places, state_table
from dialerapi.rules.core.kinds import CALL_CONSENT, ClaimKind, ConsentFor, ConsentType

CONSENT_TYPES = tuple(consent.value for consent in ConsentType)
EMERGENCY = "emergency"
STATE_HOURS = "state_hours"
STATE_SUNDAY = "state_sunday"
STATE_HOLIDAY = "state_holiday"
CONSENT_REQUIRED = "consent_required"
REASONS = (EMERGENCY, STATE_HOLIDAY, STATE_SUNDAY, STATE_HOURS, CONSENT_REQUIRED)
PROGRESSIVE, PREDICTIVE, REDIAL, INBOUND = ClaimKind
# The claims each consent rule (state_table.StateRule.consent_for, a campaign's consent_required)
# holds; a campaign's leads without consent under ALL are not called at all.
CONSENT_KINDS = {ConsentFor.PREDICTIVE: (PREDICTIVE,), ConsentFor.AUTOMATED: (PROGRESSIVE, PREDICTIVE),
                 ConsentFor.ALL: (PROGRESSIVE, PREDICTIVE, REDIAL)}
CAMPAIGN = "campaign"

REGION_MARK, CONSENT_MARK = "@", "+"
# How far ahead `next_open` looks for the first lawful moment of a profile, in days (a state's
# hours and holidays open again within days; a restriction's end is tried wherever it falls).
LAWFUL_SEARCH_DAYS = 15


@dataclass(frozen=True)
class Held:
    """What holds a lead: `reason` (one of the module's reasons), `rule` (the table row's name, or
    `restriction N`), `source` (the row's statute, or the restriction's note), `note` (the
    holiday's name, or the restriction's note)."""

    reason: str
    rule: str
    source: str
    note: str = None

    def figures(self):
        return {"rule": self.rule, "source": self.source, "note": self.note}


def profile(zone_names, regions, consent_type):
    """The names of a calling profile: IANA zones, then `@` regions, then `+` the consent type."""
    return (tuple(zone_names) + tuple(REGION_MARK + region for region in regions)
            + ((CONSENT_MARK + consent_type,) if consent_type else ()))


def split(names):
    """(IANA zones, regions, consent type or None) of a profile's names."""
    zones, regions, consent = [], [], None
    for name in names:
        if name.startswith(REGION_MARK):
            regions.append(name[1:])
        elif name.startswith(CONSENT_MARK):
            consent = name[1:]
        else:
            zones.append(name)
    return tuple(zones), tuple(regions), consent


def active(config):
    """Whether any calling rule, restriction or campaign consent requirement is on: without one,
    held() never holds a lead."""
    return bool(config.calling_rules or config.restrictions or config.consent_required)


def held(names, moment, config, kind, fallback):
    """The Held that keeps a profile (`names`) from a claim of `kind` at aware instant `moment`, or
    None. `fallback`: the zone of a profile without one (DB_TIMEZONE)."""
    if kind == INBOUND or not active(config):
        return None
    zones, regions, consent = split(names)
    utc = moment.astimezone(timezone.utc).replace(tzinfo=None)
    for restriction in config.restrictions:
        if restriction.active(utc) and any(restriction.applies_to(region) for region in regions):
            return Held(EMERGENCY, f"restriction {restriction.id}", restriction.note, restriction.note)
    rows = [state_table.BY_NAME[name] for name in config.calling_rules if name in state_table.BY_NAME]
    rows = [row for row in rows if any(row.applies_to(region) for region in regions)]
    if config.consent_required and kind in CONSENT_KINDS[config.consent_required] and consent not in CALL_CONSENT:
        return Held(CONSENT_REQUIRED, CAMPAIGN, f"the campaign's consent_required: {config.consent_required}")
    if not rows:
        return None
    locals_ = [moment.astimezone(zone) for zone in phones.local_zones(zones, fallback)]
    # A day's ban is told before the hours: its next_at is the same, and its reason says more.
    for check in (_holiday, _sunday, _hours):
        for row in rows:
            for local in locals_:
                found = check(row, local, consent)
                if found is not None:
                    return found
    for row in rows:
        if row.consent_for and kind in CONSENT_KINDS[row.consent_for] and consent not in row.consent_types:
            return Held(CONSENT_REQUIRED, row.name, row.source)
    return None


def _holiday(row, local, consent):
    title = state_table.holiday_on(row, local.date())
    if title is not None and consent not in row.holiday_consent:
        return Held(STATE_HOLIDAY, row.name, row.source, title)
    return None


def _sunday(row, local, consent):
    if row.hours[local.weekday()] is None:
        return Held(STATE_SUNDAY if local.weekday() == 6 else STATE_HOURS, row.name, row.source)
    return None


def _hours(row, local, consent):
    hours = row.hours[local.weekday()]
    if hours is not None and not hours[0] <= local.time() < hours[1]:
        return Held(STATE_HOURS, row.name, row.source)
    return None


def next_open(names, moment, config, kind, fallback, window_open):
    """The first aware instant (UTC) at or after `moment` when neither held() nor the calling window
    (`window_open(instant)`, compliance's) holds the profile, within LAWFUL_SEARCH_DAYS; None when none
    comes. Openings fall at a local midnight, a window's or a row's start, or a restriction's end,
    so only those instants are tried."""
    zones = phones.local_zones(split(names)[0], fallback)
    starts = {time(0), config.calling_window_start} | {
        hours[0] for name in config.calling_rules if name in state_table.BY_NAME
        for hours in state_table.BY_NAME[name].hours if hours is not None}
    tries = {moment.astimezone(timezone.utc)}
    for zone in zones:
        first = moment.astimezone(zone).date()
        for offset in range(LAWFUL_SEARCH_DAYS):
            day = first + timedelta(days=offset)
            tries.update(datetime.combine(day, start, zone).astimezone(timezone.utc) for start in starts)
    tries.update(restriction.ends_at.replace(tzinfo=timezone.utc) for restriction in config.restrictions)
    for instant in sorted(at for at in tries if at >= moment):
        if window_open(instant) and held(names, instant, config, kind, fallback) is None:
            return instant
    return None


class InvalidRestriction(ValueError):
    """A restriction that cannot be stored; the message says what is wrong."""


def listing(conn):
    """state_table.listing of the table with each row's switch, as dialerapi_calling_rules has it."""
    return state_table.listing({row["name"] for row in queries.calling_rules_enabled(conn)})


def set_enabled(conn, name, on, now):
    """Turn the table's row `name` on or off from the next claim on (`now`: wall-clock DB_TIMEZONE).
    Raises state_table.UnknownRule."""
    state_table.rule(name)
    if on:
        queries.enable_calling_rule(conn, name=name, now=now)
    else:
        queries.disable_calling_rule(conn, name=name)


def add_restriction(conn, region, starts_at, ends_at, note, now):
    """Ban calls to `region` (checked by places.check_region) from `starts_at` to `ends_at` (aware
    instants, cut to whole minutes) with `note`; returns its id. Raises InvalidRestriction."""
    try:
        region = places.check_region(region)
    except places.UnknownPlace as problem:
        raise InvalidRestriction(str(problem)) from None
    starts_at, ends_at = (moment.astimezone(timezone.utc).replace(tzinfo=None, second=0, microsecond=0)
                          for moment in (starts_at, ends_at))
    if ends_at <= starts_at:
        raise InvalidRestriction("--to must be after --from")
    if not note or len(note) > 255:
        raise InvalidRestriction("--note: say why, in 1 to 255 characters")
    queries.add_restriction(conn, region=region, starts_at=starts_at, ends_at=ends_at, note=note, created_at=now)
    return queries.last_insert_id(conn)


def restrictions(conn):
    """Every restriction: {id, region, starts_at, ends_at (naive UTC), note, created_at}, by start."""
    return [dict(row) for row in queries.restrictions(conn)]


def remove_restriction(conn, restriction_id):
    """Remove restriction `restriction_id`; False when there is none such."""
    return bool(queries.remove_restriction(conn, id=restriction_id))
