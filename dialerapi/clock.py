"""The one clock of the service (decisions.md D2: "now" never comes from SQL NOW()).

Every DATETIME column holds naive wall-clock time in DB_TIMEZONE; `now(tz)` gives that.
Tests move time with `set_utc_source`.
"""

import re
from datetime import datetime, timezone

_utc_source = None


def utcnow():
    """The current instant as an aware UTC datetime."""
    return _utc_source() if _utc_source else datetime.now(timezone.utc)


def now(tz):
    """Naive wall-clock time in the zone `tz` (a ZoneInfo), to the second, as stored in DATETIME columns."""
    return utcnow().astimezone(tz).replace(tzinfo=None, microsecond=0)


def set_utc_source(source):
    """Replace the time source with a callable returning an aware UTC datetime; None restores the real clock."""
    global _utc_source
    _utc_source = source


_WALL_CLOCK_PREFIX = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}")


def parse_wall_clock(value, tz):
    """Parse a D2 input time into naive wall-clock time in `tz`, to the second.

    Accepts `YYYY-MM-DD HH:MM[:SS]` and ISO 8601 (`T` or space, optional fraction); without an
    offset the value is wall-clock time in `tz`, with an offset or `Z` it is converted to `tz`.
    Raises ValueError for anything else, including date-only values, empty strings, impossible
    dates such as 2026-02-30, and years outside 1000-9998.
    """
    if not isinstance(value, str) or not _WALL_CLOCK_PREFIX.match(value.strip()):
        raise ValueError("must be a date and time: YYYY-MM-DD HH:MM[:SS] or ISO 8601")
    parsed = datetime.fromisoformat(value.strip())
    # DATETIME holds years 1000-9999; outside them a conversion can overflow and MySQL may refuse.
    if not 1000 <= parsed.year <= 9998:
        raise ValueError("the year must be between 1000 and 9998")
    if parsed.tzinfo is not None:
        parsed = parsed.astimezone(tz).replace(tzinfo=None)
    return parsed.replace(microsecond=0)


def format_wall_clock(moment):
    """`YYYY-MM-DD HH:MM:SS` of a naive DB_TIMEZONE datetime (D2 output of scheduled_at); None stays None."""
    return None if moment is None else moment.strftime("%Y-%m-%d %H:%M:%S")


def format_utc(moment, tz):
    """ISO 8601 UTC with a `Z` (D2 output of missed-activity times) of a naive wall-clock datetime in `tz`."""
    if moment is None:
        return None
    return moment.replace(tzinfo=tz).astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
