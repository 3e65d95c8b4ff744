"""The dial state's pure transitions (lead-intake-api.md "States and transitions", "Dial-state
reset", "Claim and retry rules"; decisions.md D6): the push and dial-state resets, the retry rule,
and the changes a hangup, a callback, a disposition and a claim make.

The functions here compute changes and write nothing; rules.leads.dialstate applies them to
locked rows. All datetimes are naive wall-clock values in DB_TIMEZONE (decisions.md D2); `tz` is
that zone.
"""

import math
import uuid
from datetime import timedelta

from dialerapi.plumbing import clock
from dialerapi.rules.config.work_window import in_work_window, next_work_start, work_start_on
from dialerapi.rules.core.vocabulary import (
    ABANDONED,
    CALLBACK,
    CALLING,
    DISPOSED,
    NOT_CONNECTED,
    OUTCOMES,
    PENDING,
    REDIAL,
)

CALLBACK_PRIORITY_ID = 1
MAX_TRIES_REMARK = "Dialer system: max tries reached"
# An outcome's own maximum of attempts: "Dialer system: max busy attempts reached".
MAX_OUTCOME_REMARK = "Dialer system: max {outcome} attempts reached"

# The sales_master columns a dial-state change writes (queries.write_dial_state).
DIAL_STATE_COLUMNS = (
    "data_id", "priority_id", "dial_status", "previous_dial_status", "disposeRemark", "last_dial_result",
    "hangup_by", "hangup_cause", "last_attempt_at", "first_attempt_at", "next_retry_at",
    "callback_scheduled_at", "call_count", "isReserved", "reservation_id", "reserved_at",
)
# What ends a reservation (settle, a release): the lead is no longer reserved by anyone.
RESERVATION_ENDED = {"isReserved": 0, "previous_dial_status": None, "reservation_id": None, "reserved_at": None}


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


def push_next_retry_at(now, config, tz):
    """next_retry_at of a lead pushed at `now` without a callback time: None inside working hours,
    else the next work_start (lead-intake-api.md, "Dial-state reset"). It depends on the batch's
    `now` only, so a batch computes it once."""
    return None if in_work_window(now, config) else next_work_start(now, config, tz)


def push_reset(*, data_id, callback_scheduled_at, next_retry_at):
    """The dial-state reset written by a lead push (insert or update).

    With a callback time (only accepted on a callback priority) the lead becomes Callback and
    waits on callback_scheduled_at (next_retry_at NULL). Otherwise it becomes Pending with
    `next_retry_at` from push_next_retry_at.
    """
    if callback_scheduled_at is not None:
        return dial_state_reset(data_id=data_id, dial_status=CALLBACK, callback_scheduled_at=callback_scheduled_at)
    return dial_state_reset(data_id=data_id, dial_status=PENDING, next_retry_at=next_retry_at)


def new_data_id():
    return str(uuid.uuid4())


def attempts_allowed(config, day_index):
    """Attempts allowed from the first attempt's day through day `day_index` (0 = that day).

    retry_pattern gives the attempts of each working day; the allowance is cumulative, so attempts
    left over on one day carry to the next. Days past the pattern allow its last value each.
    """
    pattern = config.retry_pattern or (config.max_tries,)
    days = day_index + 1
    return sum(pattern[:days]) + max(0, days - len(pattern)) * pattern[-1]


