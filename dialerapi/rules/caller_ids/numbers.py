"""The floor's caller IDs: the numbers it owns and may present (docs/operations/caller-ids.md).

Presenting a number the floor does not own or may not use is unlawful (the Truth in Caller ID Act,
47 U.S.C. 227(e); STIR/SHAKEN attestation), so a number is presented only once an operator has
added it here. A number is written in E.164 (`+19195550100`) and checked with phonenumbers; its
country, area code (`area_prefix`: the E.164 digits through the area code, `1919`) and regions
(`US-NC`, as a lead's are worked out: rules.compliance.places) are worked out once, when it is
added. It is in one or more pools; its `state` is:

- active: presented while it is under its daily cap (its own `daily_cap`, else the floor's
  caller_id_daily_cap);
- flagged: not presented until it is set active again (a reputation feed said "Spam Likely");
- retired: never presented again; `release_after` (its last use + RELEASE_DAYS) says when the
  number may be given back to the carrier without a customer calling back a stranger.

Every change is kept (dialerapi_caller_id_changes: when, by which credential, old and new) and told
as a caller_id.* event (rules.events.lead_events) in its transaction. Functions take the connection
first and never commit; moments are naive UTC (decisions.md D2); `presented_day` is a calendar day.
"""

import json
from datetime import timedelta
from enum import StrEnum

import phonenumbers
from marshmallow import ValidationError

from dialerapi.plumbing import clock
from dialerapi.plumbing.db import queries
from dialerapi.rules.compliance import places
from dialerapi.rules.config.ranges import CALLER_ID_POOL
from dialerapi.rules.core import e164
from dialerapi.rules.events import lead_events

# A retired number's last caller may still call it back: it is kept this many days after its last use.
RELEASE_DAYS = 30
MAX_POOLS = 20
MAX_NOTE_CHARS = 200
MAX_DAILY_CAP = 10_000
HISTORY_ROWS = 50
PAGE_ROWS = 500
# A pool row's presented_rank is day_key(its day) + that day's count: above any count a day may hold.
RANK_DAY = 1_000_000


class State(StrEnum):
    ACTIVE = "active"
    FLAGGED = "flagged"
    RETIRED = "retired"


class InvalidCallerId(ValidationError):
    """A number or a change that cannot be stored: {field: [message]} in `messages` (marshmallow's
    shape, so the HTTP side answers it as any validation error: 400 validation_failed with
    details, decisions.md D3)."""

    def __init__(self, messages):
        super().__init__(messages)

    def __str__(self):
        return "; ".join(f"{name}: {' '.join(texts)}" for name, texts in sorted(self.messages.items()))


class UnknownCallerId(LookupError):
    """The floor has no such number (HTTP 404 `unknown_caller_id`)."""

    def __str__(self):
        return f"the floor has no caller ID {self.args[0]}: `dialerapi caller-ids list` shows them"


def read_number(text):
    """(E.164 digits as an int, country or None, area_prefix or None, regions as a sorted tuple) of
    `text`, a number in E.164 (a `+`, the country code, the national number). Raises
    InvalidCallerId naming `number`."""
    try:
        parsed = e164.parse(text)
    except ValueError as exc:
        raise InvalidCallerId({"number": [str(exc)]}) from None
    digits = e164.digits(parsed)
    country = phonenumbers.region_code_for_number(parsed)
    length = phonenumbers.length_of_geographical_area_code(parsed)
    national = phonenumbers.national_significant_number(parsed)
    area_prefix = f"{parsed.country_code}{national[:length]}" if length else None
    return digits, country, area_prefix, tuple(sorted(places.number_regions(digits, country)))


def day_key(day):
    """The least presented_rank of calendar day `day` (a date): a pool row ranked below it was last
    presented on an earlier day, so none today."""
    return day.toordinal() * RANK_DAY


def rank(row, today):
    """The presented_rank of the number `row` ({presented_day, presented_today}) for its pools' rows:
    its day's day_key plus that day's count; a number never presented ranks as none today."""
    if row["presented_day"] is None:
        return day_key(today)
    return day_key(row["presented_day"]) + row["presented_today"]


def region(regions):
    """The region a pool row keeps of a number's `regions` (a sorted tuple): its state (`US-NC`),
    else its country (`IN`), else ''; a claim's state tier matches it."""
    return regions[-1] if regions else ""


