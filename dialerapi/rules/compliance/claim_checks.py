"""Who may be dialed now: the do-not-call list and the customer's own calling window.

The rules act at claim; a push answers as the specification says. Two checks, in this order:

1. do_not_call: the lead's phone (rules/phones.e164 of its phone_number, read with
   sales_dialer_config.phone_default_region) is on dialerapi_dnc. No claim in any mode reserves it;
   an inbound claim may, when dnc_allow_inbound = 1 (a customer who calls in may be answered).
2. outside_calling_window: with obey_calling_window = 1, an outbound claim (progressive,
   predictive, redial) only while the customer's local time is inside
   calling_window_start..calling_window_end in every zone the number may ring in
   (phones.window_open; a number with no zone: DB_TIMEZONE). An inbound call is never held to it.
   A lead outside its window simply is not claimed, so a retry or callback that falls due outside
   it waits for the next opening.

`refusal` is the check a claim makes on the row it locked, from phone_number itself: it is what
holds the rules. The columns a push writes (phone_e164, do_not_call, call_zone_id) let the
candidate query leave listed and closed leads out inside its index; when they disagree with the
number (a row pushed by the previous release, or by an engine's own SQL) `refusal` corrects them.
"""

import hashlib
import threading
from datetime import datetime, timedelta

from dialerapi.plumbing import clock
from dialerapi.plumbing.db import queries
from dialerapi.rules.compliance import calling_rules, do_not_call, phones, places
from dialerapi.rules.events import lead_events

DO_NOT_CALL = "do_not_call"
OUTSIDE_CALLING_WINDOW = "outside_calling_window"
INBOUND = "inbound"
UNKNOWN_ZONE_ID = 0
EPOCH = datetime(1970, 1, 1)
# What a lead's calling profile is worked out from, besides its phone.
PLACE_COLUMNS = ("region", "postal_code", "consent_type")
PROFILE_FIELDS = ("phone_number",) + PLACE_COLUMNS

_zones_lock = threading.Lock()
# {call_zone id: zone names} as this process last read dialerapi_call_zones. Its rows never change
# once written, so the copy only lacks zones added since; a claim that finds nothing reads the table
# again before it answers None (in a process serving several databases, as the simulator's runs do,
# that read is what makes the copy that database's).
_zones = {}
# Bumped at each read of the zones: open_zone_ids' answers are kept per (minute, settings, read).
_generation = 0
_open_memo = {}


def number_of(phone_number, config):
    """E.164 digits (int) of a stored phone_number, or None when it is no number phonenumbers reads."""
    try:
        return phones.e164(phone_number, config.phone_default_region)
    except phones.InvalidNumber:
        return None


def _key(zone_names):
    return hashlib.sha1(";".join(zone_names).encode("ascii")).hexdigest()


def zone_ids(conn, zone_sets):
    """{zone names tuple: dialerapi_call_zones id} for every set in `zone_sets`, adding the new ones.
    Read from the table, not the process's copy: a push must write the id the table has now."""
    wanted = {_key(names): names for names in set(zone_sets)}
    found = {row["zones_key"]: row["id"] for row in queries.call_zones_by_key(conn, zones_keys=sorted(wanted))}
    for key in wanted.keys() - found.keys():
        queries.insert_call_zone(conn, zones_key=key, zones=";".join(wanted[key]))
        found[key] = queries.call_zone_id(conn, zones_key=key)
    return {wanted[key]: zone_id for key, zone_id in found.items()}


def _known_zones(conn, reload=False):
    global _zones, _generation
    with _zones_lock:
        cached = _zones
    if cached and not reload:
        return cached
    rows = queries.call_zones(conn)
    table = {row["id"]: tuple(name for name in row["zones"].split(";") if name) for row in rows}
    with _zones_lock:
        _zones = table
        _generation += 1
    return table


