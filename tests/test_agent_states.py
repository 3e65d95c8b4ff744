"""The agent state history and the agent time report (issue #49): every change of an agent's
availability (lead-intake-api.md "Claim and retry rules" 1 and 6; decisions.md D7, D9) is recorded
in its transaction at the service clock's moment (D2), and the report adds a shift up from it to
the second, login time being the sum of the rest."""

import json
import threading
from datetime import date, datetime, timedelta

import pytest

from conftest import utc_naive, utc_text
from dialerapi.plumbing.db import get_db
from dialerapi.rules.agents import roster, state_history

DAY = date(2026, 11, 21)


def at(hour, minute, second=0, day=DAY):
    return datetime(day.year, day.month, day.day, hour, minute, second)


@pytest.fixture
def engine_state(client, engine_auth, frozen_clock):
    """POST /engine/agent-state for agent 501 at wall-clock `moment`."""

    def post(moment, **body):
        frozen_clock(moment)
        response = client.post("/engine/agent-state", json={"agent_id": 501, **body}, headers=engine_auth)
        assert response.status_code == 200, response.get_json()
        return response.get_json()["agent"]

    return post


def history(sql, agent_id=501):
    return sql("SELECT at_utc, panel_active, pause_code, ami_idle, wrapup_until, outbound_blocked"
               " FROM dialerapi_agent_states WHERE agent_id = %s ORDER BY at_utc, id", agent_id)


def morning(engine_state, run, frozen_clock):
    """Agent 501 opens the panel at 09:00, takes a call 09:10-09:15 with a minute of wrap-up, and
    is at lunch 09:30-10:00."""
    engine_state(at(9, 0), panel_active=True, ami_idle=True)
    engine_state(at(9, 10), ami_idle=False)
    engine_state(at(9, 15), ami_idle=True, wrapup_seconds=60)
    frozen_clock(at(9, 30))
    run(roster.pause, 501, "lunch")
    frozen_clock(at(10, 0))
    run(roster.resume, 501)


def test_every_change_is_recorded_once_at_the_service_clock(floor_agent, sql, engine_state, run, frozen_clock, tz):
    floor_agent(501, panel_active=0)
    morning(engine_state, run, frozen_clock)
    engine_state(at(10, 1), panel_active=True, ami_idle=True)  # nothing changed: no row
    rows = history(sql)
    assert [row["at_utc"] for row in rows] == [utc_naive(at(h, m)) for h, m in ((9, 0), (9, 10), (9, 15), (9, 30), (10, 0))]
    assert [(row["panel_active"], row["ami_idle"], row["pause_code"]) for row in rows] == [
        (1, 1, None), (1, 0, None), (1, 1, None), (1, 1, "lunch"), (1, 1, None)]
    assert rows[2]["wrapup_until"] == at(9, 16), "the wrap-up's end as sales_agents holds it (wall-clock)"


def test_a_failed_change_records_nothing(floor_agent, sql, client, engine_auth):
    floor_agent(501)
    response = client.post("/engine/agent-state", json={"agent_id": 999, "ami_idle": False}, headers=engine_auth)
    assert response.status_code == 404
    assert sql("SELECT * FROM dialerapi_agent_states") == []


def test_the_blocking_refresh_records_a_block_and_its_end(floor_agent, sql, run, frozen_clock, tz, new_lead,
                                                          open_missed_activity):
    floor_agent(501)
    new_lead("OLI-1")
    open_missed_activity("OLI-1", connected_at=at(9, 50), ended_at=at(9, 52), due_at=at(9, 54))
    frozen_clock(at(10, 0))
    assert run(roster.refresh_blocking, at(10, 0), tz) == {501: True}
    frozen_clock(at(10, 5))
    run(roster.clear_for_lead, "OLI-1", "crm", at(10, 5), tz)
    assert [(row["at_utc"], row["outbound_blocked"]) for row in history(sql)] == [
        (utc_naive(at(10, 0)), 1), (utc_naive(at(10, 5)), 0)]


