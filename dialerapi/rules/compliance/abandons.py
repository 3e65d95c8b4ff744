"""The abandon rate the law counts, per campaign (docs/compliance/abandon-rate.md "Abandon rate").

What is counted, per form_type (the campaign here) and for the whole floor, the way the rules
count it (FTC TSR 16 CFR 310.4(b)(4) and the FCC's TCPA rule: 3% of live answers per campaign over
each 30-day period; Ofcom: 3% per 24 hours):
- answered: settles with outcome `answered` or `abandoned` (a live person answered);
- abandoned: settles with outcome `abandoned`, plus answered calls whose agent was connected more
  than `abandon_connect_seconds` after the customer answered (compliance abandons, also counted
  apart as late_connects);
- rate: abandoned / answered, 0 with nothing answered.

When: the customer answered at the first POST /engine/bridge of a reservation, the agent was
connected at its first POST /engine/call-connected (`mark_answered`, `mark_agent_connected`), both
on the service clock (decisions.md D2), to the second. Settle records them on the call attempt with
the campaign it was dialed in (`judge`) and counts it (`count`) in the same transaction.

Windows (`windows`), on the floor's clock (wall-clock DB_TIMEZONE, whole minutes): '15m' (the
current minute and the 14 before it), 'today' (the floor's day) and 'period', `abandon_period`:
'24h' (the current minute and the 1,439 before: Ofcom) or '30d' (today and the 29 floor days before:
every successive 30-day period of the TSR is then under the limit too). In the hour repeated when
the clocks go back, both passes of a minute count in one row: a window then counts more, never less.

The limit (`held_form_types`, read with the claim's free skills in one statement): a predictive claim of a form_type is served only while its
rate over today and over the period would stay at or under `abandon_limit` even if the call it
dials and every live predictive call no agent has taken yet (ringing or holding) or one took late
(`pending`) were answered and abandoned; otherwise, with at least `abandon_min_answered` answered in
that window, it is refused with NotClaimable `abandon_limit` (when `enforce_abandon_limit`). A
rate at or over the limit always refuses (the issue's rule); the headroom for the calls already
dialed is what keeps a reckless engine from overshooting by them before their answers come in. Progressive, redial and
inbound claims go on: an agent already waits, so they cannot abandon, and their answers bring the
rate down.

Functions take the connection first and never commit. Times are naive wall-clock DB_TIMEZONE
unless named *_utc.
"""

import json
from datetime import datetime, timedelta

from dialerapi.plumbing import clock
from dialerapi.plumbing.db import queries
from dialerapi.rules.config.ranges import ABANDON_PERIODS

ANSWERED_OUTCOMES = ("answered", "abandoned")
MACHINE = "machine"
WINDOWS = ("15m", "today", "period")
LIMIT_WINDOWS = ("today", "period")
ABANDON_LIMIT = "abandon_limit"
# Minute rows serve windows up to 24 hours back; hour rows the report's rolling 24 hours.
MINUTES_KEPT = timedelta(days=2)
HOURS_KEPT = timedelta(days=400)


def mark_answered(conn, lead, now):
    """POST /engine/bridge of the locked live `lead`: the customer answered at `now`, unless an
    earlier bridge of the same reservation said so first."""
    queries.mark_answered(conn, id=lead["id"], now=now)


def mark_agent_connected(conn, lead, now):
    """POST /engine/call-connected of the locked live `lead`: an agent took the call at `now`,
    unless an earlier call-connected of the same reservation said so first."""
    queries.mark_agent_connected(conn, id=lead["id"], now=now)


def call_moments(lead):
    """(answered_at, agent_connected_at) of the locked live `lead`'s current reservation, each None
    when unknown: a moment older than the reservation belongs to an earlier call."""
    reserved_at = lead.get("reserved_at")

    def current(moment):
        return moment if moment is not None and (reserved_at is None or moment >= reserved_at) else None

    return current(lead.get("call_answered_at")), current(lead.get("agent_connected_at"))


def judge(outcome, answered_at, connected_at, tz, config):
    """How a settled call counts: {answered, abandoned, late_connect, connect_seconds, machine}.

    connect_seconds: elapsed seconds from the answer to the agent (daylight saving counted), None
    without both moments. late_connect: an `answered` call whose agent came more than
    config.abandon_connect_seconds after the answer; it counts as abandoned. machine: outcome
    machine, neither answered nor abandoned.
    """
    connect_seconds = None
    if answered_at is not None and connected_at is not None:
        connect_seconds = round((clock.instant(connected_at, tz) - clock.instant(answered_at, tz)).total_seconds())
    late = outcome == "answered" and connect_seconds is not None and connect_seconds > config.abandon_connect_seconds
    return {"answered": outcome in ANSWERED_OUTCOMES, "abandoned": outcome == "abandoned" or late,
            "late_connect": late, "connect_seconds": connect_seconds, "machine": outcome == MACHINE}