def open_zone_ids(conn, now, tz, config, reload=False, kind=calling_rules.PROGRESSIVE):
    """The call_zone ids open at `now` (wall-clock in `tz`) to a claim of `kind`, sorted, with 0 (not
    yet worked out: the claim checks such a lead itself), by the zones this process knows of
    (`reload`: read them again first); None when neither the calling window nor a calling rule
    (rules.compliance.calling_rules) holds any lead. A zone is open when its window is, and no enabled state
    rule or restriction holds its profile. Worked out once a minute per setting: every
    opening falls on a whole minute (a window with seconds is worked out every time)."""
    if not config.obey_calling_window and not calling_rules.active(config):
        return None
    moment = clock.instant(now, tz)
    table, generation = _known_zones(conn, reload), _generation
    whole = not (config.calling_window_start.second or config.calling_window_end.second)
    key = (moment.replace(second=0, microsecond=0, tzinfo=None) - moment.utcoffset(), str(tz),
           config.obey_calling_window, config.calling_window_start, config.calling_window_end,
           config.calling_rules, config.restrictions, config.consent_required, kind, generation)
    found = _open_memo.get(key) if whole else None
    if found is None:
        found = (UNKNOWN_ZONE_ID,) + tuple(sorted(
            zone_id for zone_id, names in table.items() if zone_open(names, moment, tz, config, kind)))
        if whole:
            if len(_open_memo) > 256:
                _open_memo.clear()
            _open_memo[key] = found
    return found


def zone_open(names, moment, tz, config, kind):
    """Whether a profile (`names`) is open at aware instant `moment` to a claim of `kind`: inside its
    calling window (when obeyed) and held by no calling rule."""
    return _window_reason(names, moment, tz, config, kind) is None and \
        calling_rules.held(names, moment, config, kind, tz) is None


def _window_reason(names, moment, tz, config, kind):
    if config.obey_calling_window and kind != INBOUND and not phones.window_open(
            calling_rules.split(names)[0], moment, config.calling_window_start, config.calling_window_end, tz):
        return OUTSIDE_CALLING_WINDOW
    return None


def open_zones(conn, wanted, now, tz, config, reload=False, kind=calling_rules.PROGRESSIVE):
    """{form_type: open_zone_ids by its campaign's calling window (config.of)} of the
    form_types of `wanted` ((form_type, priorities) pairs), worked out once per window."""
    by_window, zones = {}, {}
    for form_type, _ in wanted:
        own = config.of(form_type)
        window = (own.obey_calling_window, own.calling_window_start, own.calling_window_end, own.consent_required)
        if window not in by_window:
            by_window[window] = open_zone_ids(conn, now, tz, own, reload and not by_window, kind)
        zones[form_type] = by_window[window]
    return zones


def refusal(conn, row, now, tz, config, call_type=None, kind=calling_rules.PROGRESSIVE):
    """Why the locked sales_master `row` may not be claimed now, or None; see verdict."""
    return verdict(conn, row, now, tz, config, call_type, kind)[0]


def verdict(conn, row, now, tz, config, call_type=None, kind=calling_rules.PROGRESSIVE):
    """(reason, figures) of why the locked sales_master `row` may not be claimed now, or (None, {}).

    DO_NOT_CALL when its phone is listed (inbound: only without dnc_allow_inbound);
    a calling rule's reason (rules.compliance.calling_rules: emergency, state_holiday, state_sunday,
    state_hours, consent_required; figures {rule, source, note, next_at}) for a claim of `kind`
    (a `call_type` redial or inbound claim is of that kind); OUTSIDE_CALLING_WINDOW when the window
    is obeyed and the customer's local time is outside it (never for inbound; figures {next_at}).
    next_at is 'YYYY-MM-DD HH:MM:SS' DB_TIMEZONE, the next moment nothing of these holds the lead, or
    None. `row` carries `listed` (the list's answer for its stored phone_e164) and the invisible
    region, postal_code and consent_type when read by the claim's lock queries; they are taken out
    of the row, which is then a sales_master row again (as SELECT * reads it).
    Corrects the row's phone_e164, do_not_call and call_zone_id (its calling profile) when they
    disagree with its phone_number, region, postal_code and consent_type; a lead whose mark changes
    so is told to the CRM (lead.do_not_call or lead.do_not_call_removed, source `claim`:
    never a change without its event).
    """
    kind = {INBOUND: calling_rules.INBOUND, "redial": calling_rules.REDIAL}.get(call_type, kind)
    place = {name: row.pop(name, None) for name in PLACE_COLUMNS}
    number, names, _ = lead_profile({**row, **place}, config)
    stored = row.get("phone_e164")
    stored_listed = row.pop("listed", None)
    if number is not None and stored == number and stored_listed is not None:
        listed = bool(stored_listed)
    else:
        listed = number is not None and bool(queries.number_listed(conn, phone=number))
    if stored != number or bool(row.get("do_not_call")) != listed or _stale_profile(conn, row, names):
        zone_id = zone_ids(conn, [names])[names]
        queries.set_phone_facts(conn, id=row["id"], phone_e164=number, do_not_call=listed, call_zone_id=zone_id)
        marked = bool(row.get("do_not_call")) != listed
        row.update(phone_e164=number, do_not_call=int(listed), call_zone_id=zone_id)
        if marked:
            lead_events.listed(conn, [row], now, do_not_call.CLAIM, on_list=listed)
    if listed and not (call_type == INBOUND and config.dnc_allow_inbound):
        return DO_NOT_CALL, {}
    moment = clock.instant(now, tz) if tz is not None else None
    if moment is None or kind == calling_rules.INBOUND:
        return None, {}
    held = calling_rules.held(names, moment, config, kind, tz)
    reason = held.reason if held is not None else _window_reason(names, moment, tz, config, kind)
    if reason is None:
        return None, {}
    figures = held.figures() if held is not None else {}
    return reason, {**figures, "next_at": next_at(names, moment, tz, config, kind)}


