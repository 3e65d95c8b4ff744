"""Contact caps per phone number (docs/compliance/contact-caps.md).

A cap is at most `max_attempts` dial attempts to one phone number in a rolling window of
`window_seconds`, counted across every lead with that number (its E.164 digits, sales_master.
phone_e164, rules.compliance.phones), for every number or only those of its regions (ISO 3166 countries,
`GB`, or US states by their area codes, `US-FL`, from phonenumbers' geocoding data through the
generated table us_area_codes.py), and of one
form_type only when it names one (Regulation F counts per debt). Caps are rows of
dialerapi_contact_caps, off until enabled; the shipped presets (PRESETS) are rows too.

What the claim does (rules.dialing.claims): a progressive or predictive claim passes over a lead whose
number is at an enabled cap that applies to it, and moves its next_retry_at (a callback's time
too, when earlier) to the moment the window frees it (`hold`); a redial of one is refused,
NotClaimable `contact_cap` with the cap's name and that moment. An inbound call, and a redial the
engine says the customer asked for (`customer_request`), are never held, nor counted: the rules
count calls the dialer makes on its own. A cap with `consent_days` (the reg-f-7-in-7 preset: 7; 12
CFR 1006.14(b)(3)(i) and (b)(4) leave calls placed within seven days of the consumer's prior consent
out) neither holds nor counts a call to a lead whose written or express consent
(sales_master.consent_type, consent_at) was given in those days before it; such an attempt is kept
with its consent's instant (`consents`) so every cap judges it by its own days. Every other claim of a number some enabled cap applies to records an attempt
at the claim (`record`), whether or not a cap is enabled then (a cap enabled at 10:00
counts the calls of 08:00); an originate failure takes its own back (`forget`); a reservation the
lease released stays counted, since the phone may have rung.

A number's attempts of the last 31 days are one row of dialerapi_contact_numbers, read with the
lead the claim locks (claims.sql lock_unreserved, at no extra round trip) and written back by the
claim only over the `version` it read (`record`): when another claim of the number wrote it in
between, the claim is run again (plumbing.db.Conflict) and counts that attempt too; on two Galera
nodes the two writes fail certification and one is run again. So every counted claim costs one
write, cap or none. Moments are naive UTC (decisions.md D2) in the tables,
and wall-clock DB_TIMEZONE on the lead, as next_retry_at always is.
"""

import json
import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

import phonenumbers

from dialerapi.plumbing import clock
from dialerapi.plumbing.db import Conflict, queries
from dialerapi.rules.compliance.places import regions_of
from dialerapi.rules.compliance.us_area_codes import AREA_CODES
from dialerapi.rules.core.kinds import CALL_CONSENT
from dialerapi.rules.core.vocabulary import CALLBACK

CONTACT_CAP = "contact_cap"
INBOUND = "inbound"
PRESETS = ("florida-oklahoma-3-per-24h", "reg-f-7-in-7")
NAME = re.compile(r"^[a-z0-9][a-z0-9-]{0,63}$")
WINDOW = re.compile(r"^([1-9][0-9]{0,4})([smhd])$")
UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
MAX_WINDOW_SECONDS = 31 * 86400
MAX_ATTEMPTS = 1000
PRUNE_ROWS = 5000
EPOCH = datetime(1970, 1, 1)

class InvalidCap(ValueError):
    """A cap that cannot be stored; the message names what is wrong."""


class UnknownCap(LookupError):
    """No cap has this name."""

    def __str__(self):
        return f"no cap is named {self.args[0]!r}: `dialerapi caps list` shows them"


@dataclass(frozen=True)
class Hit:
    """A number at a cap: `cap` (its name) frees it at `until` (wall-clock DB_TIMEZONE)."""

    cap: str
    until: object


@dataclass(frozen=True)
class Ticket:
    """What a claim read of a number some enabled cap applies to, to record its attempt with:
    `version` None when the number has no row yet; `attempts` [[epoch, form_type, reservation_id]];
    `counted` False for a claim the caps do not count (inbound, the customer's own request), which
    still writes the number's row: claims of one number run one at a time; `consents`
    {reservation_id: epoch} of the attempts made with consent, and `consent_epoch` the claimed
    lead's (None: none a cap exempts)."""

    phone_e164: int
    version: int
    attempts: list
    counted: bool = True
    consents: dict = None
    consent_epoch: int = None


def listing(conn):
    """Every cap as a dict: {name, max_attempts, window_seconds, per, region, form_type, enabled, preset, source,
    consent_days}."""
    return [{**row, "per": describe_window(row["window_seconds"]), "enabled": bool(row["enabled"]),
             "preset": bool(row["preset"])} for row in queries.contact_caps(conn)]


