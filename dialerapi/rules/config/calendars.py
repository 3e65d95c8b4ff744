"""A campaign's calendar: open hours per day of the week, restricted dates, a start and
an end date. Pure: no reads, no writes.

Times are wall-clock in DB_TIMEZONE, as the floor's work window is (decisions.md D1, D2). An
interval is [start, end) in minutes since midnight (0 to 1440; 1440 is the day's end). A day with
no interval is closed. A campaign that sets no open hours keeps the floor's work window on every
day (split at midnight when it crosses it), so a campaign that only restricts dates is open on the
other days exactly when the floor works.
"""

from dataclasses import dataclass
from datetime import date, datetime, time, timedelta

from dialerapi.plumbing import clock

DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
DAY_END = 24 * 60
# How far ahead a calendar's `next_open` looks, in days: a calendar that never opens within it
# answers None (it has finished).
OPENING_SEARCH_DAYS = 400

# Why a calendar is closed at a moment (calendar.closed_reason; the floor view and the board show it).
NOT_STARTED = "not_started"
FINISHED = "finished"
RESTRICTED = "restricted_date"
OUTSIDE_HOURS = "outside_open_hours"


@dataclass(frozen=True)
class Calendar:
    """`days`: seven tuples (Monday first) of (start, end) minute intervals, sorted, not overlapping;
    `restricted`: ((first date, last date, note), ...); `start_date` / `end_date`: the first and last
    days the campaign may call, or None."""

    days: tuple
    restricted: tuple = ()
    start_date: date = None
    end_date: date = None

    def _day_reason(self, day):
        if self.start_date is not None and day < self.start_date:
            return NOT_STARTED
        if self.end_date is not None and day > self.end_date:
            return FINISHED
        for first, last, _ in self.restricted:
            if first <= day <= last:
                return RESTRICTED
        return None

    def closed_reason(self, moment):
        """None when the wall-clock `moment` is open, else why not: not_started, finished,
        restricted_date or outside_open_hours."""
        reason = self._day_reason(moment.date())
        if reason is not None:
            return reason
        minute = moment.hour * 60 + moment.minute
        if any(start <= minute < end for start, end in self.days[moment.weekday()]):
            return None
        return OUTSIDE_HOURS

    def is_open(self, moment):
        return self.closed_reason(moment) is None

    def restriction_note(self, day):
        """The note of the restricted date covering `day`, or None."""
        for first, last, note in self.restricted:
            if first <= day <= last:
                return note
        return None

    def _openings(self, day):
        if self._day_reason(day) is not None:
            return []
        return [start for start, end in self.days[day.weekday()]
                if start > 0 or not self._open_at_day_end(day - timedelta(days=1))]

    def _open_at_day_end(self, day):
        # An interval that opens at midnight continues yesterday's when yesterday was open to its end.
        return self._day_reason(day) is None and any(end == DAY_END for _, end in self.days[day.weekday()])

    def next_open(self, moment, tz):
        """The first moment after `moment` (wall-clock in `tz`) at which the calendar opens, or None
        when it does not open within OPENING_SEARCH_DAYS (it has finished). Inside a spring-forward gap an
        opening moves forward (clock.normalize)."""
        for offset in range(OPENING_SEARCH_DAYS):
            day = moment.date() + timedelta(days=offset)
            for start in self._openings(day):
                opening = datetime.combine(day, time()) + timedelta(minutes=start)
                if opening > moment:
                    return clock.normalize(opening, tz)
        return None

    def first_open_on_or_after(self, day, tz):
        """The calendar's first opening on `day` or the first later day it opens, or None."""
        return self.next_open(datetime.combine(day, time()) - timedelta(microseconds=1), tz)


def window_days(start, end):
    """The floor's work window [start, end) (datetime.time, may cross midnight) as the same
    minute intervals on each of the seven days."""
    first, last = start.hour * 60 + start.minute, end.hour * 60 + end.minute
    if first < last:
        intervals = ((first, last),)
    else:
        intervals = tuple(interval for interval in ((0, last), (first, DAY_END)) if interval[0] < interval[1])
    return (intervals,) * 7


def minutes(text):
    """Minutes since midnight of 'HH:MM' (00:00 to 24:00). Raises ValueError."""
    hours, _, mins = text.partition(":")
    if len(hours) != 2 or len(mins) != 2 or not (hours + mins).isdigit():
        raise ValueError(f"{text!r} is not HH:MM")
    value = int(hours) * 60 + int(mins)
    if int(mins) > 59 or value > DAY_END:
        raise ValueError(f"{text!r} is not a time of day from 00:00 to 24:00")
    return value


def interval(text):
    """(start, end) minutes since midnight of an open interval 'HH:MM-HH:MM' of one day, the end
    after the start (up to 24:00: an interval does not cross midnight). Raises ValueError."""
    if not isinstance(text, str) or text.count("-") != 1:
        raise ValueError('must be "HH:MM-HH:MM", e.g. "09:00-21:00"')
    start, end = (minutes(part) for part in text.split("-"))
    if start >= end:
        raise ValueError(f"{text!r} must end after it starts (an interval does not cross midnight)")
    return start, end


def hhmm(value):
    """'HH:MM' of minutes since midnight (1440 is '24:00')."""
    return f"{value // 60:02d}:{value % 60:02d}"
