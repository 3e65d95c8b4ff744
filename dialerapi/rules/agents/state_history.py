"""Agent state history, the supervisor board's agent rows and the agent time report.

An agent's state is what `states.unavailable_reason` makes of the five availability columns of
sales_agents (panel_active, pause_code, ami_idle, wrapup_until, outbound_blocked): the one rule of
who may take a call names the state, in that rule's order (STATES). Every function that writes those
columns calls `record` in its transaction, which copies them into dialerapi_agent_states when they
differ from the agent's last row (migration 0018). A state lasts until the next row; a wrap-up ends
at its wrapup_until (wall-clock DB_TIMEZONE), which no row marks, so `pieces` splits it there.

Moments in the history are naive UTC to the second, from the service's one clock (decisions.md D2);
report days are wall-clock days in DB_TIMEZONE. Functions take the connection first and never commit.
"""

import json
from datetime import datetime, time, timedelta, timezone

from dialerapi.plumbing import clock
from dialerapi.plumbing.db import queries
from dialerapi.rules.agents.availability import unavailable_reason

# unavailable_reason's answer -> the state's name, as /engine/floor counts agents.
STATES = {None: "free", "ami_busy": "on_call", "wrap_up": "wrap_up", "paused": "paused",
          "outbound_blocked": "outbound_blocked", "panel_inactive": "panel_inactive"}
REPORT_COLUMNS = ("agent_id", "day", "login_seconds", "free_seconds", "talk_seconds", "wrap_up_seconds",
                  "blocked_seconds", "pause_seconds", "calls", "answered_calls", "pause")
# A report covers at most this many days: a quarter, well inside AGENT_STATE_RETENTION_DAYS' default.
MAX_REPORT_DAYS = 92
PRUNE_BATCH = 5000
# A history row's moment is taken in its transaction, which may commit a while later (a statement
# waits at most 60 s, and Galera applies a node's commits on the others a moment after): a roll-up
# reaches no nearer to now than this, so no row can commit behind it.
LATE_COMMIT = timedelta(seconds=120)


def record(conn, agent_ids, at_utc=None):
    """Record the availability of `agent_ids` (an iterable of ints) at `at_utc` (naive UTC; the
    service clock's now when None) for each whose columns differ from their last history row.

    Call it in the transaction that changed sales_agents, after the change: the caller holds the
    agent rows' locks, so one agent's rows are written in the order its changes commit. Returns how
    many rows were written.
    """
    agent_ids = tuple(sorted(set(agent_ids)))
    if not agent_ids:
        return 0
    at_utc = at_utc or clock.utcnow().replace(tzinfo=None, microsecond=0)
    return queries.record_states(conn, agent_ids=agent_ids, at_utc=at_utc)


def state_of(row, now):
    """The state name (STATES) of a row with the five availability columns at wall-clock `now`."""
    return STATES[unavailable_reason(row, now)]


def _settled(row):
    """The state of a history row once its wrap-up (if any) is over: the rule read at the end of time."""
    return STATES[unavailable_reason(row, datetime.max)]


def pieces(row, start, end, tz):
    """The states one history `row` stands for between `start` and `end` (naive UTC, start < end):
    [(state, pause_code or None, start, end)], split at its wrap-up's end when that falls inside."""
    settled = _settled(row)
    wrapup_end = clock.to_utc(row["wrapup_until"], tz)
    code = row["pause_code"] or None if settled == "paused" else None
    # Wrap-up outranks only the outbound block and free (states.unavailable_reason's order).
    if settled in ("free", "outbound_blocked") and wrapup_end is not None and wrapup_end > start:
        middle = min(wrapup_end, end)
        out = [("wrap_up", None, start, middle)]
        if middle < end:
            out.append((settled, None, middle, end))
        return out
    return [(settled, code, start, end)]


def _day_bounds(day, tz):
    """The naive UTC instants a wall-clock day of `tz` starts and ends at."""
    start = datetime.combine(day, time())
    return clock.to_utc(start, tz), clock.to_utc(start + timedelta(days=1), tz)


def empty_day(agent_id, day):
    """A report row of no time at all."""
    return {"agent_id": agent_id, "day": day.isoformat(), "login_seconds": 0, "free_seconds": 0,
            "talk_seconds": 0, "wrap_up_seconds": 0, "blocked_seconds": 0, "pause_seconds": 0,
            "calls": 0, "answered_calls": 0, "pause": {}}


