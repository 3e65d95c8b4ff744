"""The floor's caller-ID pools today, as the board, /health, /metrics and /engine/floor show them
(docs/operations/caller-ids.md "Watched"): a pacing engine slows before a pool runs dry, an
operator buys numbers before it does; and each day's start for the claim's read (`start_day`).
"""

from dialerapi.plumbing.db import queries
from dialerapi.rules.caller_ids import numbers
from dialerapi.rules.caller_ids.choice import pool_of


def report(conn, now, config, form_types):
    """Each pool a number is in or a campaign presents from, in pool order: [{pool, active, at_cap,
    flagged, retired, capacity_today (the calls its active numbers may present a day), headroom_today
    (those still left today), headroom_share (headroom over capacity; 0 with no active number),
    used_by (the `form_types` presenting from it), low (under the floor's caller_id_headroom_share),
    empty (a campaign presents from it and no number is active)}]. `now` is wall-clock DB_TIMEZONE;
    `config` the floor's DialerConfig. [] while the floor has no caller IDs."""
    if not config.caller_ids_on:
        return []
    used_by = {}
    for form_type in form_types:
        used_by.setdefault(pool_of(config.of(form_type)), []).append(form_type)
    rows = {row["pool"]: row for row in queries.caller_id_pools_today(conn, today=now.date(),
                                                                       floor_cap=config.caller_id_daily_cap)}
    pools = []
    for pool in sorted(set(rows) | set(used_by)):
        row = rows.get(pool, {})
        capacity, headroom = int(row.get("capacity") or 0), int(row.get("headroom") or 0)
        share = round(headroom / capacity, 4) if capacity else 0.0
        active = int(row.get("active") or 0)
        pools.append({
            "pool": pool, "active": active, "at_cap": int(row.get("at_cap") or 0),
            "flagged": int(row.get("flagged") or 0), "retired": int(row.get("retired") or 0),
            "capacity_today": capacity, "headroom_today": headroom, "headroom_share": share,
            "used_by": used_by.get(pool, []), "low": share < config.caller_id_headroom_share,
            "empty": bool(used_by.get(pool)) and active == 0,
        })
    return pools


def check(pools):
    """/health's caller-ID check of a `report`: {ok (no campaign's pool is empty), empty: [pool],
    low: [pool], error (why not ok, or None)}. A low pool is named, and not a failure: its calls go on."""
    empty = [pool["pool"] for pool in pools if pool["empty"]]
    low = [pool["pool"] for pool in pools if pool["low"] and not pool["empty"]]
    error = None
    if empty:
        error = f"no active caller ID in pool {', '.join(empty)}, which a campaign presents from: its leads are passed over"
    return {"ok": not empty, "empty": empty, "low": low, "error": error}


def start_day(conn, now):
    """Rank every pool row not presented yet on `now`'s day (wall-clock DB_TIMEZONE) as none today,
    so a claim finds those numbers in its index's order instead of sorting them (migration 0027;
    the caller_id_day job, every minute). Returns how many rows it ranked."""
    return queries.start_caller_id_day(conn, day_key=numbers.day_key(now.date()))