def shift(engine_state, run, frozen_clock, tz, new_lead, open_missed_activity):
    """A morning of agent 501: two calls, a wrap-up, lunch, an outbound block, the panel closed at 10:20."""
    morning(engine_state, run, frozen_clock)
    engine_state(at(10, 5), ami_idle=False)
    engine_state(at(10, 7), ami_idle=True, wrapup_seconds=0)
    new_lead("OLI-1")
    open_missed_activity("OLI-1", connected_at=at(10, 5), ended_at=at(10, 7), due_at=at(10, 9))
    frozen_clock(at(10, 10))
    run(roster.refresh_blocking, at(10, 10), tz)
    frozen_clock(at(10, 15))
    run(roster.clear_for_lead, "OLI-1", "crm", at(10, 15), tz)
    engine_state(at(10, 20), panel_active=False)


# The shift's figures, worked out by hand: login 09:00-10:20.
SHIFT = {"agent_id": 501, "day": "2026-11-21", "login_seconds": 4800, "talk_seconds": 5 * 60 + 2 * 60,
         "wrap_up_seconds": 60, "pause_seconds": 1800, "pause": {"lunch": 1800}, "blocked_seconds": 300,
         "free_seconds": 600 + 840 + 300 + 180 + 300, "calls": 2, "answered_calls": 1}


def test_the_report_adds_a_shift_up_to_the_second(floor_agent, engine_state, run, frozen_clock, tz, new_lead,
                                                  open_missed_activity, client):
    floor_agent(501, panel_active=0)
    shift(engine_state, run, frozen_clock, tz, new_lead, open_missed_activity)
    frozen_clock(at(11, 0))
    report = run(state_history.report, DAY, DAY, at(11, 0), tz)
    assert report["days"] == [SHIFT]
    assert report["agents"] == [{key: value for key, value in SHIFT.items() if key != "day"}]
    row = report["days"][0]
    assert row["login_seconds"] == sum(row[key] for key in ("free_seconds", "talk_seconds", "wrap_up_seconds",
                                                            "blocked_seconds", "pause_seconds"))


def test_login_is_the_sum_of_the_states_for_every_agent_of_a_busy_floor(floor_agent, run, frozen_clock, tz, sql):
    """16 agents change state at random moments (the same sequence every run): each agent's totals
    add up to their login time, and that equals the panel-open time worked out from the history."""
    import random
    chooser = random.Random(49)
    for agent_id in range(601, 617):
        floor_agent(agent_id, panel_active=0)
    moment = at(8, 0)
    for _ in range(400):
        moment += timedelta(seconds=chooser.randint(1, 120))
        agent_id = chooser.randint(601, 616)
        frozen_clock(moment)
        choice = chooser.random()
        if choice < 0.15:
            run(roster.pause, agent_id, chooser.choice(["lunch", "tea", "bio"]))
        elif choice < 0.3:
            run(roster.resume, agent_id)
        else:
            run(roster.set_availability, agent_id, panel_active=chooser.random() < 0.85,
                ami_idle=chooser.random() < 0.5,
                wrapup_until=moment + timedelta(seconds=chooser.randint(0, 90)) if chooser.random() < 0.5 else None)
    end = moment + timedelta(minutes=5)
    report = run(state_history.report, DAY, DAY, end, tz)
    assert len(report["agents"]) == 16
    for row in report["agents"]:
        parts = sum(row[key] for key in ("free_seconds", "talk_seconds", "wrap_up_seconds", "blocked_seconds",
                                         "pause_seconds"))
        assert row["login_seconds"] == parts and row["pause_seconds"] == sum(row["pause"].values())
        rows = history(sql, row["agent_id"])
        ends = [r["at_utc"] for r in rows[1:]] + [utc_naive(end)]
        panel_open = sum((e - r["at_utc"]).total_seconds() for r, e in zip(rows, ends) if r["panel_active"])
        assert row["login_seconds"] == panel_open