_SECONDS = {"free": "free_seconds", "on_call": "talk_seconds", "wrap_up": "wrap_up_seconds",
            "outbound_blocked": "blocked_seconds", "paused": "pause_seconds"}


def days_from_history(rows, first_day, last_day, start_utc, end_utc, tz, through_end):
    """Report rows {(agent_id, day): row} from history `rows` (queries.state_rows: per agent in
    order, each with `ends_utc`, the first the last row before `start_utc`) over the wall-clock days
    first_day..last_day of `tz`, counting the time from `start_utc` to `end_utc` (naive UTC).

    A call is a change into on_call, counted on the day it starts (once: a pause taken during the
    call and ended before it, the agent's AMI busy throughout, does not start another), from `start_utc` to before
    `end_utc`, or to `end_utc` itself when `through_end` (the end is now: a call that began this
    very second counts already); answered calls are added by the caller. login_seconds is every
    second not panel_inactive, so it is the sum of the free, talk, wrap-up, blocked and pause seconds.
    """
    bounds = [(first_day + timedelta(days=n), *_day_bounds(first_day + timedelta(days=n), tz))
              for n in range((last_day - first_day).days + 1)]
    range_start, range_end = max(bounds[0][1], start_utc), min(bounds[-1][2], end_utc)
    report = {}
    # (agent_id, whether the call of the agent's current AMI-busy stretch was seen): a pause taken
    # during a call and ended before it is one call, not two.
    seen = (None, False)
    for row in rows:
        agent_id = row["agent_id"]
        start = max(row["at_utc"], range_start)
        end = min(row["ends_utc"] or range_end, range_end)
        for state, code, piece_start, piece_end in pieces(row, start, end, tz) if start < end else ():
            if state == "panel_inactive":  # not logged in: no time of the report's
                continue
            for day, day_start, day_end in bounds:
                seconds = int((min(piece_end, day_end) - max(piece_start, day_start)).total_seconds())
                if seconds <= 0:
                    continue
                entry = report.setdefault((agent_id, day), empty_day(agent_id, day))
                entry["login_seconds"] += seconds
                entry[_SECONDS[state]] += seconds
                if code:
                    entry["pause"][code] = entry["pause"].get(code, 0) + seconds
        state = _settled(row)
        at = row["at_utc"]
        call_seen = seen[1] and seen[0] == agent_id and not row["ami_idle"]
        if state == "on_call" and not call_seen and range_start <= at \
                and (at < range_end or (through_end and at == range_end)):
            day = next((day for day, day_start, day_end in bounds if day_start <= at < day_end), None)
            if day is not None:
                report.setdefault((agent_id, day), empty_day(agent_id, day))["calls"] += 1
        seen = (agent_id, call_seen or state == "on_call")
    return report


def report_days(conn, first_day, last_day, tz, start_utc, end_utc, agent_ids=None, through_end=True):
    """The agent time report of the wall-clock days first_day..last_day (dates, DB_TIMEZONE) from the
    history between `start_utc` and `end_utc` (naive UTC, within those days; `through_end`: the end
    is now, see days_from_history), for every agent or only `agent_ids`: {(agent_id, day): row},
    each row REPORT_COLUMNS (seconds; `day` YYYY-MM-DD; `pause` {code: seconds}). An agent and day
    with no time and no call has no row."""
    selector = {"all_agents": agent_ids is None, "agent_ids": tuple(agent_ids or ()) or (0,)}
    # With `through_end`, the rows of the second `end_utc` is in are read too: a change made this
    # second is on the board.
    read_to = end_utc + timedelta(seconds=1) if through_end else end_utc
    rows = queries.state_rows(conn, from_utc=start_utc, to_utc=read_to, **selector)
    report = days_from_history(rows, first_day, last_day, start_utc, end_utc, tz, through_end)
    for row in queries.answered_calls(conn, from_wall=clock.wall(_aware(start_utc), tz),
                                      to_wall=clock.wall(_aware(read_to), tz), **selector):
        entry = report.setdefault((row["agent_id"], row["day"]), empty_day(row["agent_id"], row["day"]))
        entry["answered_calls"] += int(row["answered"])
    return report


