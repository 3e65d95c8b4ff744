"""Caller IDs through a 3-node Galera cluster and two hosts on two nodes (docs/operations/caller-ids.md;
rules.caller_ids.choice): 16 claimers released at once through both never push a number past its
daily cap, and each number's count is the calls that present it, on every node.

Run by `make test-galera` (scripts/galera.sh). Host A prefers node 1, host B node 2.
"""

import pytest
from test_cluster import ACTORS, agents, at_once, claim, hosts, node_url, push, same_on_every_node  # noqa: F401

from conftest import DEFAULT_NOW
from dialerapi.plumbing.db import get_db
from dialerapi.rules.caller_ids import numbers

pytestmark = pytest.mark.galera

NUMBERS = ("+19195550100", "+19195550101", "+19195550102")
DAILY_CAP = 4


def raleigh_leads():
    return [{"oli_id": f"CID-{n:02d}", "phone_number": f"+1 919 201 {n:04d}", "client_name": "Customer",
             "form_type": "home_loan", "priority_id": 2} for n in range(ACTORS)]


def test_sixteen_claimers_through_two_nodes_never_push_a_number_past_its_cap(hosts, node_url, sql, agents):
    """Three numbers of cap 4 for 16 due leads: twelve claims present one, four pass every lead over."""
    with hosts["B"].app_context():
        for number in NUMBERS:
            get_db().run(numbers.add, number, ["default"], DEFAULT_NOW, "cli", daily_cap=DAILY_CAP)
    assert push(hosts["A"], raleigh_leads())[0] == 201
    got = at_once(lambda agent_id: claim(hosts, agent_id, "cid"), agents)
    assert len([row for row in got if row]) == len(NUMBERS) * DAILY_CAP
    live = same_on_every_node(node_url, "SELECT caller_id, COUNT(*) AS calls FROM sales_master"
                              " WHERE isReserved = 1 GROUP BY caller_id ORDER BY caller_id")
    counted = same_on_every_node(node_url, "SELECT number AS caller_id, presented_today AS calls"
                                 " FROM dialerapi_caller_ids ORDER BY number")
    assert live == counted == [{"caller_id": int(number[1:]), "calls": DAILY_CAP} for number in NUMBERS]