def count(conn, form_type, now, verdict):
    """Add one settled call, judged `verdict`, to its form_type's counts of its floor day, hour and
    minute (of `now`). Run last in the settle's transaction: the counts' rows stay locked until it commits."""
    minute = now.replace(second=0, microsecond=0)
    queries.count_settle(conn, form_type=form_type, day=_day(now), hour=minute.replace(minute=0), minute=minute,
                         answered=int(verdict["answered"]), abandoned=int(verdict["abandoned"]),
                         late_connects=int(verdict["late_connect"]), machines=int(verdict["machine"]))


def mark_predictive(conn, lead):
    """A predictive claim reserved the `lead`: until an agent takes the call it may be an abandon."""
    queries.mark_predictive(conn, id=lead["id"])


CALL_MOMENTS_FORGOTTEN = {"call_answered_at": None, "agent_connected_at": None, "predictive_call": 0}


def end_of_call(lead):
    """The changes that forget the facts of the call that ended (settle, release), so a later call
    starts with none: CALL_MOMENTS_FORGOTTEN, or {} when `lead` holds none. dialstate.write_lead
    writes them with the rest of the end of the call, in its one statement."""
    facts = (lead.get("call_answered_at"), lead.get("agent_connected_at"), lead.get("predictive_call") or None)
    return dict(CALL_MOMENTS_FORGOTTEN) if any(fact is not None for fact in facts) else {}


def _day(wall):
    return datetime(wall.year, wall.month, wall.day)


def figures(answered=0, abandoned=0, late_connects=0, machines=0, share=0.0):
    """One window's {"answered", "abandoned", "late_connects", "machines", "rate"}; rate is 0 with
    nothing answered. `share` (amd_false_positive_share): that share of the machine
    outcomes is taken to be live people the dialer hung up on, and added to both answered and
    abandoned in the rate (Ofcom's estimate of answering-machine detection's false positives)."""
    answered, abandoned, machines = int(answered or 0), int(abandoned or 0), int(machines or 0)
    live, lost = _estimated(answered, abandoned, machines, share)
    return {"answered": answered, "abandoned": abandoned, "late_connects": int(late_connects or 0),
            "machines": machines, "rate": round(lost / live, 4) if live else 0.0}


def _estimated(answered, abandoned, machines, share):
    """(answered, abandoned) with `share` of `machines` added to each: the counts the rate and the limit use."""
    false_positives = float(share) * machines
    return answered + false_positives, abandoned + false_positives


def window_bounds(now, period):
    """The query parameters of the windows at `now` (see the module docstring): the floor's
    due_counts and the claim's free_skills read them."""
    minute = now.replace(second=0, microsecond=0)
    edge_minute = minute - timedelta(minutes=24 * 60 - 1)
    edge_hour = edge_minute.replace(minute=0)
    today = _day(now)
    return {"minute_from": minute - timedelta(minutes=14), "today": today, "period": period,
            "day_from": today - timedelta(days=29), "edge_minute": edge_minute, "edge_hour": edge_hour,
            "edge_hour_end": edge_hour + timedelta(hours=1)}


def period_bounds(now, config):
    """window_bounds of the floor's period, with each campaign's own: `other_period`
    (the period that is not the floor's) for the form_types of `other_period_forms` (('',) for
    none: no form_type is empty; `other_period_any` False then, so that read costs nothing), and
    `any_24h` (whether any form_type counts over 24 hours)."""
    other = ABANDON_PERIODS[1] if config.abandon_period == ABANDON_PERIODS[0] else ABANDON_PERIODS[0]
    forms = tuple(sorted(form_type for form_type in config.campaigns
                         if config.of(form_type).abandon_period != config.abandon_period))
    return {**window_bounds(now, config.abandon_period), "other_period": other, "other_period_forms": forms or ("",),
            "other_period_any": bool(forms),
            "any_24h": "24h" in (config.abandon_period, other if forms else config.abandon_period)}


def windows(conn, now, config):
    """{form_type: {"15m", "today", "period": figures}} at `now` (wall clock, DB_TIMEZONE), the
    windows floor_state reports per form_type, read alone (one statement over the counts), each
    over its campaign's period and with its campaign's share of machines. Only form_types with
    counts in the period are keys; every other form_type's windows are all zero."""
    return {row["form_type"]: windows_of(row, config.of(row["form_type"]).amd_false_positive_share)
            for row in queries.abandon_windows(conn, **period_bounds(now, config))}


def figures_of(text, share=0.0):
    """figures from the "answered;abandoned[;late_connects[;machines]]" a statement sums a window into."""
    return figures(*text.split(";"), share=share)


