"""The caller ID an outbound claim presents, chosen in the claim's transaction
(docs/operations/caller-ids.md).

Once the floor has a number (DialerConfig.caller_ids_on), every progressive, predictive and redial
claim presents one of its campaign's pool (caller_id_pool, else the floor's
caller_id_default_pool), by the campaign's chain (caller_id_match): a number of the lead's area
code (the longest prefix of its E.164 digits wins, as VICIdial's AC-CID table does), else of its
state (its region as its calling profile places it: claim_checks.lead_regions), else any of the pool.
With caller_id_sticky, a lead called before sees the number it last saw first. Among the eligible
numbers (active, under today's cap) of the best tier, the one presented least today, ties to the
lowest id. When none is eligible, `caller_id_fallback` refuse fails closed (the claim passes the
lead over, or refuses a redial with caller_id_exhausted); default presents caller_id_default when
it is eligible. Never a number outside these, never silently another: presenting a number the
floor does not own is unlawful (the Truth in Caller ID Act).

Which tiers a pool holds for a lead is known without reading its numbers: a pool's directory (the
area prefixes and regions of its numbers, `directory`) is read once per change of the floor's
numbers. A claim reads the best tier's eligible numbers with its campaign's state in one statement
(`check_locked`), by an index in the order of today's counts (migration 0027: a few rows of a pool
of thousands), and once the contact caps pass counts the chosen one (`take`) by one statement
that counts the call only while the number is still eligible and no other claim holds its row (a
held row is passed at once, so claims at once spread over the pool's numbers instead of queueing
on one): no number is presented past its cap by claims at once, on one node or through Galera
(two nodes' counts of one number fail certification and one claim is run again). A tier whose
numbers are all at their cap or out of service passes the claim to the next (a shorter area
prefix, the state, the pool). A call whose originate failed gives its count back (`give_back`).
Days are calendar days of `now`, wall-clock DB_TIMEZONE; in the minute after midnight, before the
day's ranks are set (pools.start_day), ties among the numbers not yet presented that day go to
the one presented longest ago instead of the lowest id.
"""

from dataclasses import dataclass
from datetime import timedelta

import cachetools
import pymysql

from dialerapi.plumbing.db import queries
from dialerapi.rules.caller_ids import numbers
from dialerapi.rules.campaigns import operations
from dialerapi.rules.compliance import claim_checks
from dialerapi.rules.core import e164
from dialerapi.rules.core.kinds import CallerIdFallback, CallerIdMatch
from dialerapi.rules.events.lead_events import utc_now

CALLER_ID_EXHAUSTED = "caller_id_exhausted"
LOCK_WAIT_TIMEOUT = 1205
# Candidates read per claim: the best, and spares for the claims at once that hold it.
CANDIDATES = 4
# E.164 digits an area prefix may have: a country code of 1-3 digits and an area code of 1-5.
PREFIX_LENGTHS = range(8, 1, -1)
# How long the count of a claim waits for another claim's lock on its number, once every candidate
# was held (the statement's innodb_lock_wait_timeout: 0 passes a held number at once).
AT_ONCE, WAITING = 0, 50
# The pools' directories this process knows, by floor, generation and pool.
_directories = cachetools.LRUCache(maxsize=256)


@dataclass(frozen=True)
class Choice:
    """The number a claim presents: `number` (E.164 digits), `pool` (the campaign's), `match` (a
    CallerIdMatch)."""

    number: int
    pool: str
    match: str

    def answer(self):
        """{number (E.164 text), pool, match}: what the claim answers the engine."""
        return {"number": e164.text(self.number), "pool": self.pool, "match": str(self.match)}


@dataclass(frozen=True)
class Directory:
    """What a pool holds, as far as the tiers go: the area prefixes and regions of its numbers
    (whatever their state)."""

    area_prefixes: frozenset
    regions: frozenset


@dataclass
class Candidates:
    """What check_locked read for a locked lead, for `take`: `tiers`, [(CallerIdMatch, the query's
    key)] in the campaign's order of those the pool has; `rows`, the first tier's eligible numbers
    best first; `sticky` and `default`, numbers (E.164 digits) tried first and last, or None;
    `params`, what every read is asked; `lead_id`, `today` (the claim's calendar day), and
    `in_gate`, whether the lead still refers to the claim gate (the count leaves it)."""

    tiers: list
    rows: list
    sticky: int | None
    default: int | None
    params: dict
    lead_id: int
    today: object
    in_gate: bool = True


def pool_of(config):
    """The pool the campaign of DialerConfig `config` presents from."""
    return config.caller_id_pool or config.caller_id_default_pool


def directory(conn, pool, generation):
    """The Directory of `pool` as of `generation` (the floor's caller_ids_generation), read again
    only when it moved."""
    key = (getattr(conn, "host", None), getattr(conn, "port", None), getattr(conn, "db", None), generation, pool)
    found = _directories.get(key)
    if found is None:
        rows = list(queries.caller_id_directory(conn, pool=pool))
        found = Directory(frozenset(row["area_prefix"] for row in rows if row["area_prefix"]),
                          frozenset(row["region"] for row in rows if row["region"]))
        _directories[key] = found
    return found