def describe_window(seconds):
    """'24h', '7d', '90m' or '45s': the largest unit that divides `seconds`, days only from two on."""
    for unit in "dhm":
        if seconds % UNIT_SECONDS[unit] == 0 and (unit != "d" or seconds > UNIT_SECONDS["d"]):
            return f"{seconds // UNIT_SECONDS[unit]}{unit}"
    return f"{seconds}s"


def window_seconds(text):
    """Seconds of a window written `24h`, `7d`, `90m` or `3600s`, at most 31 days. Raises InvalidCap."""
    match = WINDOW.match(str(text).strip())
    if not match:
        raise InvalidCap(f"--per {text!r}: a number and a unit, s, m, h or d (24h, 7d)")
    seconds = int(match.group(1)) * UNIT_SECONDS[match.group(2)]
    if seconds > MAX_WINDOW_SECONDS:
        raise InvalidCap(f"--per {text!r}: at most 31d")
    return seconds


def check_regions(text):
    """The regions of `--region` ('US-FL,US-OK', 'GB') as a tuple. Raises InvalidCap naming the one not known."""
    regions = tuple(part.strip().upper() for part in str(text).split(",") if part.strip())
    states = {state for found in AREA_CODES.values() for state in found}
    for region in regions:
        country, _, state = region.partition("-")
        if country not in phonenumbers.SUPPORTED_REGIONS:
            raise InvalidCap(f"--region {region}: {country} is no ISO 3166 country phonenumbers knows")
        if state and (country != "US" or state not in states):
            raise InvalidCap(f"--region {region}: a state is given as US-XX, with a US state code (US-FL)")
    if not regions:
        raise InvalidCap("--region: name at least one region (US-FL, GB)")
    return regions


def applying(caps, number, form_type):
    """The caps of `caps` that count dial attempts to `number` for a lead of `form_type`."""
    if number is None or not caps:
        return ()
    regions = None
    chosen = []
    for cap in caps:
        if cap.form_type is not None and cap.form_type != form_type:
            continue
        if cap.regions:
            regions = regions_of(number) if regions is None else regions
            if not regions.intersection(cap.regions):
                continue
        chosen.append(cap)
    return tuple(chosen)


def counted(call_type, customer_request=False):
    """Whether a claim of `call_type` is held to the caps and counted (not inbound, not a redial on
    the customer's own request)."""
    return call_type != INBOUND and not customer_request


def check(conn, row, now, tz, caps, counted=True):
    """(Hit, None) when the locked lead `row`'s number is at one of `caps` (the enabled ones) now;
    else (None, Ticket) to record the claim with, whether a cap applies or not, so a cap enabled
    later counts the calls made before it (a claim not `counted`, `counted()`, writes
    the number without an attempt); (None, None) when the lead has no number, or the caller gives
    no `tz` and no cap applies.

    `row` carries contact_for (the number they are of), contact_version, contact_attempts,
    contact_consents and the lead's consent (contact_consent, contact_consent_at) when the lock
    query read them (claims.sql); they are taken out of it, which is then a sales_master row again.
    A cap with consent_days neither holds a consented call (Cap.exempts) nor counts the attempts made
    with consent it exempts. With several
    caps at their limit, the Hit is the latest moment one of them frees the number. `now` is
    wall-clock in `tz` (DB_TIMEZONE; the service passes it at every claim, rules.dialing.engine). Raises
    ValueError when a cap applies and `tz` is None.
    """
    read_for = row.pop("contact_for", None)
    version, stored = row.pop("contact_version", None), row.pop("contact_attempts", None)
    stored_consents = row.pop("contact_consents", None)
    consent_type, consent_at = row.pop("contact_consent", None), row.pop("contact_consent_at", None)
    if row.get("phone_e164") is None:
        return None, None
    chosen = applying(caps, row["phone_e164"], row["form_type"]) if counted else ()
    if tz is None:
        if chosen:
            raise ValueError("contact caps are enabled: the claim needs tz, the zone of now (DB_TIMEZONE)")
        return None, None
    if read_for is None or read_for != row["phone_e164"]:  # not read with the lead, or its number was corrected
        found = queries.contact_number(conn, phone_e164=row["phone_e164"])
        version, stored, stored_consents = (found["version"], found["attempts"], found["consents"]) if found \
            else (None, None, None)
    attempts = json.loads(stored) if stored else []
    consents = json.loads(stored_consents) if stored_consents else {}
    now_epoch = _epoch(clock.to_utc(now, tz))
    consent_epoch = (_epoch(clock.to_utc(consent_at, tz))
                     if consent_type in CALL_CONSENT and consent_at is not None and counted else None)
    hit = None
    for cap in chosen:
        if cap.exempts(consent_epoch, now_epoch):
            continue
        inside = [at for at, form_type, reservation_id in attempts
                  if at > now_epoch - cap.window_seconds and (cap.form_type is None or form_type == cap.form_type)
                  and not cap.exempts(consents.get(str(reservation_id)), at)]
        if len(inside) >= cap.max_attempts:
            # The window frees one attempt when the attempt that keeps it full leaves it.
            frees = inside[len(inside) - cap.max_attempts] + cap.window_seconds
            if hit is None or frees > hit[1]:
                hit = (cap.name, frees)
    if hit is not None:
        until = EPOCH.replace(tzinfo=timezone.utc) + timedelta(seconds=hit[1])
        return Hit(hit[0], clock.wall(until, tz)), None
    return None, Ticket(row["phone_e164"], version, attempts, counted, consents, consent_epoch)