def retry_after_no_answer(now, first_attempt_at, call_count, config, tz):
    """next_retry_at of a lead that stays Not Connected (lead-intake-api.md, Claim and retry rules 4).

    Within today's allowance (`attempts_allowed`, counted from the day of `first_attempt_at`) the
    next attempt is retry_seconds of elapsed time later, but never before work_start and only if it
    still falls before work_end; otherwise it is work_start of the first later day whose allowance
    exceeds `call_count`. Every day is a working day; days are calendar days in `tz`.
    """
    day_index = (now.date() - first_attempt_at.date()).days
    if call_count < attempts_allowed(config, day_index):
        candidate = max(clock.after(now, timedelta(seconds=config.retry_seconds), tz),
                        work_start_on(now.date(), config, tz))
        if candidate.date() == now.date() and in_work_window(candidate, config):
            return candidate
        if candidate.date() == now.date() and config.calendar is not None:
            # A campaign's day may have a break (09:00-12:00, 14:00-18:00): its next interval today.
            later = config.calendar.next_open(candidate, tz)
            if later is not None and later.date() == now.date():
                return later
    days_ahead = 1
    while call_count >= attempts_allowed(config, day_index + days_ahead) and days_ahead < 366:
        days_ahead += 1
    return work_start_on(now.date() + timedelta(days=days_ahead), config, tz)


def retry_after_delay(now, delay_seconds, config, tz):
    """next_retry_at of an outcome with a delay of its own: `delay_seconds` of elapsed
    time after `now`, or the next work_start when that falls outside the work window."""
    candidate = clock.after(now, timedelta(seconds=delay_seconds), tz)
    return candidate if in_work_window(candidate, config) else next_work_start(candidate, config, tz)


def status_before_claim(row):
    """The status a live lead was claimed from: previous_dial_status as the claim recorded it, or,
    for an engine that does not record it, what the row's counters imply."""
    if row.get("previous_dial_status"):
        return row["previous_dial_status"]
    if row["callback_scheduled_at"] is not None:
        return CALLBACK
    return NOT_CONNECTED if row["call_count"] else PENDING


def hangup_changes(row, outcome, now, config, tz, *, call_type="outbound", hangup_by=None, hangup_cause=None,
                   started_at=None, release_retry_ms=60000, outcome_attempts=0):
    """The columns a hangup changes on a live row (lead-intake-api.md, the `Calling` rows of the state table).

    `outcome` is a key of OUTCOMES. Every outcome clears the reservation. An originate failure
    restores the status from before the claim, leaves call_count and the attempt times untouched
    and retries after `release_retry_ms` milliseconds, rounded up to whole seconds. Otherwise the
    attempt is counted (except a redial that ends Not Connected), and:
    - answered -> Received, and rejected/cancelled -> Rejected: never retried;
    - no_answer/busy/congestion -> Not Connected on the retry schedule (`retry_after_no_answer`),
      or Disposed with Final Disposal once call_count reaches max_tries;
    - abandoned -> Abandoned, retried after retry_seconds unless a next_retry_at is already set.
    An outcome with a retry rule of its own (config.retry_rule: busy, no_answer,
    congestion, machine, abandoned) is retried after its delay instead (`retry_after_delay`), and
    Disposed (MAX_OUTCOME_REMARK) once `outcome_attempts`, the attempts of this cycle with this
    outcome counting this one, reach its maximum. Raises KeyError for an unknown outcome.
    """
    status, result = OUTCOMES[outcome]
    changes = dict(RESERVATION_ENDED)
    if status is None:
        # DATETIME holds whole seconds: round the delay up so the retry never comes early.
        delay = timedelta(seconds=math.ceil(release_retry_ms / 1000))
        changes.update(dial_status=status_before_claim(row), next_retry_at=clock.after(now, delay, tz))
        return changes
    counted = not (call_type == REDIAL and status == NOT_CONNECTED)
    attempt_at = started_at or now
    changes.update(
        dial_status=status, last_dial_result=result, hangup_by=hangup_by, hangup_cause=hangup_cause,
        call_count=row["call_count"] + (1 if counted else 0), last_attempt_at=attempt_at,
        first_attempt_at=row["first_attempt_at"] or attempt_at, next_retry_at=None,
    )
    delay, most = config.retry_rule(outcome)
    if status in (NOT_CONNECTED, ABANDONED) and most is not None and outcome_attempts >= most:
        changes.update(dial_status=DISPOSED, priority_id=config.disposed_priority_id,
                       disposeRemark=MAX_OUTCOME_REMARK.format(outcome=outcome))
    elif status == NOT_CONNECTED:
        if changes["call_count"] >= config.max_tries:
            changes.update(
                dial_status=DISPOSED, priority_id=config.disposed_priority_id, disposeRemark=MAX_TRIES_REMARK
            )
        elif delay is not None:
            changes["next_retry_at"] = retry_after_delay(now, delay, config, tz)
        else:
            changes["next_retry_at"] = retry_after_no_answer(
                now, changes["first_attempt_at"], changes["call_count"], config, tz
            )
    elif status == ABANDONED:
        if delay is not None:
            changes["next_retry_at"] = clock.after(now, timedelta(seconds=delay), tz)
        else:
            changes["next_retry_at"] = (row["next_retry_at"]
                                        or clock.after(now, timedelta(seconds=config.retry_seconds), tz))
    return changes


