"""The one clock of the service and the wall-clock rules of DB_TIMEZONE (decisions.md D2).

"Now" never comes from SQL NOW(): it comes from `utcnow()`, which tests move with `set_utc_source`.

Every DATETIME column holds naive wall-clock time in DB_TIMEZONE. In a zone with daylight saving
that loses information twice a year, and this module is the one place that decides what such a
time means (docs/operations/time.md, "Time and daylight saving"):

1. A wall-clock time that does not exist (02:30 on a spring-forward night) moves forward by the
   gap (03:30).
2. A wall-clock time that exists twice (01:30 on a fall-back night) is the first occurrence, both
   when a client sends it and when a stored value is read.
3. A moment in the second occurrence of a repeated hour cannot be stored as itself (it would read
   back as the first, an hour early), so it is stored as the end of the repeated hour (02:00):
   late, never early.
4. Durations (retry_seconds, the grace window, RELEASE_RETRY_MS, the sweep's 30 s) are elapsed
   time: added to the instant, then stored by rule 3 (`after`).

`now(tz)` is the wall clock as it reads: during the second pass of a repeated hour it reads 01:xx
again, with `fold=1`, so `instant()` still knows which moment it is. Comparisons of wall-clock
values ignore fold, so what fell due in the first pass waits for the same wall time again (late by
at most the repeated hour, never early).
"""

import re
from datetime import datetime, timezone

_utc_source = None


def utcnow():
    """The current instant as an aware UTC datetime."""
    return _utc_source() if _utc_source else datetime.now(timezone.utc)


def now(tz):
    """Naive wall-clock time in the zone `tz` (a ZoneInfo), to the second, as stored in DATETIME columns.

    fold=1 during the second pass of a repeated hour (see the module docstring).
    """
    return utcnow().astimezone(tz).replace(tzinfo=None, microsecond=0)


def set_utc_source(source):
    """Replace the time source with a callable returning an aware UTC datetime; None restores the real clock.

    Returns the source it replaced, so a caller can put it back.
    """
    global _utc_source
    previous, _utc_source = _utc_source, source
    return previous


def instant(wall, tz):
    """The aware UTC instant of a naive wall-clock datetime in `tz`.

    fold=0 (every value read from the database) is the first occurrence of a repeated time; a time
    inside a spring-forward gap is read with the offset before the gap, i.e. moved forward by it.
    """
    return wall.replace(tzinfo=tz).astimezone(timezone.utc)


def to_utc(wall, tz):
    """The instant of a wall-clock datetime as naive UTC, for the `*_utc` columns; None stays None."""
    return None if wall is None else instant(wall, tz).replace(tzinfo=None)


def wall(moment, tz):
    """The naive wall-clock datetime in `tz` to store for an aware instant, to the second.

    An instant in the second occurrence of a repeated hour is stored as the end of that hour
    (rule 3), the first wall-clock time after it that reads back as a moment not earlier than it.
    """
    local = moment.astimezone(tz)
    if local.fold:
        return _end_of_repeated_hour(moment, tz)
    return local.replace(tzinfo=None, microsecond=0)


def _end_of_repeated_hour(moment, tz):
    local = moment.astimezone(tz).replace(tzinfo=None)
    before = local.replace(tzinfo=tz, fold=0).utcoffset()
    after_ = local.replace(tzinfo=tz, fold=1).utcoffset()
    # zoneinfo does not expose its transitions: find the second the offset changed (tzdata
    # transitions fall on whole seconds), between one overlap-length before `moment` and `moment`.
    low = int(moment.timestamp()) - int((before - after_).total_seconds())
    high = int(moment.timestamp())
    while high - low > 1:
        middle = (low + high) // 2
        if datetime.fromtimestamp(middle, timezone.utc).astimezone(tz).utcoffset() == before:
            low = middle
        else:
            high = middle
    return datetime.fromtimestamp(high, timezone.utc).replace(tzinfo=None) + before


def normalize(value, tz):
    """A wall-clock datetime as it is stored: moved forward out of a gap, first occurrence when repeated."""
    return wall(instant(value, tz), tz)


def after(value, delta, tz):
    """The wall-clock time `delta` (a timedelta of elapsed time) after the wall-clock `value` in `tz` (rule 4)."""
    return wall(instant(value, tz) + delta, tz)


_WALL_CLOCK_PREFIX = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}")


def parse_wall_clock(value, tz):
    """Parse a D2 input time into naive wall-clock time in `tz`, to the second, as it will be stored.

    Accepts `YYYY-MM-DD HH:MM[:SS]` and ISO 8601 (`T` or space, optional fraction); without an
    offset the value is wall-clock time in `tz` (rules 1 and 2), with an offset or `Z` it is
    converted to `tz` (rule 3 in the second pass of a repeated hour). Raises ValueError for
    anything else, including date-only values, empty strings, impossible dates such as 2026-02-30,
    and years outside 1000-9998.
    """
    if not isinstance(value, str) or not _WALL_CLOCK_PREFIX.match(value.strip()):
        raise ValueError("must be a date and time: YYYY-MM-DD HH:MM[:SS] or ISO 8601")
    parsed = datetime.fromisoformat(value.strip())
    # DATETIME holds years 1000-9999; outside them a conversion can overflow and MySQL may refuse.
    if not 1000 <= parsed.year <= 9998:
        raise ValueError("the year must be between 1000 and 9998")
    if parsed.tzinfo is not None:
        return wall(parsed, tz)
    return normalize(parsed.replace(microsecond=0), tz)


def format_wall_clock(moment):
    """`YYYY-MM-DD HH:MM:SS` of a naive DB_TIMEZONE datetime (D2 output of scheduled_at); None stays None."""
    return None if moment is None else moment.strftime("%Y-%m-%d %H:%M:%S")


def format_utc_ms(moment):
    """ISO 8601 UTC with milliseconds and a `Z` of an aware datetime: the board's "now" (a
    timer set from a whole-second "now" at every frame ran up to a second behind, and stood still
    while frames came faster than once a second)."""
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def format_utc(moment, tz=timezone.utc):
    """ISO 8601 UTC with a `Z` (D2 output of missed-activity times) of a naive datetime in `tz`.

    With the default `tz` the value is already UTC (a `*_utc` column). None stays None.
    """
    if moment is None:
        return None
    return instant(moment, tz).strftime("%Y-%m-%dT%H:%M:%SZ")
