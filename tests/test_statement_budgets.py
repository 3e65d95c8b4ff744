"""The statements each hot operation sends to the database, held to a budget: a 500-lead push
(lead-intake-api.md POST /api/leads), a claim of each mode, a settle of each outcome
(docs/engine/api.md), the floor state (POST /engine/floor) and the lead read
(GET /api/leads/{oli_id}).

A round trip is what a hot path pays per call whatever the machine (shared/notes/mysql-performance.md),
so it is counted here, not timed. The budget is exact: a statement added to one of these paths, or
one taken away, fails its test until the budget below is changed with it, on purpose.

Each operation runs once unmeasured first (the config's and the campaigns' first read, a pool's
first connection), then is measured on a lead of the same kind. The clock is the service's
(decisions.md D2), frozen at DEFAULT_NOW, inside the work window.
"""

import pytest

from conftest import DEFAULT_NOW, own_number
from dialerapi.rules.caller_ids import numbers

# The budgets: statements (each query, BEGIN, COMMIT, ROLLBACK) of one request.
PUSH_500 = {"inserted": 7, "updated": 6}
CLAIM = {"progressive": 16, "predictive": 15, "redial": 16, "inbound": 12}
# With caller IDs on the floor (docs/operations/caller-ids.md, "What it costs"): the same statements,
# the candidates read with the campaign's state and the count written with the lead's leaving the
# claim gate; an inbound call presents none. An originate failure gives its count back.
CLAIM_WITH_CALLER_IDS = CLAIM
SETTLE_WITH_CALLER_IDS = {"no_answer": 14, "originate_failed": 18}
# An originate failure takes back the contact attempt the claim recorded (docs/compliance/contact-caps.md).
SETTLE = {"answered": 14, "no_answer": 14, "busy": 14, "congestion": 14, "machine": 14, "rejected": 14,
          "cancelled": 14, "abandoned": 14, "originate_failed": 17}
FLOOR_STATE = 11
LEAD_READ = 4


@pytest.fixture
def floor(frozen_clock, floor_agent):
    frozen_clock(DEFAULT_NOW)
    floor_agent(501)


@pytest.fixture
def engine(client, engine_auth):
    """POST /engine/<operation> with the engine key (a claim with a request_id of its own): (status, body)."""
    counter = iter(range(10**6))

    def post(operation, **body):
        if operation == "claim":
            body["request_id"] = f"r-{next(counter)}"
        response = client.post(f"/engine/{operation}", json=body, headers=engine_auth)
        return response.status_code, response.get_json()

    return post


def push(client, auth, prefix, tag, count=1):
    leads = [{"oli_id": f"{prefix}-{i:03d}", "phone_number": own_number(f"{prefix}-{i:03d}"),
              "client_name": f"Lead {tag} {i}", "form_type": "home_loan", "priority_id": 2} for i in range(count)]
    response = client.post("/api/leads", json={"leads": leads}, headers=auth)
    assert response.status_code == 201, response.get_json()
    return {entry["status"] for entry in response.get_json()["leads"]}


def measured(statements_sent, work):
    before = statements_sent()
    result = work()
    return statements_sent() - before, result


def test_a_500_lead_push(client, auth, floor, statements_sent):
    push(client, auth, "WARM", "warm")
    for tag, status in (("new", "inserted"), ("again", "updated")):
        counted, statuses = measured(statements_sent, lambda: push(client, auth, "P", tag, 500))
        assert statuses == {status}
        assert counted == PUSH_500[status], f"{counted} statements for a 500-lead push ({status})"


def claim_body(mode, oli_id):
    return {"progressive": {"agent_id": 501}, "predictive": {}, "redial": {"agent_id": 501, "oli_id": oli_id},
            "inbound": {"agent_id": 501, "oli_id": oli_id}}[mode]


