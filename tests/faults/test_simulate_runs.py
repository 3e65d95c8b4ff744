"""The simulator's longer runs (issue #18 and the issues that added to it: #29 pacing per skill, #37
the abandon limit, #40 personal callbacks), moved here from tests/test_simulate.py by issue #47:
each plays a simulated floor for seconds to a minute, and together they took a fifth of `make
test`'s machine time. Unchanged: the same scenarios, seeds, replications and assertions. Here,
like tests/faults/test_simulate_theory.py, because simulated floors are slow, not because they are
faults."""

import csv
import json
from pathlib import Path

import pytest

from conftest import cli
from dialerapi import simulate as sim
from dialerapi.simulate.report import summary, write_csv
from test_simulate import SMALL, schemas_left

pytestmark = [pytest.mark.faults, pytest.mark.slow]


def test_two_runs_with_one_seed_give_identical_reports_and_leave_nothing_behind(database_url, sql, new_lead):
    new_lead("REAL-1", form_type="home_loan")
    real_before = sql.lead("REAL-1")
    config_before = sql.one("SELECT * FROM sales_dialer_config")
    predictive = sim.load_scenario(None, **SMALL, mode="predictive", pacing="abandon", seed=5,
                                   dialer={"max_tries": 3, "retry_seconds": 600})
    first = sim.replicate(database_url, predictive)
    sim.replicate(database_url, sim.load_scenario(None, **SMALL, seed=9, days=2))  # a different run between
    again = sim.replicate(database_url, predictive)
    assert json.dumps(first, default=str) == json.dumps(again, default=str)
    assert first["kpis"]["calls"]["mean"] > 100 and first["kpis"]["hung_up_waiting"]["mean"] > 0

    assert sql.lead("REAL-1") == real_before, "the simulator never touches the service's own leads"
    assert sql.one("SELECT * FROM sales_dialer_config") == config_before, "the scenario's config is the run's own"
    assert sql("SELECT * FROM sales_agents") == [] and sql("SELECT * FROM sales_missed_activities") == []
    assert schemas_left(sql, database_url) == [], "each run's schema is dropped"


def test_a_scenario_file_with_options_over_it_answers_in_json_and_csv_with_intervals(database_url, tmp_path):
    """`dialerapi simulate --days 3 --scenario FILE --json -`: three runs unless told otherwise, so
    every figure has its 95% interval."""
    scenario = tmp_path / "campaign.toml"
    scenario.write_text('agents = 4\nleads = 120\nhours = 1\ndays = 2\ntalk_seconds = {exponential = 150}\n'
                        '[dialer]\nmax_tries = 2\nretry_pattern = "1"\nretry_seconds = 900\n')
    chart = tmp_path / "campaign.png"
    result = cli(database_url, "simulate", "--days", "3", "--scenario", str(scenario), "--agents", "5",
                 "--json", "-", "--csv", str(tmp_path / "csv"), "--chart", str(chart))
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["scenario"]["agents"] == 5 and report["scenario"]["days"] == 3, "the options override the file"
    assert report["scenario"]["dialer"]["max_tries"] == 2 and report["replications"] == 3
    calls = report["kpis"]["calls"]
    assert calls["ci95_low"] < calls["mean"] < calls["ci95_high"] and len(calls["values"]) == 3
    assert [run["seed"] for run in report["runs"]] == [1, 2, 3]
    for run in report["runs"]:
        assert max(run["tries_per_lead"], key=int) in ("1", "2"), "retry_pattern 1 a day, max_tries 2"
        days = {row["hour"][:10] for row in run["hours"]}
        assert days == {"2026-01-05", "2026-01-06", "2026-01-07"}, "three working days"
        assert sum(run["final_status"].values()) == 120
    hours = report["hours"]
    assert {"calls", "contacts", "talk_minutes", "wrap_minutes", "idle_minutes", "blocked_minutes",
            "retry_backlog", "penetration"} <= set(hours[0])
    agent_rows = list(csv.DictReader((tmp_path / "csv" / "agents.csv").open()))
    assert len(agent_rows) == 15 and {"talk_minutes", "blocked_minutes", "skills"} <= set(agent_rows[0])
    assert {row["name"] for row in csv.DictReader((tmp_path / "csv" / "kpis.csv").open())} >= {"calls", "occupancy"}
    assert chart.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_one_run_asked_for_in_the_file_says_its_figures_have_no_interval(database_url, tmp_path):
    """Options take a plain word (`--skills all`) and JSON null (`--patience-seconds null`: customers
    wait for ever), each overriding the file's value."""
    scenario = tmp_path / "quick.json"
    scenario.write_text(json.dumps({**SMALL, "hours": 0.5, "mode": "predictive", "form_types": {"home_loan": 1},
                                    "skills": {"home_loan": 2}, "patience_seconds": 5}))
    result = cli(database_url, "simulate", "--scenario", str(scenario), "--skills", "all",
                 "--patience-seconds", "null", "--json", "-")
    assert result.returncode == 0, result.stderr
    assert "one run: the figures get no 95% interval" in result.stderr
    report = json.loads(result.stdout)
    assert report["scenario"]["skills"] == "all" and report["scenario"]["patience_seconds"] is None
    assert report["runs"][0]["agents"][5]["skills"] == ["home_loan"], "every agent has every skill"
    assert report["replications"] == 1 and report["kpis"]["calls"]["mean"] > 0
    assert report["kpis"]["hung_up_waiting"]["mean"] == 0, "nobody hangs up waiting"
    assert report["kpis"]["calls"]["ci95_low"] is None and report["kpis"]["calls"]["ci95_high"] is None