def test_a_shift_across_midnight_is_split_at_the_day(floor_agent, engine_state, run, tz):
    floor_agent(501, panel_active=0)
    engine_state(at(23, 50), panel_active=True, ami_idle=True)
    engine_state(at(0, 10, day=DAY + timedelta(days=1)), panel_active=False)
    report = run(state_history.report, DAY, DAY + timedelta(days=1), at(12, 0, day=DAY + timedelta(days=1)), tz)
    assert [(row["day"], row["login_seconds"], row["free_seconds"]) for row in report["days"]] == [
        ("2026-11-21", 600, 600), ("2026-11-22", 600, 600)]


def test_a_closed_day_is_rolled_up_and_read_back_the_same(floor_agent, engine_state, run, frozen_clock, tz,
                                                          new_lead, open_missed_activity, sql):
    floor_agent(501, panel_active=0)
    shift(engine_state, run, frozen_clock, tz, new_lead, open_missed_activity)
    later = at(9, 0, day=DAY + timedelta(days=1))
    frozen_clock(later)
    assert run(state_history.days_to_roll_up, later, tz, 90) == [DAY, DAY + timedelta(days=1)]
    assert run(state_history.roll_up, DAY, later, tz) == 1
    assert run(state_history.days_to_roll_up, later, tz, 90) == [DAY + timedelta(days=1)], "today is always rolled"
    assert run(state_history.roll_up, DAY, later, tz) == 0, "a day rolled up to its end is done"
    stored = sql.one("SELECT report FROM dialerapi_agent_days WHERE agent_id = 501 AND day = %s", DAY)
    assert json.loads(stored["report"]) == SHIFT
    # The report reads the roll-up: the history of that day no longer matters to it.
    sql("DELETE FROM dialerapi_agent_states WHERE at_utc < %s", utc_naive(at(10, 20)))
    assert run(state_history.report, DAY, DAY, later, tz)["days"] == [SHIFT]


def test_prune_keeps_each_agents_last_state(floor_agent, engine_state, run, sql):
    floor_agent(501, panel_active=0)
    floor_agent(502)
    engine_state(at(9, 0), panel_active=True, ami_idle=True)
    engine_state(at(9, 10), ami_idle=False)
    engine_state(at(9, 15), ami_idle=True)
    assert run(state_history.prune, utc_naive(at(9, 12))) == 1
    assert [row["at_utc"] for row in history(sql)] == [utc_naive(at(9, 10)), utc_naive(at(9, 15))]


def test_sixteen_changes_of_one_agent_at_once_are_each_recorded_in_commit_order(app, floor_agent, sql, frozen_clock):
    """16 actors pause and resume one agent at once, each in its own transaction: the history holds
    one row per change that changed something, no two neighbours alike, and its last row is the agent."""
    floor_agent(501)
    frozen_clock(at(10, 0))
    barrier = threading.Barrier(16)
    errors = []

    def actor(n):
        try:
            with app.app_context():
                barrier.wait()
                for step in range(5):
                    if (n + step) % 2:
                        get_db().run(roster.pause, 501, ["lunch", "tea"][n % 2])
                    else:
                        get_db().run(roster.resume, 501)
        except Exception as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=actor, args=(n,)) for n in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    rows = sql("SELECT pause_code FROM dialerapi_agent_states WHERE agent_id = 501 ORDER BY id")
    assert rows, "the changes were recorded"
    assert all(a["pause_code"] != b["pause_code"] for a, b in zip(rows, rows[1:])), "each row is a change"
    assert rows[-1]["pause_code"] == sql.one("SELECT pause_code FROM sales_agents WHERE id = 501")["pause_code"]