def _epoch(naive_utc):
    return int((naive_utc - EPOCH).total_seconds())


def hold(conn, row, hit, now, tz):
    """Keep the locked lead `row` from claims until `hit.until` (its next_retry_at, and a callback's
    time when earlier), and note its number in the day's capped numbers (`dialerapi report caps`).
    Returns the row as the hold left it (its event, lead_events.held, is the caller's)."""
    queries.hold_for_cap(conn, id=row["id"], cap=hit.cap, until=hit.until)
    queries.note_capped(conn, day=now.date(), cap=hit.cap, phone_e164=row["phone_e164"], form_type=row["form_type"],
                        at_utc=clock.to_utc(now, tz))
    callback_at = row["callback_scheduled_at"]
    if row["dial_status"] == CALLBACK and (callback_at is None or callback_at < hit.until):
        callback_at = hit.until
    return {**row, "next_retry_at": hit.until, "callback_scheduled_at": callback_at, "contact_cap": hit.cap,
            "contact_cap_until": hit.until}


def record(conn, lead, ticket, now, tz):
    """Count the claim of `lead` (as the claim wrote it: with its reservation_id) against its
    number, with the Ticket `check` gave (None: nothing to write; not `counted`: the number's row is
    written without an attempt). Attempts older
    than the longest window a cap can have are dropped. Raises plumbing.db.Conflict when another
    claim wrote the number since `check` read it: the transaction is run again."""
    if ticket is None:
        return
    now_utc = clock.to_utc(now, tz)
    now_epoch = _epoch(now_utc)
    attempts = [entry for entry in ticket.attempts if entry[0] > now_epoch - MAX_WINDOW_SECONDS]
    if ticket.counted:
        attempts.append([now_epoch, lead["form_type"], lead["reservation_id"]])
    consents = dict(ticket.consents or {})
    if ticket.counted and ticket.consent_epoch is not None:
        consents[str(lead["reservation_id"])] = ticket.consent_epoch
    kept = {str(entry[2]) for entry in attempts}
    consents = {key: at for key, at in consents.items() if key in kept}
    last_utc = EPOCH + timedelta(seconds=attempts[-1][0]) if attempts else now_utc
    text = json.dumps(attempts, separators=(",", ":"))
    consents_text = json.dumps(consents, separators=(",", ":")) if consents else None
    if ticket.version is None:
        written = queries.add_contact_number(conn, phone_e164=ticket.phone_e164, attempts=text,
                                             consents=consents_text, last_at_utc=last_utc)
    else:
        written = queries.write_contact_number(conn, phone_e164=ticket.phone_e164, version=ticket.version,
                                               attempts=text, consents=consents_text, last_at_utc=last_utc)
    if not written:
        raise Conflict(f"another claim counted an attempt to {ticket.phone_e164} first")


