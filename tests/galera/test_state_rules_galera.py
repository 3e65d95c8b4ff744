"""The state calling rules, consent and restrictions through a 3-node Galera cluster and two hosts on
two nodes (issue #68 "Done when"): a rule switched on through one node holds the claims through
the other, 16 claimers through both at once on Louisiana's Christmas take only what the rules
allow and each lead once, and a restriction added through one node holds the next claim on both;
Regulation F's count leaves the consented calls out through both nodes at once.

Run by `make test-galera` (scripts/galera.sh). Host A prefers node 1, host B node 2.
"""

from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from test_cluster import ACTORS, agents, at_once, claim, hosts, node_url, push, same_on_every_node  # noqa: F401

from conftest import TZ, add_contact_attempts
from dialerapi.plumbing.db import get_db
from dialerapi.rules.compliance import calling_rules

pytestmark = pytest.mark.galera

CHICAGO = ZoneInfo("America/Chicago")


def leads():
    """8 Texas leads, 8 Louisiana leads with written consent (exempt from its holiday ban), 8 without."""
    consent = {"type": "written", "at": "2026-12-01 10:00:00"}
    made = []
    for n in range(8):
        made += [{"oli_id": f"TX-{n}", "phone_number": f"+1 214 201 {n:04d}"},
                 {"oli_id": f"LA-C-{n}", "phone_number": f"+1 504 201 {n:04d}", "consent": consent},
                 {"oli_id": f"LA-{n}", "phone_number": f"+1 504 202 {n:04d}"}]
    return [{"client_name": "Customer", "form_type": "home_loan", "priority_id": 2, **lead} for lead in made]


def on_host(hosts, name, work, *args):
    with hosts[name].app_context():
        return get_db().run(work, *args)


def test_christmas_in_louisiana_through_two_nodes_then_a_restriction_through_one(hosts, node_url, sql, agents,
                                                                                 frozen_clock):
    frozen_clock(datetime(2026, 12, 20, 12, 0, tzinfo=CHICAGO))
    assert push(hosts["A"], leads())[0] == 201
    for name in ("us-federal", "us-la", "us-tx"):
        on_host(hosts, "B", calling_rules.set_enabled, name, True, datetime(2026, 12, 20))
    frozen_clock(datetime(2026, 12, 25, 12, 0, tzinfo=CHICAGO))
    got = at_once(lambda agent_id: claim(hosts, agent_id, "christmas"), agents)
    expected = sorted([f"TX-{n}" for n in range(8)] + [f"LA-C-{n}" for n in range(8)])
    assert None not in got and sorted(row["oli_id"] for row in got) == expected
    live = same_on_every_node(node_url, "SELECT oli_id FROM sales_master WHERE isReserved = 1 ORDER BY oli_id")
    assert [row["oli_id"] for row in live] == expected, "each once, no unconsented Louisiana lead, on every node"

    sql("UPDATE sales_master SET dial_status = 'Pending', isReserved = 0, reservation_id = NULL")
    sql("UPDATE sales_agents SET panel_active = 1, ami_idle = 1")
    on_host(hosts, "B", calling_rules.add_restriction, "US", datetime(2026, 12, 25, 0, 0, tzinfo=CHICAGO),
            datetime(2026, 12, 26, 0, 0, tzinfo=CHICAGO), "national day of mourning", datetime(2026, 12, 25))
    got = at_once(lambda agent_id: claim(hosts, agent_id, "restricted"), agents)
    assert got == [None] * ACTORS, "the restriction added through node 2 holds the claims through node 1 at once"
    assert same_on_every_node(node_url, "SELECT COUNT(*) AS n FROM sales_master WHERE isReserved = 1") == [{"n": 0}]


def test_regulation_fs_count_through_two_nodes_takes_the_consented_leads_once_each(hosts, node_url, sql, agents,
                                                                                  frozen_clock):
    """Issue #68 item 4: 16 numbers at Regulation F's seven calls this week, each with a lead given
    express consent yesterday and one without; 16 claimers through both nodes at once take every
    consented lead once and no other, and each number keeps its one consented attempt, on every node."""
    now = datetime(2026, 12, 2, 12, 0, tzinfo=CHICAGO)
    frozen_clock(now)
    consent = {"type": "express", "at": f"{(now - timedelta(days=1)).astimezone(TZ):%Y-%m-%d %H:%M:%S}"}
    made = []
    for n in range(16):
        made += [{"oli_id": f"PLAIN-{n:02d}", "phone_number": f"+1 214 203 {n:04d}"},
                 {"oli_id": f"CONSENTED-{n:02d}", "phone_number": f"+1 214 203 {n:04d}", "consent": consent}]
    assert push(hosts["A"], [{"client_name": "Customer", "form_type": "home_loan", "priority_id": 2, **lead}
                             for lead in made])[0] == 201
    wall = now.astimezone(TZ).replace(tzinfo=None)
    for n in range(16):
        add_contact_attempts(sql, int(f"1214203{n:04d}"), [wall - timedelta(days=6, hours=hour) for hour in range(7)])
    sql("UPDATE dialerapi_contact_caps SET enabled = 1 WHERE name = 'reg-f-7-in-7'")
    got = at_once(lambda agent_id: claim(hosts, agent_id, "reg-f"), agents)
    assert None not in got and sorted(row["oli_id"] for row in got) == [f"CONSENTED-{n:02d}" for n in range(16)]
    counts = same_on_every_node(node_url, "SELECT phone_e164, JSON_LENGTH(attempts) AS attempts,"
                                " JSON_LENGTH(consents) AS consents FROM dialerapi_contact_numbers ORDER BY phone_e164")
    assert [(row["attempts"], row["consents"]) for row in counts] == [(8, 1)] * 16
