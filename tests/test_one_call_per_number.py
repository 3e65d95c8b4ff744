"""One live call per phone number (issue #65 item 6): a customer's phone never rings from two lines
at once. A claim of any mode but inbound passes over a lead whose number (its E.164 form,
sales_master.phone_e164) is live through another lead; a redial of one answers 409 not_claimable
`number_in_call` with the live lead's oli_id (decisions.md D3); an inbound call is the customer
calling and goes through. Claims of one number run one at a time: each writes the number's row
of dialerapi_contact_numbers over the version it read (rules.compliance.contact_caps), so 16 claimers released
at once on leads sharing a number serve exactly one (tests/galera/test_cluster.py: through two
nodes). lead-intake-api.md "Claim and retry rules"."""

from datetime import timedelta

import pytest

from conftest import progressive_claims_at_once
from test_contact_caps import ENGINE, NOW, claim, settle

SHARED = "+91 98450 11111"
OTHER = "+91 98450 22222"


@pytest.fixture(autouse=True)
def fixed_now(frozen_clock):
    frozen_clock(NOW)


def engine_claim(client, mode, oli_id, request_id, **extra):
    return client.post("/engine/claim", headers=ENGINE, json={
        "mode": mode, "request_id": request_id, "agent_id": 502, "oli_id": oli_id, **extra})


def test_a_claim_passes_over_a_lead_whose_number_is_live_through_another(new_lead, floor_agent, run, sql, client):
    floor_agent(501)
    floor_agent(502)
    floor_agent(503)
    new_lead("HOME-1", phone_number=SHARED, priority_id=1)
    new_lead("HOME-2", phone_number=SHARED, priority_id=1)
    new_lead("OTHER-1", phone_number=OTHER, priority_id=2)
    assert claim(run, 501) == "HOME-1"
    assert claim(run, 503) == "OTHER-1", "HOME-2 is passed over while HOME-1 is live"
    assert sql.one("SELECT next_retry_at, contact_cap FROM sales_master WHERE oli_id = 'HOME-2'") == {
        "next_retry_at": None, "contact_cap": None}, "passed over, not held"

    for mode, extra in (("redial", {}), ("redial", {"customer_request": True})):
        refused = engine_claim(client, mode, "HOME-2", f"r-{len(extra)}", **extra)
        assert refused.status_code == 409
        assert refused.get_json() == {"ok": False, "error": "not_claimable", "reason": "number_in_call",
                                      "oli_id_in_call": "HOME-1"}
    assert sql.lead("HOME-2")["isReserved"] == 0

    settle(run, "HOME-1")
    assert claim(run, 501, NOW + timedelta(seconds=1)) == "HOME-2", "due again once the call ends"
    # The customer calling in while we call them on another lead: the inbound call goes through.
    new_lead("HOME-3", phone_number=SHARED)
    inbound = engine_claim(client, "inbound", "HOME-3", "i-1")
    assert inbound.status_code == 200 and inbound.get_json()["lead"]["oli_id"] == "HOME-3"


def test_sixteen_claimers_at_once_on_leads_sharing_a_number_serve_exactly_one(app, new_lead, floor_agent, run, sql):
    """16 claimers released at once, five times, on 16 leads sharing one number (no cap enabled):
    each time exactly one is served; checked against the leads and, after each call settles, the
    call records (one call a round, never two reservations of the number live at once)."""
    for agent_id in range(501, 517):
        floor_agent(agent_id)
    for n in range(16):
        new_lead(f"SAME-{n:02d}", phone_number=SHARED)
    for round_ in range(5):
        now = NOW + timedelta(minutes=round_)
        got, errors = progressive_claims_at_once(app, range(501, 517), now)
        assert not errors and len(got) == 16
        served = [oli_id for oli_id in got if oli_id]
        assert len(served) == 1, f"round {round_}: {served}"
        assert [row["oli_id"] for row in sql("SELECT oli_id FROM sales_master WHERE isReserved = 1")] == served
        settle(run, served[0], now=now + timedelta(seconds=30))
    calls = sql("SELECT a.reservation_id, a.ended_at FROM sales_call_attempts AS a"
                " JOIN sales_master AS m ON m.id = a.lead_id WHERE m.phone_e164 = 919845011111 ORDER BY a.id")
    assert len(calls) == 5 and len({row["reservation_id"] for row in calls}) == 5