def forget(conn, lead, now):
    """An originate failure rang nobody: the attempt the claim of the locked `lead` recorded (by its
    reservation_id) no longer counts, and the number's leads a cap held are due again at `now`
    (wall-clock DB_TIMEZONE: otherwise they would keep their hold of +24 h though the count fell under
    the cap); the next claim checks the caps again. Returns those leads as their hold's end left
    them, with the cap that held them (their event, lead_events.hold_ended, is the caller's)."""
    if not lead.get("reservation_id") or not lead.get("phone_e164"):
        return []
    found = queries.contact_number(conn, phone_e164=lead["phone_e164"])
    if found is None:
        return []
    attempts = json.loads(found["attempts"])
    kept = [entry for entry in attempts if entry[2] != lead["reservation_id"]]
    freed = []
    if len(kept) != len(attempts):
        # Before the number's row: a claim holding one of these leads writes that row next, so the
        # other order could deadlock.
        freed = [{**row, "next_retry_at": now, "contact_cap_until": None,
                  "callback_scheduled_at": now if row["dial_status"] == CALLBACK else row["callback_scheduled_at"]}
                 for row in queries.lock_cap_held(conn, phone_e164=lead["phone_e164"], now=now)]
        if freed:
            queries.end_cap_holds(conn, ids=[row["id"] for row in freed], now=now)
        last = kept[-1][0] if kept else 0
        consents = {key: at for key, at in json.loads(found["consents"] or "{}").items()
                    if key != str(lead["reservation_id"])}
        written = queries.write_contact_number(conn, phone_e164=lead["phone_e164"], version=found["version"],
                                               attempts=json.dumps(kept, separators=(",", ":")),
                                               consents=json.dumps(consents, separators=(",", ":")) if consents else None,
                                               last_at_utc=EPOCH + timedelta(seconds=last))
        if not written:
            raise Conflict(f"another claim counted an attempt to {lead['phone_e164']} first")
    return freed


def refusal_figures(hit):
    """The figures of a redial's 409 `contact_cap`: {"cap", "frees_at" (wall-clock DB_TIMEZONE)}."""
    return {"cap": hit.cap, "frees_at": clock.format_wall_clock(hit.until)}


def waiting(conn, now):
    """{form_type: leads waiting on a cap now} (/engine/floor)."""
    return {row["form_type"]: int(row["waiting"]) for row in queries.leads_waiting_on_caps(conn, now=now)}


def report(conn, first_day, last_day):
    """Numbers that reached a cap, per floor day (DB_TIMEZONE), cap and form_type:
    [{"day", "cap", "form_type", "numbers", "leads_held"}]."""
    return [{**row, "numbers": int(row["numbers"]), "leads_held": int(row["leads_held"])}
            for row in queries.capped_report(conn, day_from=first_day, day_to=last_day)]


def prune(conn, now, tz):
    """Delete up to PRUNE_ROWS numbers whose newest attempt is older than the longest window a cap
    can have; returns how many went."""
    before = clock.to_utc(now, tz) - timedelta(seconds=MAX_WINDOW_SECONDS)
    return queries.prune_contact_numbers(conn, before_utc=before, max_rows=PRUNE_ROWS)


def add(conn, name, max_attempts, per, region=None, form_type=None, consent_days=None):
    """Store a new cap, disabled; `consent_days` (1-31, None: every call counts) leaves calls made
    within that many days after the lead's consent out of it. Raises InvalidCap (naming what is
    wrong) or when the name is taken."""
    if not NAME.match(name or ""):
        raise InvalidCap(f"name {name!r}: lowercase letters, digits and '-', at most 64")
    if not isinstance(max_attempts, int) or not 1 <= max_attempts <= MAX_ATTEMPTS:
        raise InvalidCap(f"--max {max_attempts!r}: a whole number from 1 to {MAX_ATTEMPTS}")
    seconds = window_seconds(per)
    regions = check_regions(region) if region is not None else ()
    if form_type is not None and not 1 <= len(form_type) <= 64:
        raise InvalidCap("--form-type: 1 to 64 characters")
    if consent_days is not None and (not isinstance(consent_days, int) or not 1 <= consent_days <= 31):
        raise InvalidCap(f"--consent-days {consent_days!r}: a whole number of days from 1 to 31")
    if any(row["name"] == name for row in queries.contact_caps(conn)):
        raise InvalidCap(f"name {name!r}: a cap has it already")
    queries.add_contact_cap(conn, name=name, max_attempts=max_attempts, window_seconds=seconds,
                            region=",".join(regions) or None, form_type=form_type, enabled=0,
                            consent_days=consent_days)


def set_enabled(conn, name, on):
    """Turn the cap `name` on or off. Raises UnknownCap."""
    if not any(row["name"] == name for row in queries.contact_caps(conn)):
        raise UnknownCap(name)
    queries.set_contact_cap_enabled(conn, name=name, enabled=int(on))


def remove(conn, name):
    """Remove the cap `name`. Raises UnknownCap; InvalidCap for a preset (it can only be disabled)."""
    found = [row for row in queries.contact_caps(conn) if row["name"] == name]
    if not found:
        raise UnknownCap(name)
    if found[0]["preset"]:
        raise InvalidCap(f"{name} is a shipped preset: disable it instead")
    queries.remove_contact_cap(conn, name=name)
