"""The simulator held to theory (issue #18): each figure within its 95% interval of what theory says.

Seeds are fixed, so each test is repeatable: a run gives the same figures every time. In `make faults`
with the other slow suites: about 4 minutes of simulated floors, which ran twice in CI (make test and
make test-clock) when they lived in tests/.
"""

import math

import pytest
from scipy import stats

from dialerapi import simulate as sim
from dialerapi.simulate.theory import ErlangA, progressive_cycle, tries_law

# Slow (setup.cfg `slow`): handed out first in a parallel run.
pytestmark = [pytest.mark.faults, pytest.mark.slow]


def test_progressive_throughput_is_what_the_stated_cycle_gives(database_url):
    """Ring (none for an originate failure), talk when answered, wrap-up after answered calls: an
    agent makes 3600 / E[cycle] calls an hour when a lead is always due and nobody is blocked."""
    scenario = sim.load_scenario(None, agents=8, leads=3000, hours=2, files_outcome=1, pushed_callbacks=0, seed=11,
                                 replications=1)
    run = sim.replicate(database_url, scenario)["runs"][0]
    mean, variance = progressive_cycle(scenario)
    agent_seconds = sum(run["kpis"][f"{state}_minutes"] for state in ("ringing", "talk", "wrap", "idle")) * 60
    assert run["kpis"]["blocked_minutes"] == 0 and run["kpis"]["idle_minutes"] < 1
    expected = agent_seconds / mean
    spread = 1.96 * math.sqrt(agent_seconds * variance / mean ** 3)  # renewal-count CLT
    assert abs(run["kpis"]["calls"] - expected) <= spread, (run["kpis"]["calls"], expected, spread)


def test_tries_per_lead_follow_the_truncated_geometric_law_and_the_forgetful_share_is_the_stated_one(database_url):
    """Each try ends the lead's sequence with P(answered or rejected) = 0.3, max_tries stops it at 4;
    an agent forgets to file (files late) on 1 - files_outcome of connected calls, applied once."""
    scenario = sim.load_scenario(
        None, agents=10, leads=400, hours=6, seed=21, replications=1, pushed_callbacks=0, callback_share=0,
        files_outcome=0.8,
        outcomes={"answered": 20, "rejected": 10, "no_answer": 50, "busy": 20},
        dialer={"max_tries": 4, "retry_pattern": "4", "retry_seconds": 300})
    run = sim.replicate(database_url, scenario)["runs"][0]
    assert set(run["final_status"]) <= {"Disposed (CRM)", "Disposed (max tries)", "Rejected", "Received"}, \
        "every lead finished its sequence"
    law = tries_law(0.7, 4)
    observed = [run["tries_per_lead"].get(k, 0) for k in law]
    assert sum(observed) == 400
    assert stats.chisquare(observed, [p * 400 for p in law.values()]).pvalue > 0.05, observed
    exhausted = stats.binomtest(run["final_status"]["Disposed (max tries)"], 400, 0.7 ** 4)
    assert exhausted.pvalue > 0.05, "disposed at max_tries: four retry outcomes in a row"

    filings = run["filings"]
    connected = filings["during"] + filings["after"] + filings["late"]
    assert connected == run["kpis"]["contacts"] > 150
    late = stats.binomtest(filings["late"], connected, 0.2)
    assert late.pvalue > 0.05, (filings, "late share should be 1 - files_outcome")


def test_predictive_waits_and_abandons_match_erlang_a(database_url):
    """Pacing `rate` dials at Poisson moments, dialing ahead; every call is answered after a fixed
    ring, so answered customers arrive as a Poisson stream: M/M/10+M with exponential talk (mean
    120 s) and patience (mean 60 s), no wrap-up. Four runs of 4 h; theory must lie in each 95% interval."""
    scenario = sim.load_scenario(
        None, agents=10, leads=4000, hours=4, seed=31, replications=4, mode="predictive", pacing="rate",
        calls_per_hour=285,
        outcomes={"answered": 1}, ring_seconds=10, talk_seconds={"exponential": 120}, wrapup_seconds=0,
        patience_seconds={"exponential": 60}, files_outcome=1, during_call=0, callback_share=0, pushed_callbacks=0)
    report = sim.replicate(database_url, scenario)
    theory = ErlangA(arrivals=285 / 3600, service=1 / 120, agents=10, patience=1 / 60).metrics()
    for figure, key in (("hung_up_waiting_rate", "abandoned"), ("mean_wait_seconds", "mean_wait"),
                        ("waited_share", "waited"), ("occupancy", "occupancy")):
        measured = report["kpis"][figure]
        assert measured["ci95_low"] <= theory[key] <= measured["ci95_high"], (figure, measured, theory[key])
    assert all(run["not_dialed"] == {} for run in report["runs"]), "dialing ahead: no dial is refused"


def test_two_skills_paced_apart_each_match_erlang_a(database_url):
    """Per-skill pacing (issue #29): two disjoint groups, 6 home_loan agents and 4 credit_card ones,
    each dialed at its own Poisson moments (its share of calls_per_hour, 2 to 1) and bridged only to
    its own agents: two independent M/M/n+M queues. Each group's abandon rate holds its own Erlang-A
    value inside its 95% interval, and the floor's overall rate is their answered-weighted mean."""
    scenario = sim.load_scenario(
        None, agents=10, leads=4000, hours=4, seed=41, replications=4, mode="predictive", pacing="rate",
        calls_per_hour=240, form_types={"home_loan": 2, "credit_card": 1}, skills={"home_loan": 6, "credit_card": 4},
        outcomes={"answered": 1}, ring_seconds=10, talk_seconds={"exponential": 120}, wrapup_seconds=0,
        patience_seconds={"exponential": 60}, files_outcome=1, during_call=0, callback_share=0, pushed_callbacks=0)
    report = sim.replicate(database_url, scenario)
    for group, per_hour, agents in (("home_loan", 160, 6), ("credit_card", 80, 4)):
        theory = ErlangA(arrivals=per_hour / 3600, service=1 / 120, agents=agents, patience=1 / 60).metrics()
        measured = report["kpis"][f"hung_up_waiting_rate[{group}]"]
        assert measured["ci95_low"] <= theory["abandoned"] <= measured["ci95_high"], (group, measured, theory)
    pooled = ErlangA(arrivals=240 / 3600, service=1 / 120, agents=10, patience=1 / 60).metrics()["abandoned"]
    assert report["kpis"]["hung_up_waiting_rate"]["ci95_high"] > pooled, "two small queues abandon more than one pool"
    for run in report["runs"]:
        assert all(agent["skills"] in (["home_loan"], ["credit_card"]) for agent in run["agents"])
        assert run["not_dialed"] == {}, "dialing ahead: no dial is refused"