def test_the_board_row_says_how_long_and_what_today_held(floor_agent, engine_state, run, frozen_clock, tz, new_lead,
                                                         open_missed_activity):
    floor_agent(501, panel_active=0)
    shift(engine_state, run, frozen_clock, tz, new_lead, open_missed_activity)
    engine_state(at(10, 30), panel_active=True)
    engine_state(at(10, 40), ami_idle=True, wrapup_seconds=120)
    row = run(state_history.board_rows, at(10, 41), tz)[0]
    assert (row["state"], row["since"], row["wrapup_until"]) == ("wrap_up", utc_text(at(10, 40)), utc_text(at(10, 42)))
    assert (row["calls"], row["talk_seconds"]) == (2, 420)
    row = run(state_history.board_rows, at(10, 45), tz)[0]
    assert (row["state"], row["since"]) == ("free", utc_text(at(10, 42))), "a wrap-up that ended began free at its end"


def test_a_pause_taken_in_wrap_up_keeps_its_start_when_the_wrap_up_ends(floor_agent, engine_state, run, frozen_clock,
                                                                        tz):
    """Issue #64 item 3: the board restarted a pause's time in state at the end of the wrap-up it was
    taken in (and so delayed the long-pause alert): only a state that wrap-up outranks (free, the
    outbound block) begins at a wrap-up's end."""
    floor_agent(501, panel_active=0)
    engine_state(at(10, 0), panel_active=True, ami_idle=True)
    engine_state(at(10, 40), ami_idle=True, wrapup_seconds=120)
    frozen_clock(at(10, 41))
    run(roster.pause, 501, "lunch")
    row = run(state_history.board_rows, at(10, 50), tz)[0]
    assert (row["state"], row["since"]) == ("paused", utc_text(at(10, 41)))


def test_a_change_the_state_does_not_show_keeps_its_time_in_state(floor_agent, engine_state, run, frozen_clock, tz,
                                                                   new_lead, open_missed_activity):
    """Issue #64 item 3: time in state starts when the state the board shows began. A pause taken at
    10:05, then the AMI busy at 10:10 (a call while paused) and the outbound block at 10:20 (the
    grace of an earlier call ran out) are rows of the history but no change of what the board
    shows: paused (tea) since 10:05, not since the last row. Resumed at 10:30 on the call: on_call
    since 10:30; the call over at 10:40: the block, since 10:40."""
    floor_agent(501, panel_active=0)
    engine_state(at(10, 0), panel_active=True, ami_idle=True)
    frozen_clock(at(10, 5))
    run(roster.pause, 501, "tea")
    engine_state(at(10, 10), ami_idle=False)
    new_lead("OLI-1")
    open_missed_activity("OLI-1", connected_at=at(9, 50), ended_at=at(9, 52), due_at=at(9, 54))
    frozen_clock(at(10, 20))
    assert run(roster.refresh_blocking, at(10, 20), tz) == {501: True}
    row = run(state_history.board_rows, at(10, 25), tz)[0]
    assert (row["state"], row["pause_code"], row["since"]) == ("paused", "tea", utc_text(at(10, 5)))
    frozen_clock(at(10, 30))
    run(roster.resume, 501)
    row = run(state_history.board_rows, at(10, 35), tz)[0]
    assert (row["state"], row["since"]) == ("on_call", utc_text(at(10, 30)))
    engine_state(at(10, 40), ami_idle=True)
    row = run(state_history.board_rows, at(10, 45), tz)[0]
    assert (row["state"], row["since"]) == ("outbound_blocked", utc_text(at(10, 40)))


@pytest.mark.parametrize("query, field", [
    ("from=2026-11-21", "to"), ("from=2026-11-21&to=2026-11-20", "to"), ("from=2026-11-21&to=2027-03-01", "to"),
    ("from=21-11-2026&to=2026-11-21", "from"), ("from=2026-02-30&to=2026-03-01", "from"),
])
def test_a_bad_report_range_is_a_400_naming_the_field(client, query, field):
    from conftest import SECRET
    response = client.get(f"/api/reports/agents?{query}", headers={"X-API-Key": SECRET})
    body = response.get_json()
    assert response.status_code == 400 and body["ok"] is False and field in json.dumps(body), body


