"""The dial-state rules shared by the HTTP routes and the engine-facing functions.

lead-intake-api.md, "States and transitions" and "Dial-state reset". This module is the one
implementation of "is this lead live", of the dial-state reset and of the work-window rule;
callers lock the rows and write what these functions return.

All datetimes are naive wall-clock values in DB_TIMEZONE (decisions.md D2).
"""

from dataclasses import dataclass
from datetime import datetime, time, timedelta

from .db import queries

PENDING = "Pending"
CALLBACK = "Callback"
CALLING = "Calling"
RECEIVED = "Received"
NOT_CONNECTED = "Not Connected"
DISPOSED = "Disposed"
REJECTED = "Rejected"
ABANDONED = "Abandoned"


@dataclass(frozen=True)
class DialerConfig:
    """The one row of sales_dialer_config (decisions.md D1); times of day are wall-clock in DB_TIMEZONE."""

    isMaintainance: bool
    outbound_obey_work_hours: bool
    retry_pattern: tuple
    retry_seconds: int
    max_tries: int
    work_start: time
    work_end: time
    disposed_priority_id: int


def _time_of_day(value):
    # PyMySQL returns TIME columns as timedelta since midnight.
    if isinstance(value, timedelta):
        return (datetime.min + value).time()
    return value


def load_config(conn):
    """Read sales_dialer_config row 1 as a DialerConfig. Raises LookupError when the row is missing."""
    row = queries.get_dialer_config(conn)
    if row is None:
        raise LookupError("sales_dialer_config has no row with id = 1: run `dialerapi db upgrade`")
    return DialerConfig(
        isMaintainance=bool(row["isMaintainance"]),
        outbound_obey_work_hours=bool(row["outbound_obey_work_hours"]),
        retry_pattern=tuple(int(n) for n in str(row["retry_pattern"]).split(",") if n.strip()),
        retry_seconds=int(row["retry_seconds"]),
        max_tries=int(row["max_tries"]),
        work_start=_time_of_day(row["work_start"]),
        work_end=_time_of_day(row["work_end"]),
        disposed_priority_id=int(row["disposed_priority_id"]),
    )


def is_live(row):
    """True when a master row is live on a call: dial_status Calling and isReserved 1.

    A live row is never modified by the API; CRM actions on it are held until settle.
    """
    return row["dial_status"] == CALLING and bool(row["isReserved"])


def in_work_window(moment, config):
    """True when the wall-clock `moment` lies in [work_start, work_end) (a window may cross midnight)."""
    start, end, now = config.work_start, config.work_end, moment.time()
    if start <= end:
        return start <= now < end
    return now >= start or now < end


def next_work_start(moment, config):
    """The first work_start strictly after `moment`'s time today, else tomorrow's."""
    today = datetime.combine(moment.date(), config.work_start)
    return today if moment < today else today + timedelta(days=1)


def dial_state_reset(*, data_id, dial_status, callback_scheduled_at=None, next_retry_at=None):
    """The columns of the dial-state reset (lead-intake-api.md, "Dial-state reset").

    Returns a dict of sales_master columns: a new data_id, the given dial_status,
    callback_scheduled_at and next_retry_at, and every attempt column cleared (disposeRemark,
    last_dial_result, hangup_by, hangup_cause, first/last_attempt_at NULL; call_count 0;
    isReserved 0).
    """
    return {
        "data_id": data_id,
        "dial_status": dial_status,
        "disposeRemark": None,
        "last_dial_result": None,
        "hangup_by": None,
        "hangup_cause": None,
        "last_attempt_at": None,
        "first_attempt_at": None,
        "next_retry_at": next_retry_at,
        "callback_scheduled_at": callback_scheduled_at,
        "call_count": 0,
        "isReserved": 0,
    }


def push_reset(*, data_id, callback_scheduled_at, now, config):
    """The dial-state reset written by a lead push (insert or update).

    With a callback time (only accepted on a callback priority) the lead becomes Callback and
    waits on callback_scheduled_at (next_retry_at NULL). Otherwise it becomes Pending with
    next_retry_at NULL inside working hours, else the next work_start.
    """
    if callback_scheduled_at is not None:
        return dial_state_reset(data_id=data_id, dial_status=CALLBACK, callback_scheduled_at=callback_scheduled_at)
    next_retry_at = None if in_work_window(now, config) else next_work_start(now, config)
    return dial_state_reset(data_id=data_id, dial_status=PENDING, next_retry_at=next_retry_at)