def check_pools(pools):
    """`pools` (a list of 1 to MAX_POOLS names) as a sorted tuple, or InvalidCallerId."""
    if not isinstance(pools, (list, tuple)) or not 1 <= len(pools) <= MAX_POOLS:
        raise InvalidCallerId({"pools": [f"must be a list of 1 to {MAX_POOLS} pool names"]})
    wrong = [name for name in pools if not isinstance(name, str) or not CALLER_ID_POOL.match(name)]
    if wrong:
        raise InvalidCallerId({"pools": ["a pool's name is 1-64 lower-case letters, digits, - and _"]})
    return tuple(sorted(set(pools)))


def check_change(state=None, daily_cap=None, note=None):
    """The parts of a change, checked: InvalidCallerId names each wrong one."""
    messages = {}
    if state is not None and state not in tuple(State):
        messages["state"] = ["must be active, flagged or retired"]
    if daily_cap is not None and (isinstance(daily_cap, bool) or not isinstance(daily_cap, int)
                                  or not 1 <= daily_cap <= MAX_DAILY_CAP):
        messages["daily_cap"] = [f"must be a whole number of calls from 1 to {MAX_DAILY_CAP}, or null for the floor's"]
    if note is not None and (not isinstance(note, str) or len(note) > MAX_NOTE_CHARS):
        messages["note"] = [f"must be text of at most {MAX_NOTE_CHARS} characters"]
    if messages:
        raise InvalidCallerId(messages)


def add(conn, text, pools, now, changed_by, *, daily_cap=None, note=""):
    """Add the number `text` (E.164) to `pools`, active; `now` is wall-clock DB_TIMEZONE (the event's
    moment), `changed_by` the credential's role or the operator. Returns (its view, True), or (its view,
    False) when the floor has it already (nothing changes). Raises InvalidCallerId."""
    number, country, area_prefix, regions = read_number(text)
    pools = check_pools(pools)
    check_change(daily_cap=daily_cap, note=note)
    existing = queries.lock_caller_id(conn, number=number)
    if existing is not None:
        return view(existing, _pools(conn, existing["id"])), False
    now_utc = lead_events.utc_now()
    queries.insert_caller_id(conn, number=number, country=country, area_prefix=area_prefix, regions=",".join(regions),
                             state=State.ACTIVE, daily_cap=daily_cap, note=note, now_utc=now_utc, updated_by=changed_by)
    row = queries.lock_caller_id(conn, number=number)
    _add_to_pools(conn, row, pools, now)
    _keep(conn, row, "added", None, _facts(row, pools), now, changed_by)
    return view(row, pools), True


def change(conn, text, patch, now, changed_by):
    """Apply `patch` ({state?, daily_cap?, note?, pools?}; daily_cap null: the floor's) to the
    number `text`. A retired number stays retired. Returns its view. Raises UnknownCallerId,
    InvalidCallerId."""
    unknown = sorted(set(patch) - {"state", "daily_cap", "note", "pools"})
    if unknown:
        raise InvalidCallerId({name: ["Unknown field."] for name in unknown})
    check_change(patch.get("state"), patch.get("daily_cap"), patch.get("note"))
    row = _locked(conn, text)
    pools = _pools(conn, row["id"])
    old = _facts(row, pools)
    state = patch.get("state", row["state"])
    if row["state"] == State.RETIRED and state != State.RETIRED:
        raise InvalidCallerId({"state": ["a retired number is never presented again: add another number"]})
    if "pools" in patch:
        new_pools = check_pools(patch["pools"])
        if new_pools != pools:
            queries.remove_caller_id_pools(conn, caller_id=row["id"])
            _add_to_pools(conn, row, new_pools, now)
            pools = new_pools
    now_utc = lead_events.utc_now()
    retired_at = row["retired_at_utc"] or (now_utc if state == State.RETIRED else None)
    queries.update_caller_id(conn, id=row["id"], state=state,
                             daily_cap=patch["daily_cap"] if "daily_cap" in patch else row["daily_cap"],
                             note=patch.get("note", row["note"]), retired_at_utc=retired_at, now_utc=now_utc,
                             updated_by=changed_by)
    row = _locked(conn, text)
    new = _facts(row, pools)
    if new != old:
        action = state if state != old["state"] and state != State.ACTIVE else "updated"
        _keep(conn, row, action, old, new, now, changed_by)
    return view(row, pools)