@pytest.mark.parametrize("engine", ["library", "http"])
def test_a_kept_run_shows_the_rules_at_work(database_url, sql, engine):
    report = sim.replicate(database_url, sim.load_scenario(None, **SMALL, engine=engine, seed=3), keep=True)
    kept = schemas_left(sql, database_url)
    assert len(kept) == 1
    schema = kept[0]["Database"]
    try:
        def count(statement):
            return sql(statement.replace("{s}", f"`{schema}`"))[0]["n"]

        run = report["runs"][0]
        assert count("SELECT COUNT(*) AS n FROM {s}.sales_call_attempts") == run["kpis"]["calls"]
        assert count("SELECT COUNT(*) AS n FROM {s}.sales_master WHERE isReserved = 1") == 0
        assert count("SELECT COUNT(*) AS n FROM {s}.sales_pending_actions WHERE status = 'applied'"
                     " AND applied_at > created_at") > 0, "CRM actions held during live calls, applied at settle"
        assert count("SELECT COUNT(*) AS n FROM {s}.sales_missed_activities") == run["kpis"]["contacts"]
        assert count("SELECT COUNT(*) AS n FROM {s}.sales_missed_activities WHERE cleared_at IS NULL") \
            == run["filings"]["unfiled_at_end"] > 0, "a call whose outcome was never filed keeps its missed activity"
        through_http = count("SELECT COUNT(*) AS n FROM {s}.dialerapi_engine_replies WHERE request_key LIKE 'claim:%%'")
        assert (through_http > 0) == (engine == "http")
    finally:
        sql(f"DROP DATABASE `{schema}`")