def next_at(names, moment, tz, config, kind=calling_rules.PROGRESSIVE):
    """'YYYY-MM-DD HH:MM:SS' DB_TIMEZONE: the first moment at or after aware `moment` at which the
    profile `names` is open (zone_open), or None within calling_rules.LAWFUL_SEARCH_DAYS."""
    found = calling_rules.next_open(names, moment, config, kind, tz,
                                    lambda at: _window_reason(names, at, tz, config, kind) is None)
    return None if found is None else clock.format_wall_clock(found.astimezone(tz).replace(tzinfo=None))


def _stale_profile(conn, row, names):
    zone_id = row.get("call_zone_id")
    known = _known_zones(conn)
    if zone_id not in known:
        known = _known_zones(conn, reload=True)
    return known.get(zone_id) != names


def lead_regions(conn, row):
    """The regions of the locked lead `row` (a sorted tuple, () when nothing places the customer) as
    its calling profile names them: the CRM's region, else its postal code's state, else its
    number's by area code (rules.compliance.places), read from its call_zone_id without reading the
    number again. verdict keeps that id current, so a claim asks after verdict."""
    zone_id = row.get("call_zone_id")
    names = _known_zones(conn).get(zone_id)
    if names is None:
        names = _known_zones(conn, reload=True).get(zone_id, ())
    return calling_rules.split(names)[1]


def lead_profile(lead, config):
    """(E.164 digits or None, calling profile names, place source) of a lead (a dict with
    phone_number and, when known, region, postal_code, consent_type): its IANA zones, regions
    (rules.compliance.places: the CRM's region or postal code, else the number's area code) and consent
    type. A region the CRM gave moves the zones to that state's."""
    number, zones, country = phone_facts(lead["phone_number"], config)
    regions, source = places.place(lead.get("region"), lead.get("postal_code"), number, country)
    if source != places.AREA_CODE:
        zones = tuple(sorted({zone for region in regions for zone in places.zones_of(region)})) or zones
    return number, calling_rules.profile(zones, regions, lead.get("consent_type")), source


def held_leads(conn, now, tz, config):
    """Unreserved leads in the claim's states (Pending, Callback, Abandoned, Not Connected, due or
    not) that each rule holds back now from a progressive claim: {"do_not_call": n,
    "outside_calling_window": n, and each calling rule's reason (rules.compliance.calling_rules): n, ...,
    "by_form_type": {form_type: {reason: n}} (per campaign, by its own settings)}, by the
    columns a push and a claim keep (a lead not yet worked out counts as lawful; a listed lead is
    counted once, under do_not_call). One statement over those leads."""
    table = _known_zones(conn, reload=True)
    moment = clock.instant(now, tz)
    held = dict.fromkeys((DO_NOT_CALL, OUTSIDE_CALLING_WINDOW, *calling_rules.REASONS), 0)
    by_form_type, reasons = {}, {}
    for row in queries.leads_by_phone_facts(conn):
        own = config.of(row["form_type"])
        if row["do_not_call"]:
            reason = DO_NOT_CALL
        elif row["call_zone_id"] not in table:
            continue
        else:
            key = (row["call_zone_id"], own.obey_calling_window, own.calling_window_start, own.calling_window_end)
            if key not in reasons:
                names = table[row["call_zone_id"]]
                found = calling_rules.held(names, moment, own, calling_rules.PROGRESSIVE, tz)
                reasons[key] = found.reason if found else _window_reason(names, moment, tz, own,
                                                                          calling_rules.PROGRESSIVE)
            reason = reasons[key]
        if reason is not None:
            held[reason] += row["n"]
            counts = by_form_type.setdefault(row["form_type"], {})
            counts[reason] = counts.get(reason, 0) + row["n"]
    return {**held, "by_form_type": by_form_type}