def callback_changes(scheduled_at, *, priority_id=None, owner=None):
    """A CRM callback: the dial-state reset to Callback at `scheduled_at` with a new data_id.

    send-callback-request keeps the lead's priority (priority_id None); a pending callback moves it
    to the callback priority (1). `owner`: the employee id of the agent the callback waits for
    (callback_agent_id), None for anyone.
    """
    changes = {**dial_state_reset(data_id=new_data_id(), dial_status=CALLBACK, callback_scheduled_at=scheduled_at),
               "previous_dial_status": None, "callback_agent_id": owner}
    if priority_id is not None:
        changes["priority_id"] = priority_id
    return changes


def disposition_changes(reason, config):
    """A CRM final disposition: Disposed, `CRM: <reason>`, priority Final Disposal, no callback,
    no retry, not reserved, new data_id; the engines stop claiming it."""
    return {
        "data_id": new_data_id(), "dial_status": DISPOSED, "previous_dial_status": None,
        "disposeRemark": f"CRM: {reason}", "priority_id": config.disposed_priority_id,
        "callback_scheduled_at": None, "next_retry_at": None, "isReserved": 0, "callback_agent_id": None,
    }


def claim_changes(row, now):
    """The columns a claim changes: Calling and reserved, remembering the status it left.

    The reservation gets a new reservation_id and reserved_at = `now` (wall-clock DB_TIMEZONE), from
    which its lease runs. Attempts are counted by settle, not here, so an originate failure leaves
    them untouched. A personal callback (callback_agent_id) stays its owner's until
    the call ends (dialstate.end_call), whoever took it.
    Claiming a Received, Rejected or Disposed lead (a redial or an inbound call) reopens it;
    leaving Disposed clears disposeRemark.
    """
    changes = {"dial_status": CALLING, "isReserved": 1, "previous_dial_status": row["dial_status"],
               "reservation_id": str(uuid.uuid4()), "reserved_at": now}
    if row["dial_status"] == DISPOSED:
        changes["disposeRemark"] = None
    return changes


def is_due(row, now, config):
    """True when an unreserved lead may be claimed now, in claim-order bucket terms.

    Callback: callback_scheduled_at null or not later than now, and inside the work window when
    outbound_obey_work_hours = 1. Pending and Abandoned: next_retry_at null or due. Not Connected:
    next_retry_at due. Other statuses are not claimed by the outbound claim.
    """
    if row["isReserved"]:
        return False
    status = row["dial_status"]
    if status == CALLBACK:
        due = row["callback_scheduled_at"] is None or row["callback_scheduled_at"] <= now
        return due and (not config.outbound_obey_work_hours or in_work_window(now, config))
    if status in (PENDING, ABANDONED):
        return row["next_retry_at"] is None or row["next_retry_at"] <= now
    if status == NOT_CONNECTED:
        return row["next_retry_at"] is not None and row["next_retry_at"] <= now
    return False