def windows_of(row, share=0.0):
    """{window: figures} from a floor due_counts row's window_15m, window_today and window_period."""
    return {name: figures_of(row[f"window_{name}"], share) for name in WINDOWS}


def over_limit(window_figures, config, pending=0, limit=None):
    """True when the limit holds predictive claims back on this window: with at least
    abandon_min_answered answered in it, the rate would be over config.abandon_limit (or `limit`,
    a share: the simulator's `abandon` pacing rule holds its own aim) if the call about to be
    dialed and every `pending` call (predictive, live, no agent yet, or one late) were answered and
    abandoned. So a claim is served only while even that leaves the rate at or under the limit; a
    rate at or over the limit always holds them back."""
    answered, abandoned = _estimated(window_figures["answered"], window_figures["abandoned"],
                                     window_figures.get("machines", 0), config.amd_false_positive_share)
    if answered < config.abandon_min_answered:
        return False
    worst = pending + 1
    return (abandoned + worst) / (answered + worst) > (config.abandon_limit if limit is None else limit)


def held(form_windows, pending, config):
    """True when the limit holds the form_type's predictive claims back: today or the period is over."""
    return any(over_limit(form_windows[name], config, pending) for name in LIMIT_WINDOWS)


def summary(form_windows, pending, config):
    """The "abandons" object of one form_type (POST /engine/floor, the 409): {"limit", "period",
    "min_answered", "enforced", "pending", "over_limit", "windows"}; over_limit: `held`."""
    return {"limit": config.abandon_limit, "period": config.abandon_period, "min_answered": config.abandon_min_answered,
            "enforced": config.enforce_abandon_limit, "pending": pending,
            "over_limit": held(form_windows, pending, config), "windows": form_windows}


def connect_params(config):
    """The parameters of a pending call's late connect (claims.sql free_skills, floor.sql
    floor_calls): the floor's `connect_seconds` and, as a JSON array of {form_type, seconds},
    each campaign's that differs from it."""
    own = [{"form_type": form_type, "seconds": config.of(form_type).abandon_connect_seconds}
           for form_type in sorted(config.campaigns)]
    return {"connect_seconds": config.abandon_connect_seconds,
            "connect_seconds_by_form": json.dumps([item for item in own
                                                   if item["seconds"] != config.abandon_connect_seconds])}


def limit_params(now, config):
    """The parameters of claims.sql free_skills' abandon counts at `now` (enforce: whether to read
    them: the floor or a campaign enforces its limit), each form_type over its campaign's period
    and with its campaign's connect seconds."""
    bounds = period_bounds(now, config)
    enforced = config.enforce_abandon_limit or any(config.of(form_type).enforce_abandon_limit
                                                   for form_type in config.campaigns)
    return {"enforce": enforced, **connect_params(config),
            **{name: bounds[name] for name in ("today", "period", "other_period", "other_period_forms", "day_from",
                                               "edge_minute", "edge_hour", "edge_hour_end")}}


def held_form_types(rows, config):
    """{form_type: summary} of the free_skills `rows` whose predictive claims the limit holds back
    now, each by its campaign's rule (config.of: limit, minimum answered, share of machines,
    enforcement). Rows read without enforcement carry no counts and hold nothing."""
    found = {}
    for row in rows:
        own = config.of(row["form_type"])
        if not own.enforce_abandon_limit or row["pending"] is None:
            continue
        form_windows = {name: figures_of(row[name], own.amd_false_positive_share) for name in LIMIT_WINDOWS}
        if held(form_windows, int(row["pending"]), own):
            found[row["form_type"]] = summary(form_windows, int(row["pending"]), own)
    return found


def prune(conn, now):
    """Delete minute rows older than MINUTES_KEPT and hour rows older than HOURS_KEPT; day rows stay."""
    return queries.prune_abandon_counts(conn, minutes_before=now - MINUTES_KEPT, hours_before=now - HOURS_KEPT)


def floor_total(form_windows, share=0.0):
    """The whole floor's windows: the sums of the form_types' figures, the rate worked out again."""
    total = {name: {"answered": 0, "abandoned": 0, "late_connects": 0, "machines": 0} for name in WINDOWS}
    for per_form_type in form_windows:
        for name, window in per_form_type.items():
            sums = total[name]
            for key in sums:
                sums[key] += window[key]
    return {name: figures(**sums, share=share) for name, sums in total.items()}


