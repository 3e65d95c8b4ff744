"""The supervisor board's data: per form_type a tile, per agent a row.

A tile is the engine's view of the floor (rules.views.floor.floor_state) with each campaign's
abandon `level`: "red" when the abandon limit holds its predictive claims back (the rule's own
over_limit, rules.compliance.abandons), "amber" when a window's rate is within AMBER_POINTS of the limit,
"green" otherwise. Rows are rules.agents.state_history.board_rows.
"""

from dialerapi.plumbing import clock
from dialerapi.plumbing.db import queries
from dialerapi.rules.agents import state_history
from dialerapi.rules.views import floor

# Amber within half a percentage point of the limit (rates and the limit are fractions).
AMBER_POINTS = 0.005


def level(abandons):
    """"red", "amber" or "green" for a floor_state `abandons` object."""
    if abandons["over_limit"]:
        return "red"
    limit = abandons["limit"]
    if any(window["answered"] and window["rate"] >= limit - AMBER_POINTS
           for window in abandons["windows"].values()):
        return "amber"
    return "green"


def tiles(conn, now, tz):
    """The floor at wall-clock `now` (floor.floor_state, read in the caller's snapshot transaction)
    with `level` in each form_type's abandons, its not-connected calls split into `ringing` and
    `holding` (answered, waiting for an agent) in `calls`, and `at` (ISO 8601 UTC)."""
    state = floor.floor_state(conn, now, None, tz)
    holding = {row["form_type"]: int(row["holding"]) for row in queries.floor_holding(conn)}
    for form_type in state["form_types"]:
        form_type["abandons"]["level"] = level(form_type["abandons"])
        calls = form_type["calls"]
        calls["holding"] = min(holding.get(form_type["form_type"], 0), calls["not_connected"])
        calls["ringing"] = calls["not_connected"] - calls["holding"]
    return {"at": clock.format_utc(clock.to_utc(now, tz)), **state}


def snapshot(conn, now, tz):
    """{"now" (ISO 8601 UTC to the millisecond: the service clock as the snapshot is read), "floor":
    tiles, "agents": board_rows of every agent}: the board at `now` (wall-clock, to the second)."""
    return {"now": clock.format_utc_ms(clock.utcnow()), "floor": tiles(conn, now, tz),
            "agents": state_history.board_rows(conn, now, tz)}