def show(conn, text, history_rows=HISTORY_ROWS):
    """The number `text`'s view with `history`: its changes, newest first ({id, action,
    changed_at_utc (ISO 8601), changed_by, old, new}). Raises UnknownCallerId, InvalidCallerId."""
    row = _locked(conn, text)
    history = [{"id": change_row["id"], "action": change_row["action"],
                "changed_at_utc": clock.format_utc(change_row["changed_at_utc"]), "changed_by": change_row["changed_by"],
                "old": json.loads(change_row["old"]) if change_row["old"] else None, "new": json.loads(change_row["new"])}
               for change_row in queries.caller_id_changes(conn, caller_id=row["id"], max_rows=history_rows)]
    return {**view(row, _pools(conn, row["id"])), "history": history}


def page(conn, *, pool=None, state=None, after=None, max_rows=PAGE_ROWS):
    """A page of the floor's numbers in number order: ([view], the `after` of the next page or None).
    `pool`, `state`: only those; `after`: E.164 text of the last number of the previous page."""
    after_digits = read_number(after)[0] if after else 0
    rows = list(queries.caller_ids_page(conn, pool=pool or "", any_pool=pool is None, state=state or "",
                                        any_state=state is None, after=after_digits, max_rows=max_rows + 1))
    more = len(rows) > max_rows
    rows = rows[:max_rows]
    return ([view(row, tuple((row["pools"] or "").split(";")) if row["pools"] else ()) for row in rows],
            e164.text(rows[-1]["number"]) if more else None)


def view(row, pools):
    """A number as the API answers it: {number (E.164 text), country, area_code (national digits),
    regions, pools, state, daily_cap (None: the floor's), presented_today, presented_day
    (YYYY-MM-DD or None), last_used_at_utc, retired_at_utc, release_after (ISO 8601 UTC, a retired
    number's), note, updated_at_utc, updated_by}."""
    country_code = str(phonenumbers.parse(e164.text(row["number"]), None).country_code)
    release_after = row["last_used_at_utc"] or row["retired_at_utc"]
    return {
        "number": e164.text(row["number"]), "country": row["country"],
        "area_code": row["area_prefix"][len(country_code):] if row["area_prefix"] else None,
        "regions": [name for name in row["regions"].split(",") if name], "pools": list(pools),
        "state": row["state"], "daily_cap": row["daily_cap"], "presented_today": row["presented_today"],
        "presented_day": row["presented_day"].isoformat() if row["presented_day"] else None,
        "last_used_at_utc": clock.format_utc(row["last_used_at_utc"]) if row["last_used_at_utc"] else None,
        "retired_at_utc": clock.format_utc(row["retired_at_utc"]) if row["retired_at_utc"] else None,
        "release_after": clock.format_utc(release_after + timedelta(days=RELEASE_DAYS))
        if row["state"] == State.RETIRED else None,
        "note": row["note"], "updated_at_utc": clock.format_utc(row["updated_at_utc"]), "updated_by": row["updated_by"],
    }


def _locked(conn, text):
    number = read_number(text)[0]
    row = queries.lock_caller_id(conn, number=number)
    if row is None:
        raise UnknownCallerId(e164.text(number))
    return row


def _add_to_pools(conn, row, pools, now):
    """Put the number `row` in `pools`, each row with what a claim reads of it (migration 0027)."""
    regions = tuple(name for name in row["regions"].split(",") if name)
    queries.add_caller_id_pools(conn, [(pool, row["id"], row["number"], row["area_prefix"], region(regions),
                                        row["state"], row["daily_cap"], rank(row, now.date())) for pool in pools])


def _pools(conn, caller_id):
    return tuple(row["pool"] for row in queries.caller_id_pools(conn, caller_id=caller_id))


def _facts(row, pools):
    """What a change of the number can change, as its history keeps it."""
    return {"state": row["state"], "daily_cap": row["daily_cap"], "note": row["note"], "pools": list(pools)}


def _keep(conn, row, action, old, new, now, changed_by):
    queries.insert_caller_id_change(conn, caller_id=row["id"], action=action, now_utc=lead_events.utc_now(),
                                    changed_by=changed_by, old=None if old is None else json.dumps(old, sort_keys=True),
                                    new=json.dumps(new, sort_keys=True))
    lead_events.record(conn, f"caller_id.{action}", lead_events.NO_LEAD, now,
                       {"number": e164.text(row["number"]), "changed_by": changed_by, "old": old, "new": new})