def _aware(moment):
    return moment.replace(tzinfo=timezone.utc)


def _add(report, rows):
    """Add report `rows` ({(agent_id, day): row}) into `report` (the same shape), column by column."""
    for key, row in rows.items():
        entry = report.get(key)
        if entry is None:
            report[key] = row
            continue
        for column in REPORT_COLUMNS[2:-1]:
            entry[column] += row[column]
        for code, seconds in row["pause"].items():
            entry["pause"][code] = entry["pause"].get(code, 0) + seconds


def days_report(conn, first_day, last_day, now_utc, tz, agent_ids=None):
    """{(agent_id, day): report row} over the wall-clock days first_day..last_day up to `now_utc`:
    each day's roll-up (dialerapi_agent_days) as far as it reaches, and the history after it."""
    rolled = {row["day"]: row["rolled_to_utc"]
              for row in queries.rolled_days(conn, first_day=first_day, last_day=last_day)}
    selector = {"all_agents": agent_ids is None, "agent_ids": tuple(agent_ids or ()) or (0,)}
    report = {}
    if rolled:
        for row in queries.agent_days(conn, first_day=first_day, last_day=last_day, **selector):
            day_row = json.loads(row["report"])
            report[(day_row["agent_id"], row["day"])] = day_row
    day = first_day
    while day <= last_day:
        start = rolled.get(day) or _day_bounds(day, tz)[0]
        if start >= min(_day_bounds(day, tz)[1], now_utc):
            day += timedelta(days=1)
            continue
        # The days after it with no roll-up at all are read with it, in one statement.
        run_end = day
        while run_end < last_day and run_end + timedelta(days=1) not in rolled:
            run_end += timedelta(days=1)
        end = min(_day_bounds(run_end, tz)[1], now_utc)
        if start <= end:
            _add(report, report_days(conn, day, run_end, tz, start, end, agent_ids, through_end=end == now_utc))
        day = run_end + timedelta(days=1)
    return report


def report(conn, first_day, last_day, now, tz, agent_ids=None):
    """The agent time report (`dialerapi report agents`, GET /api/reports/agents) over the
    wall-clock days first_day..last_day (dates, DB_TIMEZONE; at most MAX_REPORT_DAYS), at wall-clock
    `now`: {"from", "to", "timezone", "days": [row per agent and day, REPORT_COLUMNS], "agents":
    [totals per agent, the same columns without `day`]}. Seconds throughout. Each day comes from its
    roll-up (dialerapi_agent_days, made by the job every ROLL_UP_SECONDS, today's too) and the
    history after it. Raises ValueError for a range that is backwards or longer than MAX_REPORT_DAYS."""
    if last_day < first_day:
        raise ValueError("the range ends before it starts")
    if (last_day - first_day).days + 1 > MAX_REPORT_DAYS:
        raise ValueError(f"the range is over {MAX_REPORT_DAYS} days")
    rows = days_report(conn, first_day, last_day, clock.to_utc(now, tz), tz, agent_ids)
    days = [rows[key] for key in sorted(rows)]
    return {"from": first_day.isoformat(), "to": last_day.isoformat(), "timezone": str(tz),
            "days": days, "agents": totals(days)}


def totals(days):
    """Per agent, the sums of report rows `days` (without `day`), in agent order."""
    out = {}
    for row in days:
        entry = out.setdefault(row["agent_id"], {**empty_day(row["agent_id"], datetime.min.date())})
        for column in REPORT_COLUMNS[2:-1]:
            entry[column] += row[column]
        for code, seconds in row["pause"].items():
            entry["pause"][code] = entry["pause"].get(code, 0) + seconds
    for entry in out.values():
        entry.pop("day")
    return [out[agent_id] for agent_id in sorted(out)]


