"""A busy floor (issue #16): many claimers released at once over as many due leads. A claim answers
`null` only when nothing it may take is due and unreserved (lead-intake-api.md "Claim and retry
rules"), so every claimer gets a lead and no lead goes to two of them. Checked against the
database after every run, in-process and through a real gunicorn."""

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests

from conftest import DEFAULT_NOW, ENGINE_SECRET
from dialerapi.plumbing.db import connect, get_db, queries
from dialerapi.rules.dialing import claims

CLAIMERS = 20
RUNS = 20


@pytest.fixture
def busy_floor(sql):
    """CLAIMERS available agents with the skill home_loan, ids 701-720."""
    agents = list(range(701, 701 + CLAIMERS))
    sql("INSERT INTO sales_agents (id, extension, name, panel_active, ami_idle) VALUES "
        + ", ".join("(%s, %s, 'Agent', 1, 1)" for _ in agents), *[v for a in agents for v in (a, str(a))])
    sql("INSERT INTO sales_agent_skills (agent_id, form_type) VALUES "
        + ", ".join("(%s, 'home_loan')" for _ in agents), *agents)
    return agents


def due_leads(sql, run, count=CLAIMERS):
    """`count` due Pending leads of home_loan for this run, written in one statement."""
    names = [f"R{run:02d}-{n:02d}" for n in range(count)]
    sql("INSERT INTO sales_master (oli_id, data_id, phone_number, client_name, form_type, priority_id, dial_status,"
        " call_count, isReserved, created_at, updated_at) VALUES "
        + ", ".join("(%s, UUID(), '9876543210', 'Lead', 'home_loan', 2, 'Pending', 0, 0, %s, %s)" for _ in names),
        *[v for name in names for v in (name, DEFAULT_NOW, DEFAULT_NOW)])
    return names


def at_once(work, arguments):
    """Run work(argument) for every argument in its own thread, all released by one barrier."""
    barrier = threading.Barrier(len(arguments))

    def released(argument):
        barrier.wait()
        return work(argument)

    with ThreadPoolExecutor(len(arguments)) as pool:
        return list(pool.map(released, arguments))


def live_rows(sql):
    return sql("SELECT oli_id, reservation_id FROM sales_master WHERE dial_status = 'Calling' AND isReserved = 1")


@pytest.mark.long
@pytest.mark.slow
def test_every_progressive_claimer_released_at_once_gets_a_lead_of_its_own(app, sql, busy_floor):
    """And each agent's row names the lead and reservation claimed for it (the board's ringing
    call, issue #64 item 3; migration 0021)."""
    claimed_for = {}

    def claim(agent_id):
        with app.app_context():
            row = get_db().run(claims.claim_next, agent_id, DEFAULT_NOW)
            claimed_for[agent_id] = row and (row["id"], row["reservation_id"])
            return row and row["oli_id"]

    for run in range(RUNS):
        leads = due_leads(sql, run)
        got = at_once(claim, busy_floor)
        assert None not in got, f"run {run}: {got.count(None)} of {CLAIMERS} claims were empty while leads were due"
        assert sorted(got) == leads, f"run {run}: a lead went to two claimers or none"
        live = live_rows(sql)
        assert sorted(row["oli_id"] for row in live) == leads
        assert len({row["reservation_id"] for row in live}) == CLAIMERS
        kept = sql("SELECT id, claimed_lead_id, claimed_reservation_id FROM sales_agents WHERE id IN %s", busy_floor)
        assert {row["id"]: (row["claimed_lead_id"], row["claimed_reservation_id"]) for row in kept} == claimed_for
        sql("UPDATE sales_master SET dial_status = 'Received', isReserved = 0, reservation_id = NULL")


def test_every_predictive_claim_released_at_once_gets_a_lead_of_its_own(app, sql, busy_floor):
    def claim(_):
        with app.app_context():
            row = get_db().run(claims.claim_predictive, DEFAULT_NOW)
            return row and row["oli_id"]

    for run in range(5):
        leads = due_leads(sql, run)
        got = at_once(claim, range(CLAIMERS))
        assert None not in got and sorted(got) == leads, f"run {run}: {got}"
        sql("UPDATE sales_master SET dial_status = 'Received', isReserved = 0, reservation_id = NULL")


def test_more_claimers_than_leads_all_leads_go_and_only_the_rest_are_empty(app, sql, busy_floor):
    def claim(agent_id):
        with app.app_context():
            row = get_db().run(claims.claim_next, agent_id, DEFAULT_NOW)
            return row and row["oli_id"]

    leads = due_leads(sql, 0, count=CLAIMERS - 4)
    got = at_once(claim, busy_floor)
    assert sorted(oli_id for oli_id in got if oli_id) == leads and got.count(None) == 4


def test_claimers_through_gunicorn_released_at_once_each_get_a_lead(live_server, sql, busy_floor):
    headers = {"X-API-Key": ENGINE_SECRET}

    def claim(agent_id):
        body = {"mode": "progressive", "agent_id": agent_id, "request_id": f"floor-{run}-{agent_id}"}
        response = requests.post(live_server.url("/engine/claim"), json=body, headers=headers, timeout=30)
        assert response.status_code == 200, response.text
        lead = response.json()["lead"]
        return lead and (lead["oli_id"], lead["reservation_id"])

    for run in range(3):
        leads = due_leads(sql, run)
        got = at_once(claim, busy_floor)
        assert None not in got, f"run {run}: empty answers while leads were due"
        assert sorted(oli_id for oli_id, _ in got) == leads
        assert sorted(got) == sorted((row["oli_id"], row["reservation_id"]) for row in live_rows(sql))
        sql("UPDATE sales_master SET dial_status = 'Received', isReserved = 0, reservation_id = NULL")


def test_a_lead_a_push_holds_locked_is_waited_for_not_skipped(app, sql, busy_floor, database_url):
    """A claim that finds its only due lead locked by another transaction (a push rewriting it)
    waits for it instead of answering null: the push leaves it due and unreserved."""
    (lead,) = due_leads(sql, 0, count=1)
    push = connect(database_url)
    push.begin()
    list(queries.lock_leads(push, oli_ids=(lead,)))
    result = {}

    def claim():
        with app.app_context():
            result["row"] = get_db().run(claims.claim_next, busy_floor[0], DEFAULT_NOW)

    claimer = threading.Thread(target=claim)
    claimer.start()
    claimer.join(1.0)
    assert claimer.is_alive(), "the claim waits for the push instead of answering null"
    push.commit()
    push.close()
    claimer.join(30)
    assert result["row"]["oli_id"] == lead and sql.lead(lead)["isReserved"] == 1