def check_locked(conn, row, now, config):
    """(refusal, Candidates) of the locked lead `row`, past claim_checks.verdict (which keeps its
    calling profile current), under its campaign's DialerConfig `config`:
    operations.check_locked's refusal (campaign_paused, campaign_ended or None), its campaign's
    state read inside the claim gate by the statement that reads the caller IDs the lead may
    present (another statement only when its best tier has no eligible number). The lead leaves the
    gate with the count (`take`), or by `leave` when the claim passes it over, so a claim on a floor
    with caller IDs sends the statements one without does (docs/performance.md). Candidates is
    None while the floor has no caller ID (config.caller_ids_on false): the claim presents none."""
    if not config.caller_ids_on:
        return operations.check_locked(conn, row), None
    operations.enter_claim_gate(conn, row)
    pool = pool_of(config)
    params = {"form_type": row["form_type"], "pool": pool, "day_key": numbers.day_key(now.date()),
              "floor_cap": config.caller_id_daily_cap, "max_rows": CANDIDATES}
    tiers = _tiers(conn, row, config, directory(conn, pool, config.caller_ids_generation))
    rows = _read(conn, tiers[0], params) if tiers else []
    state = rows[0]["campaign_state"] if rows else queries.campaign_state(conn, form_type=row["form_type"])
    sticky = row.get("caller_id") if config.caller_id_sticky and row.get("call_count") else None
    default = config.caller_id_default if config.caller_id_fallback == CallerIdFallback.DEFAULT else None
    candidates = Candidates(tiers, rows, sticky, default, params, row["id"], now.date())
    refusal = operations.state_refusal(state)
    if refusal is not None:
        leave(conn, candidates)
    return refusal, candidates


def leave(conn, candidates):
    """The lead of `candidates` leaves the claim gate, unless its count did (a claim passing it over)."""
    if candidates.in_gate:
        operations.leave_claim_gate(conn, {"id": candidates.lead_id})
        candidates.in_gate = False


def take(conn, candidates):
    """The Choice among `candidates` (check_locked's), its call counted against the number's day
    (in the claim's transaction, which keeps the number's row locked until it commits): the sticky
    number when it is eligible, else the best tier's least presented, else the default; None when
    no number is eligible and the campaign refuses. The lead has left the claim gate either way."""
    pool = candidates.params["pool"]
    if candidates.sticky and _taken(conn, candidates, candidates.sticky, AT_ONCE):
        return Choice(candidates.sticky, pool, CallerIdMatch.STICKY)
    rows = candidates.rows
    for index, tier in enumerate(candidates.tiers):
        if index:
            rows = _read(conn, tier, candidates.params)
        while rows:
            for candidate in rows:
                if _taken(conn, candidates, candidate["number"], AT_ONCE):
                    return Choice(candidate["number"], pool, tier[0])
            # Every candidate was held by a claim at once or went past its cap meanwhile: wait for
            # the best, and read the tier again if that claim took it to its cap.
            if _taken(conn, candidates, rows[0]["number"], WAITING):
                return Choice(rows[0]["number"], pool, tier[0])
            rows = _read(conn, tier, candidates.params)
    if candidates.default and _taken(conn, candidates, candidates.default, WAITING):
        return Choice(candidates.default, pool, CallerIdMatch.DEFAULT)
    leave(conn, candidates)
    return None


def give_back(conn, row):
    """A call of the lead `row` (as its claim left it: caller_id, reserved_at) that rang nobody
    gives its number's count of that day back."""
    if row.get("caller_id") and row.get("reserved_at"):
        day = row["reserved_at"].date()
        queries.give_back_caller_id(conn, number=row["caller_id"], day=day, day_key=numbers.day_key(day),
                                    next_day_key=numbers.day_key(day + timedelta(days=1)))


def _tiers(conn, row, config, found):
    """[(CallerIdMatch, key)] of the campaign's chain that the pool `found` (a Directory) holds for
    the lead `row`: each of its area prefixes the pool has, longest first; the first of its
    regions the pool has; the pool."""
    tiers = []
    for match in config.caller_id_match:
        if match == CallerIdMatch.AREA_CODE and row.get("phone_e164"):
            lead_number = str(row["phone_e164"])
            tiers += [(match, lead_number[:length]) for length in PREFIX_LENGTHS
                      if lead_number[:length] in found.area_prefixes]
        elif match == CallerIdMatch.STATE and found.regions:
            tiers += [(match, name) for name in claim_checks.lead_regions(conn, row) if name in found.regions][:1]
        elif match == CallerIdMatch.POOL:
            tiers.append((match, None))
    return tiers


def _read(conn, tier, params):
    """The eligible numbers of `tier` ((CallerIdMatch, key)), least presented today first."""
    match, key = tier
    if match == CallerIdMatch.AREA_CODE:
        return list(queries.caller_ids_of_area_prefix(conn, area_prefix=key, **params))
    if match == CallerIdMatch.STATE:
        return list(queries.caller_ids_of_region(conn, region=key, **params))
    return list(queries.caller_ids_of_pool(conn, **params))


def _taken(conn, candidates, number, lock_wait_seconds):
    """Whether the call was counted against `number` (E.164 digits), by the statement that also
    leaves the claim gate (rows changed: the lead's while it was in the gate, the number's and its
    pools'): False when it is no longer eligible, or another claim holds it past
    `lock_wait_seconds` (error 1205: the statement is undone, the lead still in the gate)."""
    params = candidates.params
    try:
        changed = queries.take_caller_id(
            conn, lead_id=candidates.lead_id, number=number, today=candidates.today, day_key=params["day_key"],
            floor_cap=params["floor_cap"], now_utc=utc_now(), lock_wait_seconds=lock_wait_seconds)
    except pymysql.err.OperationalError as exc:
        if exc.args[0] != LOCK_WAIT_TIMEOUT:
            raise
        return False
    left, candidates.in_gate = candidates.in_gate, False
    return changed > int(left)