def roll_up(conn, day, now, tz):
    """Bring the roll-up of the wall-clock `day` (a date, DB_TIMEZONE) in dialerapi_agent_days up to
    LATE_COMMIT before `now` (wall-clock; the day's end once that is past): its rows so far plus the
    history since they were made, one row per agent with time that day. Returns how many rows it wrote. Run by the job
    every ROLL_UP_SECONDS for today and every closed day not rolled up to its end."""
    now_utc = clock.to_utc(now, tz)
    day_start, day_end = _day_bounds(day, tz)
    end = min(day_end, now_utc - LATE_COMMIT)
    rolled = {row["day"]: row["rolled_to_utc"] for row in queries.rolled_days(conn, first_day=day, last_day=day)}
    start = rolled.get(day) or day_start
    if start >= end:
        return 0
    rows = {}
    if day in rolled:
        for row in queries.agent_days(conn, first_day=day, last_day=day, all_agents=True, agent_ids=(0,)):
            day_row = json.loads(row["report"])
            rows[(day_row["agent_id"], day)] = day_row
    added = report_days(conn, day, day, tz, start, end, through_end=False)
    _add(rows, added)
    # Every agent's row moves its rolled_to_utc, so the day's reach is the same for all of them.
    for key in sorted(rows):
        queries.upsert_agent_day(conn, agent_id=key[0], day=day, report=json.dumps(rows[key]), rolled_to_utc=end)
    return len(rows)


def days_to_roll_up(conn, now, tz, retention_days):
    """The wall-clock days (dates, within `retention_days` of `now`'s) with history whose roll-up
    does not reach their end yet, oldest first; today always, when there is history."""
    first = queries.first_state_at(conn)
    if first is None:
        return []
    today = now.date()
    start = max(clock.wall(_aware(first), tz).date(), today - timedelta(days=retention_days))
    rolled = {row["day"]: row["rolled_to_utc"] for row in queries.rolled_days(conn, first_day=start, last_day=today)}
    days = [start + timedelta(days=n) for n in range((today - start).days + 1)]
    return [day for day in days if day == today or rolled.get(day) is None or rolled[day] < _day_bounds(day, tz)[1]]


def prune(conn, before_utc):
    """Delete up to PRUNE_BATCH history rows older than `before_utc` (naive UTC), keeping each
    agent's last one before it, and roll-ups of days before it; returns how many rows went."""
    states = queries.prune_agent_states(conn, before=before_utc, max_rows=PRUNE_BATCH)
    return states + queries.prune_agent_days(conn, before=before_utc.date(), max_rows=PRUNE_BATCH)


def board_rows(conn, now, tz, agent_ids=None):
    """The supervisor board's agent rows at wall-clock `now`, for every agent or only
    `agent_ids`: [{agent_id, name, extension, skills: [form_type], state (STATES), since (ISO 8601
    UTC: the moment the state began, the first history row of the run showing it, so a change it
    does not show, the AMI or the outbound block while paused, keeps it; a wrap-up that
    ended began "free" (or the outbound block) at its end, a pause taken during it when it was
    taken), pause_code,
    reason_note, form_type (of the call the agent is on, else null), wrapup_until (ISO 8601 UTC or
    null), calls, talk_seconds (today, DB_TIMEZONE)}] in agent order."""
    selector = {"all_agents": agent_ids is None, "agent_ids": tuple(agent_ids or ()) or (0,)}
    agents = list(queries.board_agents(conn, **selector))
    today = now.date()
    now_utc = clock.to_utc(now, tz)
    days = {agent_id: row for (agent_id, _), row in days_report(conn, today, today, now_utc, tz, agent_ids).items()}
    out = []
    for agent in agents:
        state = state_of(agent, now)
        wrapup_end = clock.to_utc(agent["wrapup_until"], tz)
        since = agent["since_utc"]
        # Only a state wrap-up outranks (free, the outbound block: `pieces`) begins at its end; a
        # pause taken during the wrap-up began when it was taken.
        if state in ("free", "outbound_blocked") and since is not None and wrapup_end is not None \
                and since < wrapup_end <= now_utc:
            since = wrapup_end
        day = days.get(agent["agent_id"]) or empty_day(agent["agent_id"], today)
        out.append({
            "agent_id": agent["agent_id"], "name": agent["name"], "extension": agent["extension"],
            "skills": agent["skills"].split(";") if agent["skills"] else [], "state": state,
            "since": clock.format_utc(since), "pause_code": agent["pause_code"] or None,
            "reason_note": agent["reason_note"], "form_type": agent["call_form_type"],
            "wrapup_until": clock.format_utc(wrapup_end) if state == "wrap_up" else None,
            "calls": day["calls"], "talk_seconds": day["talk_seconds"],
        })
    return out
