"""The work window (lead-intake-api.md "Claim and retry rules"; decisions.md D1): work_start to
work_end of sales_dialer_config, or a campaign's own calendar (docs/operations/campaigns.md). Moments
are naive wall-clock DB_TIMEZONE; `tz` is that zone, for the daylight-saving edges (plumbing.clock).
"""

from datetime import datetime, timedelta

from dialerapi.plumbing import clock


def in_work_window(moment, config):
    """True when the wall-clock `moment` lies in [work_start, work_end) (a window may cross midnight),
    or, for a campaign with a calendar (rules.config.calendars), when its calendar is open."""
    if config.calendar is not None:
        return config.calendar.is_open(moment)
    start, end, now = config.work_start, config.work_end, moment.time()
    if start <= end:
        return start <= now < end
    return now >= start or now < end


def work_start_on(day, config, tz):
    """work_start on the date `day` as a stored wall-clock time (inside a spring-forward gap it moves
    forward); for a campaign with a calendar, its first opening on that day or a later one."""
    if config.calendar is not None:
        opening = config.calendar.first_open_on_or_after(day, tz)
        if opening is not None:
            return opening
    return clock.normalize(datetime.combine(day, config.work_start), tz)


def next_work_start(moment, config, tz):
    """The first work_start strictly after `moment`'s time today, else tomorrow's; for a campaign
    with a calendar, the next moment it opens (a finished calendar: tomorrow's work_start, and its
    claims stay closed)."""
    if config.calendar is not None:
        opening = config.calendar.next_open(moment, tz)
        if opening is not None:
            return opening
    today = clock.normalize(datetime.combine(moment.date(), config.work_start), tz)
    if moment < today:
        return today
    return clock.normalize(datetime.combine(moment.date() + timedelta(days=1), config.work_start), tz)