def with_caller_ids(run):
    run(numbers.add, "+919845000001", ["default"], DEFAULT_NOW, "cli")
    run(numbers.add, "+919845000002", ["default"], DEFAULT_NOW, "cli")


@pytest.mark.parametrize("caller_ids", [False, True], ids=["no caller IDs", "caller IDs"])
@pytest.mark.parametrize("mode", sorted(CLAIM))
def test_a_claim(client, auth, floor, engine, statements_sent, run, mode, caller_ids):
    if caller_ids:
        with_caller_ids(run)
    push(client, auth, "C", "claim", 2)
    status, body = engine("claim", mode=mode, **claim_body(mode, "C-000"))
    assert status == 200 and body["lead"]["oli_id"] == "C-000", body
    assert engine("settle", oli_id="C-000", outcome="no_answer", started_at=str(DEFAULT_NOW))[0] == 200
    counted, (status, body) = measured(statements_sent,
                                       lambda: engine("claim", mode=mode, **claim_body(mode, "C-001")))
    assert status == 200 and body["lead"]["oli_id"] == "C-001", body
    assert (body["caller_id"] is not None) == (caller_ids and mode != "inbound"), body
    budget = (CLAIM_WITH_CALLER_IDS if caller_ids else CLAIM)[mode]
    assert counted == budget, f"{counted} statements for a {mode} claim"


@pytest.mark.parametrize("outcome", sorted(SETTLE))
def test_a_settle(client, auth, floor, engine, statements_sent, outcome):
    push(client, auth, "S", "settle", 2)
    for oli_id in ("S-000", "S-001"):
        status, body = engine("claim", mode="redial", agent_id=501, oli_id=oli_id)
        assert status == 200, body
        settle = {"oli_id": oli_id, "outcome": outcome, "started_at": str(DEFAULT_NOW)}
        counted, (status, body) = measured(statements_sent, lambda: engine("settle", **settle))
        assert status == 200, body
    assert counted == SETTLE[outcome], f"{counted} statements for a settle ({outcome})"


@pytest.mark.parametrize("outcome", sorted(SETTLE_WITH_CALLER_IDS))
def test_a_settle_of_a_call_that_presented_a_caller_id(client, auth, floor, engine, statements_sent, run, outcome):
    with_caller_ids(run)
    push(client, auth, "S", "settle", 2)
    for oli_id in ("S-000", "S-001"):
        status, body = engine("claim", mode="redial", agent_id=501, oli_id=oli_id)
        assert status == 200 and body["caller_id"], body
        settle = {"oli_id": oli_id, "outcome": outcome, "started_at": str(DEFAULT_NOW)}
        counted, (status, body) = measured(statements_sent, lambda: engine("settle", **settle))
        assert status == 200, body
    assert counted == SETTLE_WITH_CALLER_IDS[outcome], f"{counted} statements for a settle ({outcome})"


def test_the_floor_state(client, auth, floor, engine, statements_sent):
    push(client, auth, "F", "floor", 3)
    assert engine("floor")[0] == 200
    counted, (status, body) = measured(statements_sent, lambda: engine("floor"))
    assert status == 200 and body["form_types"], body
    assert counted == FLOOR_STATE, f"{counted} statements for the floor state"


def test_the_lead_read(client, auth, floor, engine, statements_sent):
    push(client, auth, "R", "read", 2)
    for oli_id in ("R-000", "R-001"):
        assert engine("claim", mode="redial", agent_id=501, oli_id=oli_id)[0] == 200
        assert engine("settle", oli_id=oli_id, outcome="busy", started_at=str(DEFAULT_NOW))[0] == 200
    assert client.get("/api/leads/R-000", headers=auth).status_code == 200
    counted, response = measured(statements_sent, lambda: client.get("/api/leads/R-001", headers=auth))
    assert response.status_code == 200 and response.get_json()["lead"]["oli_id"] == "R-001"
    assert counted == LEAD_READ, f"{counted} statements for the lead read"