def report(conn, first_day, last_day, config, form_type=None):
    """The compliance record of `first_day`..`last_day` (dates of the floor's days, both included).

    Returns {"from", "to", "limit", "period" (the floor's), "days": [{"day", "form_type", "calls",
    "answered", "abandoned", "late_connects", "rate"}, ...] (each form_type's days with a settle,
    then the floor's, form_type "*"), "highest": [{"form_type", "limit", "period", "rate",
    "answered", "abandoned", "ends", "over_limit": the rate was over its limit}]}: per form_type, the
    highest rate over any legal period of its campaign's abandon rule (config.of) that
    ends inside the range, and for "*" over the floor's (30d: the 30 floor days ending on `ends`, a
    date; 24h: the 24 hours ending at `ends`, on the hour), counting the settles before `first_day`
    that the period reaches. A form_type's days count its campaign's machine share.
    Reads day rows (and hour rows where a 24h rule applies): a year costs a few thousand rows.
    """
    start, end = _day(first_day), _day(last_day) + timedelta(days=1)
    day_rows = _series(conn, "d", start - timedelta(days=29), end, form_type)
    rule = {name: config.of(name) for name in {row["form_type"] for row in day_rows}} | {"*": config}
    days = [{"day": f"{row['starts_at']:%Y-%m-%d}", **_row_figures(row, rule[row["form_type"]].amd_false_positive_share)}
            for row in day_rows if row["starts_at"] >= start]
    floor_days = {}
    for row in days:
        sums = floor_days.setdefault(row["day"], dict.fromkeys(("calls", "answered", "abandoned", "late_connects",
                                                                "machines"), 0))
        for key in sums:
            sums[key] += row[key]
    days += [{"day": day, "form_type": "*", "calls": sums["calls"],
              **figures(sums["answered"], sums["abandoned"], sums["late_connects"], sums["machines"],
                        config.amd_false_positive_share)}
             for day, sums in sorted(floor_days.items())]
    periods = {
        "30d": (day_rows, [start + timedelta(days=n + 1) for n in range((end - start).days)],
                timedelta(days=30), timedelta(days=1), "%Y-%m-%d"),
    }
    if any(each.abandon_period == "24h" for each in rule.values()):
        periods["24h"] = (_series(conn, "h", start - timedelta(hours=23), end, form_type),
                          [start + timedelta(hours=n + 1) for n in range(int((end - start).total_seconds()) // 3600)],
                          timedelta(hours=24), timedelta(0), "%Y-%m-%d %H:%M:%S")
    highest = _highest(periods, rule)
    return {"from": f"{start:%Y-%m-%d}", "to": f"{last_day:%Y-%m-%d}", "limit": config.abandon_limit,
            "period": config.abandon_period, "days": days, "highest": highest}


def _series(conn, grain, starts_from, starts_before, form_type):
    return list(queries.abandon_series(conn, grain=grain, form_type=form_type, all_form_types=form_type is None,
                                       starts_from=starts_from, starts_before=starts_before))


def _row_figures(row, share):
    return {"form_type": row["form_type"], "calls": int(row["calls"]),
            **figures(row["answered"], row["abandoned"], row["late_connects"], row["machines"], share)}


def _highest(periods, rule):
    """Per form_type and "*" (the keys of `rule`, each its DialerConfig): the highest rate over its
    abandon_period ending at each of that period's ends (the first moment after it). `periods`:
    {abandon_period: (rows, ends, length, end_offset, end_format)}; ends are named minus end_offset
    (a 30-day period ends *on* a day)."""
    by_period = {}
    for period, (rows, *_) in periods.items():
        by_form_type = by_period[period] = {}
        for row in rows:
            for name in (row["form_type"], "*"):
                sums = by_form_type.setdefault(name, {}).setdefault(row["starts_at"], [0, 0, 0])
                sums[0] += int(row["answered"])
                sums[1] += int(row["abandoned"])
                sums[2] += int(row["machines"])
    highest = []
    for name in sorted(rule, key=lambda item: (item == "*", item)):
        config = rule[name]
        _, ends, length, end_offset, end_format = periods[config.abandon_period]
        points = sorted(by_period[config.abandon_period].get(name, {}).items())
        best, counts, first, last = None, [0, 0, 0], 0, 0
        # One pass: the window (period_end - length, period_end] slides over the sorted rows.
        for period_end in ends:
            while last < len(points) and points[last][0] < period_end:
                counts, last = [a + b for a, b in zip(counts, points[last][1])], last + 1
            while first < last and points[first][0] < period_end - length:
                counts, first = [a - b for a, b in zip(counts, points[first][1])], first + 1
            answered, abandoned, machines = counts
            window = figures(answered, abandoned, machines=machines, share=config.amd_false_positive_share)
            if answered and (best is None or window["rate"] > best["rate"]):
                best = {"form_type": name, "limit": config.abandon_limit, "period": config.abandon_period,
                        "rate": window["rate"], "answered": answered, "abandoned": abandoned,
                        "ends": f"{period_end - end_offset:{end_format}}",
                        "over_limit": window["rate"] > config.abandon_limit}
        if best is not None:
            highest.append(best)
    return highest