@pytest.mark.parametrize("engine", ["library", "http"])
def test_predictive_paces_each_skill_and_reports_it(database_url, engine, tmp_path):
    """Issue #29: each form_type's group dials leads of its own form_type, and the report gives each
    group's rate of customers who hung up waiting (its hung up over its answered) and the share of
    days it went over target; issue #52: first, the law's count per group, from the call records."""
    scenario = sim.load_scenario(None, **{**SMALL, "agents": 8, "leads": 300}, days=2, mode="predictive",
                                 pacing="abandon", engine=engine, form_types={"home_loan": 2, "credit_card": 1},
                                 skills={"home_loan": 5, "credit_card": 4}, seed=3)
    report = sim.replicate(database_url, scenario)
    run = report["runs"][0]
    kpis = run["kpis"]
    groups = ("credit_card", "home_loan")
    assert {f"hung_up_waiting_rate[{g}]" for g in groups} | {f"hung_up_waiting_days_over_target[{g}]" for g in groups} \
        <= set(kpis)
    for group in groups:
        assert 0 <= kpis[f"hung_up_waiting_rate[{group}]"] <= kpis[f"abandon_rate[{group}]"] <= 1, \
            "the law counts every customer who hung up waiting, and late connects too"
        assert kpis[f"hung_up_waiting_days_over_target[{group}]"] in (0, 0.5, 1), "a share of the run's 2 days"
        assert kpis[f"days_over_limit[{group}]"] in (0, 0.5, 1)
        assert report["kpis"][f"abandon_rate[{group}]"]["values"] == [kpis[f"abandon_rate[{group}]"]]
    assert kpis["hung_up_waiting"] == run["outcomes"].get("abandoned", 0)
    assert kpis["abandons"] == kpis["hung_up_waiting"] + kpis["late_connects"]
    assert kpis["contacts"] > 0 and kpis["calls"] > 100
    floor_days = [row for row in run["abandon_days"] if row["form_type"] == "*"]
    assert kpis["abandon_rate"] == round(sum(row["abandoned"] for row in floor_days)
                                         / sum(row["answered"] for row in floor_days), 4)

    # Issue #52 item 1: every report leads with the law's count, against the limit.
    assert list(report)[0] == "abandons"
    law = report["abandons"]
    assert law["limit"] == 0.03 and law["enforced"] is False
    assert [row["form_type"] for row in law["form_types"]] == ["*", "credit_card", "home_loan"]
    for row in law["form_types"]:
        suffix = "" if row["form_type"] == "*" else f"[{row['form_type']}]"
        assert row["rate"]["values"] == [kpis[f"abandon_rate{suffix}"]]
        assert row["runs_over_limit"] == (1.0 if kpis[f"abandon_rate{suffix}"] > 0.03 else 0.0)
        assert row["days_over_limit"]["values"] == [kpis[f"days_over_limit{suffix}"]]
    text = summary(report)
    assert text.index("abandon rate as the service and the law count it") < text.index("\nfigure ")
    assert [Path(path).name for path in write_csv(report, tmp_path)][0] == "abandons.csv"
    with open(tmp_path / "abandons.csv") as handle:
        assert [row["form_type"] for row in csv.DictReader(handle)] == ["*", "credit_card", "home_loan"]


def test_a_reckless_engine_held_by_the_abandon_limit_dials_progressively_and_stays_under_it(database_url):
    """Issue #37 item 7: at ratio 3 with the limit off, the service counts far over 3%; on, each
    group refused with abandon_limit dials progressively until it is served again, and the service's
    own count (abandons plus late connects, from the call records) stays at or under 3%."""
    common = dict(**{**SMALL, "agents": 8, "leads": 400, "hours": 3}, mode="predictive", pacing="ratio", dial_ratio=3,
                  form_types={"home_loan": 2, "credit_card": 1}, skills={"home_loan": 5, "credit_card": 4}, seed=4)
    off = sim.replicate(database_url, sim.load_scenario(None, **common))["runs"][0]["kpis"]
    on = sim.replicate(database_url, sim.load_scenario(None, **common, enforce_abandon_limit=True,
                                                       abandon_min_answered=0))["runs"][0]["kpis"]
    for group in ("credit_card", "home_loan"):
        assert off[f"abandon_rate[{group}]"] > 0.06 and off[f"predictive_held[{group}]"] == 0
        assert on[f"abandon_rate[{group}]"] <= 0.03 and on[f"days_over_limit[{group}]"] == 0
        assert on[f"predictive_held[{group}]"] > 0
    assert on["contacts"] > 0.8 * off["contacts"], "held groups go on dialing, progressively"


def test_personal_callbacks_go_to_their_owners_on_time_and_are_reported_apart(database_url):
    """Issue #40 item 6: with personal_callback_share 1 every filed callback names the agent who took
    the call; the report splits the on-time share into personal and ordinary, counts who took the
    personal ones, and no other claim takes one before its fallback."""
    scenario = sim.load_scenario(None, **{**SMALL, "agents": 6, "leads": 300, "hours": 3}, seed=11,
                                 callback_in_minutes=[5, 40],
                                 personal_callback_share=1.0)
    run = sim.replicate(database_url, scenario)["runs"][0]
    personal, ordinary = run["callbacks"]["personal"], run["callbacks"]["ordinary"]
    assert personal["due"] > 10 and personal["by_owner"] > 0, personal
    assert personal["taken_early_by_another"] == 0
    assert personal["by_owner"] + personal["after_fallback"] == personal["on_time"] + personal["late"]
    # Only the pushed callbacks (no owner) are ordinary.
    assert ordinary["due"] <= SMALL["pushed_callbacks"] * 300 * 2
    kpis = run["kpis"]
    assert kpis["personal_callbacks_on_time_share"] == round(personal["on_time"] / personal["due"], 4)
    assert kpis["callbacks_on_time_share"] == round(
        (personal["on_time"] + ordinary["on_time"]) / (personal["due"] + ordinary["due"]), 4)