def test_a_call_begun_this_very_second_is_on_the_board(floor_agent, engine_state, run, tz):
    floor_agent(501, panel_active=0)
    engine_state(at(9, 0), panel_active=True, ami_idle=True)
    engine_state(at(9, 10), ami_idle=False)
    row = run(state_history.board_rows, at(9, 10), tz)[0]
    assert (row["state"], row["since"], row["calls"]) == ("on_call", utc_text(at(9, 10)), 1)


@pytest.mark.parametrize("rolled_at", [at(9, 10), at(9, 12), at(10, 7), at(10, 12)])
def test_today_rolled_up_mid_shift_and_the_history_after_it_add_up_to_the_same(
        floor_agent, engine_state, run, frozen_clock, tz, new_lead, open_missed_activity, sql, rolled_at):
    """The job rolls today up every ten minutes; the report and the board add the history after it.
    Rolled at a call's first second (09:10), mid-call, at a call's last second and mid-block: the
    same figures as from the history alone, each call counted once."""
    floor_agent(501, panel_active=0)
    shift(engine_state, run, frozen_clock, tz, new_lead, open_missed_activity)
    run(state_history.roll_up, DAY, rolled_at, tz)
    assert run(state_history.report, DAY, DAY, at(11, 0), tz)["days"] == [SHIFT]
    row = run(state_history.board_rows, at(11, 0), tz)[0]
    assert (row["calls"], row["talk_seconds"]) == (SHIFT["calls"], SHIFT["talk_seconds"])
    run(state_history.roll_up, DAY, at(11, 0), tz)
    assert run(state_history.report, DAY, DAY, at(11, 0), tz)["days"] == [SHIFT]


def test_the_job_rolls_up_each_day_once_per_tick(app, floor_agent, engine_state, run, frozen_clock, tz, new_lead,
                                                 open_missed_activity, sql):
    from dialerapi.upkeep import jobs
    floor_agent(501, panel_active=0)
    shift(engine_state, run, frozen_clock, tz, new_lead, open_missed_activity)
    frozen_clock(at(9, 0, day=DAY + timedelta(days=1)))
    assert jobs.roll_up_tick(app) == {"2026-11-21": 1, "2026-11-22": 0}
    assert jobs.roll_up_tick(app) is None, "another process's tick: skipped"
    assert sql.one("SELECT rolled_to_utc FROM dialerapi_agent_days")["rolled_to_utc"] == utc_naive(at(0, 0, day=DAY + timedelta(days=1)))


def test_a_pause_taken_during_a_call_does_not_count_the_call_twice(floor_agent, engine_state, run, frozen_clock, tz):
    """Issue #64 item 3: on a call, paused, resumed, still on the call: one call on the board and in
    the report (it was counted again at the resume); the next call counts."""
    floor_agent(501, panel_active=0)
    engine_state(at(10, 0), panel_active=True, ami_idle=True)
    engine_state(at(10, 1), ami_idle=False)
    frozen_clock(at(10, 2))
    run(roster.pause, 501, "bio")
    frozen_clock(at(10, 3))
    run(roster.resume, 501)
    engine_state(at(10, 5), ami_idle=True)
    assert run(state_history.board_rows, at(10, 6), tz)[0]["calls"] == 1
    engine_state(at(10, 7), ami_idle=False)
    engine_state(at(10, 9), ami_idle=True)
    assert run(state_history.board_rows, at(10, 10), tz)[0]["calls"] == 2
    report = run(state_history.report_days, DAY, DAY, tz, utc_naive(at(0, 0)), utc_naive(at(10, 10)))
    assert report[(501, DAY)]["calls"] == 2
