"""Predictive claims for a pacing engine that dials each skill on its own free agents (issue #29,
items 1 and 4; lead-intake-api.md "Claim and retry rules"), through a real gunicorn: a claim of one
form_type takes only that form_type and says `no_free_agent` when nobody with that skill is free,
and no predictive claim reserves a lead whose skill and priority no free agent could take, also
with 16 claimers at once (checked in the database afterwards)."""

import threading
from collections import Counter

import pytest
import requests

from conftest import ENGINE_SECRET

ENGINE = {"X-API-Key": ENGINE_SECRET}
# Agent 501 takes home_loan of priority 2 only; 502 takes credit_card of every priority.
FREE = {"home_loan": {2}, "credit_card": {1, 2}}


@pytest.fixture
def floor(sql, new_lead):
    for agent_id, skill, priorities in ((501, "home_loan", (2,)), (502, "credit_card", ())):
        sql("INSERT INTO sales_agents (id, extension, name, panel_active, ami_idle) VALUES (%s, %s, 'Agent', 1, 1)",
            agent_id, str(4000 + agent_id))
        sql("INSERT INTO sales_agent_skills (agent_id, form_type) VALUES (%s, %s)", agent_id, skill)
        for priority in priorities:
            sql("INSERT INTO sales_agent_priorities (agent_id, priority_id) VALUES (%s, %s)", agent_id, priority)
    # Due callbacks come first in claim order: home_loan ones no free agent may take (priority 1).
    for n in range(8):
        new_lead(f"HL-CB-{n}", form_type="home_loan", priority_id=1, callback_scheduled_at="2026-11-21 08:00")
        new_lead(f"HL-{n}", form_type="home_loan", priority_id=2)
        new_lead(f"CC-CB-{n}", form_type="credit_card", priority_id=1, callback_scheduled_at="2026-11-21 08:00")
        new_lead(f"CC-{n}", form_type="credit_card", priority_id=2)
    new_lead("GL-0", form_type="gold_loan", priority_id=2)


def claim(live_server, request_id, **body):
    answer = requests.post(live_server.url("/engine/claim"), headers=ENGINE, timeout=30,
                           json={"mode": "predictive", "request_id": request_id, **body})
    return answer.status_code, answer.json()


def test_a_claim_of_one_form_type_takes_only_that_form_type(live_server, floor):
    status, body = claim(live_server, "p-cc", form_type="credit_card")
    assert status == 200 and body["lead"]["oli_id"] == "CC-CB-0", "credit_card callbacks first: 502 takes priority 1"
    status, body = claim(live_server, "p-hl", form_type="home_loan")
    assert status == 200 and body["lead"]["oli_id"] == "HL-0", "never HL-CB-*: no free home_loan agent takes priority 1"
    assert claim(live_server, "p-gl", form_type="gold_loan") == (
        409, {"ok": False, "error": "not_claimable", "reason": "no_free_agent"})


@pytest.mark.parametrize("body, field", [({"form_type": ""}, "form_type"), ({"form_type": "x" * 65}, "form_type"),
                                         ({"form_type": 7}, "form_type")])
def test_a_bad_form_type_is_refused(live_server, floor, body, field):
    status, answer = claim(live_server, "p-bad", **body)
    assert status == 400 and answer["error"] == "validation_failed"
    assert field in {detail["field"] for detail in answer["details"]}


def test_sixteen_claimers_at_once_never_reserve_a_lead_no_free_agent_could_take(live_server, floor, sql):
    start = threading.Barrier(16)
    answers, errors = [], []

    def claimer(n):
        start.wait()
        for round_no in range(4):
            form_type = (None, "home_loan", "credit_card")[(n + round_no) % 3]
            try:
                status, body = claim(live_server, f"c-{n}-{round_no}",
                                     **({"form_type": form_type} if form_type else {}))
            except requests.RequestException as exc:
                errors.append(repr(exc))
                continue
            answers.append((form_type, status, body))

    threads = [threading.Thread(target=claimer, args=(n,)) for n in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors and len(answers) == 64
    assert {status for _, status, _ in answers} == {200}, [a for a in answers if a[1] != 200][:3]
    claimed = [body["lead"]["oli_id"] for _, _, body in answers if body["lead"]]
    assert len(claimed) == len(set(claimed)), Counter(claimed).most_common(3)
    for form_type, _, body in answers:
        if body["lead"] and form_type:
            assert body["lead"]["oli_id"].startswith({"home_loan": "HL", "credit_card": "CC"}[form_type])
    reserved = sql("SELECT oli_id, form_type, priority_id FROM sales_master WHERE isReserved = 1")
    assert sorted(row["oli_id"] for row in reserved) == sorted(claimed)
    assert all(row["priority_id"] in FREE.get(row["form_type"], ()) for row in reserved), reserved
    # Everything a free agent could take was taken (8 + 8 + 8 leads), and nothing else.
    assert len(claimed) == 24
