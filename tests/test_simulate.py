"""`dialerapi simulate` (issue #18): runs in their own schema, repeatable, scenarios, machine-readable output.

The simulator's longer runs (seconds to a minute each: repeatability, the report formats, the rules at
work, pacing per skill, the abandon limit, personal callbacks) are in tests/faults/test_simulate_runs.py,
run by `make faults` (issue #47: `make test` in under 5 minutes)."""

import pytest

from conftest import cli
from dialerapi import simulate as sim
from dialerapi.plumbing.config import database_params
from dialerapi.simulate.report import interval

# Each module here takes 8 s or more (setup.cfg `slow`): handed out first in a parallel run.
pytestmark = pytest.mark.slow

SMALL = {"agents": 6, "leads": 150, "hours": 1.5, "pushed_callbacks": 0.1, "replications": 1}


def schemas_left(sql, database_url):
    name = database_params(database_url)["database"]
    return [row for row in sql("SHOW DATABASES") if row["Database"].startswith(f"{name}_sim_")]


def test_an_interval_stays_within_what_its_figure_can_be():
    calls = interval([2, 40])
    assert calls["mean"] == 21 and calls["ci95_low"] == 0 and calls["ci95_high"] > 200, "t with 1 degree of freedom"
    penetration = interval([0.99, 1.0], upper=1)
    assert penetration["ci95_low"] < 0.99 and penetration["ci95_high"] == 1
    assert interval([0.5])["ci95_low"] is None, "one run has no interval"


@pytest.mark.parametrize("options, field", [
    (["--skills", '{"home_loan": 3}'], "skills"),
    (["--during-call", "0.9", "--files-outcome", "0.5"], "during_call"),
    (["--talk-seconds", "[300, 60]"], "talk_seconds"),
    (["--talk-seconds", "long"], "talk_seconds"),
    (["--retry-pattern", "4;4"], "retry_pattern"),
    (["--agents", "0"], "--agents"),
    (["--replications", "0"], "--replications"),
])
def test_a_bad_scenario_is_refused_before_any_work_naming_the_field(database_url, sql, options, field):
    result = cli(database_url, "simulate", *options)
    assert result.returncode == 2 and field in result.stderr, result.stderr
    assert schemas_left(sql, database_url) == []


def test_a_campaign_with_listed_phones_and_mixed_zones_never_dials_them_unlawfully(database_url, sql):
    """Issue #30 item 5: a share of the leads' phones on the do-not-call list, numbers in Kolkata and
    New York, the calling window obeyed: no call to a listed phone nor outside its customer's window."""
    scenario = sim.load_scenario(None, **SMALL, seed=5, listed_share=0.2, phone_zones={"IN": 1, "US-Eastern": 1},
                                 obey_calling_window=True)
    report = sim.replicate(database_url, scenario, keep=True)
    [schema] = [row["Database"] for row in schemas_left(sql, database_url)]
    try:
        kpis = report["runs"][0]["kpis"]
        assert kpis["calls"] > 0 and kpis["dialed_listed"] == 0 and kpis["dialed_outside_window"] == 0
        listed = sql(f"SELECT COUNT(*) AS n FROM `{schema}`.sales_master WHERE do_not_call = 1")[0]["n"]
        assert 15 <= listed <= 45
        dialed_listed = sql(f"SELECT COUNT(*) AS n FROM `{schema}`.sales_call_attempts AS a"
                            f" JOIN `{schema}`.sales_master AS m ON m.id = a.lead_id"
                            f" JOIN `{schema}`.dialerapi_dnc AS d ON d.phone = m.phone_e164"
                            " WHERE a.started_at >= d.added_at")[0]["n"]
        # The simulated CRM files DND on some answered calls too: those numbers are listed after their call.
        assert dialed_listed == 0
        assert sql(f"SELECT COUNT(DISTINCT call_zone_id) AS n FROM `{schema}`.sales_master")[0]["n"] == 2
    finally:
        sql(f"DROP DATABASE `{schema}`")