# The reasons a floor counts per form_type (count_held): the list's, the window's, each calling rule's.
HELD_REASONS = (DO_NOT_CALL, OUTSIDE_CALLING_WINDOW, *calling_rules.REASONS)


def count_held(conn, now, tz, config):
    """Count the leads each rule holds back now (held_leads, one statement over the claim states'
    leads) into dialerapi_held_counts, replacing the last count, for /engine/floor and the board
    (per reason per campaign) to read a few rows instead. Run once a minute by
    one process (upkeep.jobs.held_counts_tick). Returns {form_type: {reason: n}}."""
    by_form_type = held_leads(conn, now, tz, config)["by_form_type"]
    utc = clock.to_utc(now, tz).replace(microsecond=0)
    queries.clear_held_counts(conn)
    queries.add_held_counts(conn, [(form_type, reason, count, utc) for form_type, counts in by_form_type.items()
                                   for reason, count in counts.items()])
    queries.set_held_counted_at(conn, epoch=int((utc - EPOCH).total_seconds()))
    return by_form_type


def held_counts(conn):
    """The last count_held: ({form_type: {reason: n for every HELD_REASONS}}, when it was counted as
    ISO 8601 UTC, or None before the first count). A form_type nothing held is not a key."""
    counts = {}
    for row in queries.held_counts(conn):
        counts.setdefault(row["form_type"], dict.fromkeys(HELD_REASONS, 0))[row["reason"]] = int(row["leads"])
    epoch = queries.held_counted_at(conn)
    at = None if epoch is None else clock.format_utc(EPOCH + timedelta(seconds=int(epoch)))
    return counts, at


def work_out_leads(conn, config, max_rows=2000):
    """Work out phone_e164, do_not_call and call_zone_id of up to `max_rows` leads no push worked them
    out for (written before migration 0012, or by an engine's own SQL; live ones wait), as a push
    would, so the claim indexes leave listed and sleeping ones out. A lead whose phone a push
    changed meanwhile is left to that push, and so is one another transaction holds now (read with
    SKIP LOCKED: concurrent backfills take different leads). Returns how many were read; 0 when
    none is left that nobody holds."""
    leads = list(queries.leads_not_worked_out(conn, max_rows=max_rows))
    if leads:
        queries.set_worked_out_facts(conn, [(*facts, lead["id"], lead["phone_number"])
                                            for lead, facts in zip(leads, lead_facts(conn, leads, config))])
    return len(leads)


def lead_facts(conn, leads, config, stored=None):
    """For a push: per lead (dicts with oli_id, phone_number, form_type and, when pushed, region,
    postal_code, consent_type) the tuple (phone_e164, do_not_call, call_zone_id), in order. Two
    statements per batch: the list, the zone ids (none when every zone is known).

    `stored` ({oli_id: its sales_master row, with phone_number, phone_e164, call_zone_id, region,
    postal_code and consent_type}, as the push locked them): a lead whose phone_number and place
    and consent are the stored ones keeps its stored E.164 form and calling profile, worked out
    when first pushed; a new or changed one is read once for both (lead_profile).
    Whether a number is listed is read from the list every time: it changes without the lead.
    """
    stored = stored or {}
    numbers, zone_sets, known = [], [], {}
    for lead in leads:
        row = stored.get(lead["oli_id"]) if stored else None
        if row is not None and row["phone_e164"] is not None and row["call_zone_id"] is not None and all(
                row.get(name) == lead.get(name) for name in PROFILE_FIELDS):
            numbers.append(row["phone_e164"])
            zone_sets.append(None)
            known[len(numbers) - 1] = row["call_zone_id"]
            continue
        number, names, _ = lead_profile(lead, config.of(lead.get("form_type")))
        numbers.append(number)
        zone_sets.append(names)
    present = sorted({number for number in numbers if number is not None})
    listed = {row["phone"] for row in queries.listed_numbers(conn, phones=present)} if present else set()
    new_sets = [names for names in zone_sets if names is not None]
    ids = zone_ids(conn, new_sets) if new_sets else {}
    return [(number, number in listed, known[index] if names is None else ids[names])
            for index, (number, names) in enumerate(zip(numbers, zone_sets))]


def phone_facts(phone_number, config):
    """(E.164 digits or None, zone names, country or None) of a stored phone_number, from one
    reading of it; (None, (), None) when it is no number phonenumbers reads."""
    try:
        return phones.reading(phone_number, config.phone_default_region)
    except phones.InvalidNumber:
        return None, (), None
