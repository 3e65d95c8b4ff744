"""Every promise through a 3-node Galera cluster and two hosts on two nodes (issue #19; docs/operations/galera.md
"Scale out"): overlapping pushes all 201 and stored once, claims never doubled, CRM actions at
settle applied once, one job run per tick, causal reads, no outbox row skipped, a node killed and
rejoined without a lost, doubled or partial write, a node cut off reported and avoided.

Run by `make test-galera` (scripts/galera.sh builds the cluster; DATABASE_URL names its 3 nodes).
Host A prefers node 1, host B node 2; each is an app with its own pool, as two servers would be.
"""

import json
import random
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pymysql
import pytest
from outbox_race import race
from test_jobs import TICK, race_ticks

from conftest import DEFAULT_NOW, ENGINE_SECRET, ROOT, SECRET, TZ, add_contact_attempts, make_app, own_number
from dialerapi.plumbing.config import database_nodes, url_with_nodes
from dialerapi.plumbing.db import Database, connect, get_db
from dialerapi.plumbing.limits import limiter
from dialerapi.rules.campaigns import operations
from dialerapi.rules.dialing import claims, crm_actions
from dialerapi.upkeep import health

pytestmark = pytest.mark.galera

AUTH = {"Authorization": f"Bearer {SECRET}"}
ENGINE = {"Authorization": f"Bearer {ENGINE_SECRET}"}
ACTORS = 16


def galera(*args):
    subprocess.run([str(ROOT / "scripts" / "galera.sh"), *map(str, args)], check=True, timeout=300)


@pytest.fixture(scope="module")
def node_url(database_url):
    nodes = database_nodes(database_url)
    assert len(nodes) == 3, "make test-galera sets DATABASE_URL to the cluster's three nodes"
    return lambda *order: url_with_nodes(database_url, [nodes[n - 1] for n in order])


@pytest.fixture(scope="module")
def hosts(node_url):
    return {"A": make_app(node_url(1, 2, 3)), "B": make_app(node_url(2, 3, 1))}


def on_node(node_url, n, statement, *params):
    """Rows of `statement` read on node n alone, after it applied what the cluster committed."""
    conn = connect(node_url(n))
    try:
        with conn.cursor() as cur:
            cur.execute(statement, params or None)
            return list(cur.fetchall())
    finally:
        conn.close()


def same_on_every_node(node_url, statement, *params):
    rows = [on_node(node_url, n, statement, *params) for n in (1, 2, 3)]
    assert rows[0] == rows[1] == rows[2], "the three nodes hold the same rows"
    return rows[0]


def at_once(work, arguments):
    barrier = threading.Barrier(len(arguments))

    def released(argument):
        barrier.wait(timeout=60)
        return work(argument)

    with ThreadPoolExecutor(len(arguments)) as pool:
        return list(pool.map(released, arguments))


def lead(oli_id, tag):
    """A lead of its own customer (one live call per number, issue #65)."""
    return {"oli_id": oli_id, "phone_number": own_number(oli_id), "client_name": tag, "form_type": "home_loan",
            "priority_id": 2}


def push(app, leads):
    response = app.test_client().post("/api/leads", json={"leads": leads}, headers=AUTH)
    return response.status_code, response.headers.get("Retry-After"), response.get_json()


def test_overlapping_batches_through_two_nodes_all_answer_201_and_store_each_lead_once(hosts, node_url):
    pool = [f"P{i:04d}" for i in range(1000)]
    answers, seconds = [], []

    def pusher(index):
        app = hosts["AB"[index % 2]]
        rng = random.Random(index)
        for batch in range(6):
            tag = f"t{index:02d}b{batch}"
            started = time.monotonic()
            answers.append(push(app, [lead(oli_id, tag) for oli_id in rng.sample(pool, 500)])[0])
            seconds.append(time.monotonic() - started)

    at_once(pusher, range(ACTORS))
    assert answers == [201] * ACTORS * 6
    rows = same_on_every_node(node_url, "SELECT oli_id, client_name, data_id FROM sales_master ORDER BY oli_id")
    assert [row["oli_id"] for row in rows] == pool, "each lead stored once"
    print(f"overlapping 500-lead batches through two nodes: p99 {sorted(seconds)[int(len(seconds) * 0.99)]:.2f} s")


def due_leads(sql, run):
    names = [f"R{run:02d}-{n:02d}" for n in range(ACTORS)]
    sql("INSERT INTO sales_master (oli_id, data_id, phone_number, client_name, form_type, priority_id, dial_status,"
        " call_count, isReserved, created_at, updated_at) VALUES "
        + ", ".join("(%s, UUID(), '9876543210', 'Lead', 'home_loan', 2, 'Pending', 0, 0, %s, %s)" for _ in names),
        *[v for name in names for v in (name, DEFAULT_NOW, DEFAULT_NOW)])
    return names


@pytest.fixture
def agents(sql):
    """ACTORS available agents with the skill home_loan, ids 701-716."""
    ids = list(range(701, 701 + ACTORS))
    sql("INSERT INTO sales_agents (id, extension, name, panel_active, ami_idle) VALUES "
        + ", ".join("(%s, %s, 'Agent', 1, 1)" for _ in ids), *[v for a in ids for v in (a, str(a))])
    sql("INSERT INTO sales_agent_skills (agent_id, form_type) VALUES " + ", ".join("(%s, 'home_loan')" for _ in ids),
        *ids)
    return ids


def claim(hosts, agent_id, run):
    app = hosts["AB"[agent_id % 2]]
    response = app.test_client().post("/engine/claim", headers=ENGINE, json={
        "mode": "progressive", "agent_id": agent_id, "request_id": f"c-{run}-{agent_id}"})
    assert response.status_code == 200, response.get_json()
    return response.get_json()["lead"]


def test_claims_through_two_nodes_never_reserve_a_lead_twice(hosts, node_url, sql, agents):
    for run in range(10):
        leads = due_leads(sql, run)
        got = at_once(lambda agent_id: claim(hosts, agent_id, run), agents)
        assert None not in got and sorted(row["oli_id"] for row in got) == leads, f"run {run}"
        live = same_on_every_node(node_url, "SELECT oli_id, reservation_id FROM sales_master"
                                  " WHERE dial_status = 'Calling' AND isReserved = 1 ORDER BY oli_id")
        assert [row["oli_id"] for row in live] == leads and len({row["reservation_id"] for row in live}) == ACTORS
        sql("UPDATE sales_master SET dial_status = 'Received', isReserved = 0, reservation_id = NULL")


def leads_of_one_number(sql, prefix, phone):
    """ACTORS due Pending leads of home_loan, `prefix`-00 on, all of the number `phone` (E.164 digits)."""
    names = [f"{prefix}-{n:02d}" for n in range(ACTORS)]
    sql("INSERT INTO sales_master (oli_id, data_id, phone_number, phone_e164, client_name, form_type, priority_id,"
        " dial_status, call_count, isReserved, created_at, updated_at) VALUES "
        + ", ".join("(%s, UUID(), %s, %s, 'Lead', 'home_loan', 2, 'Pending', 0, 0, %s, %s)" for _ in names),
        *[v for name in names for v in (name, str(phone), phone, DEFAULT_NOW, DEFAULT_NOW)])


def test_claims_through_two_nodes_on_one_number_at_its_cap_minus_one_serve_exactly_one(hosts, node_url, sql, agents):
    """Issue #50 item 2: every claim of the number writes its row of dialerapi_contact_numbers over
    the version it read, so two claims through two nodes fail certification instead of both
    counting 2 of 3."""
    sql("UPDATE dialerapi_contact_caps SET enabled = 1 WHERE name = 'florida-oklahoma-3-per-24h'")
    for run in range(5):
        phone = 13052021000 + run
        add_contact_attempts(sql, phone, [DEFAULT_NOW - timedelta(hours=2), DEFAULT_NOW - timedelta(hours=1)])
        leads_of_one_number(sql, f"CAP{run}", phone)
        got = at_once(lambda agent_id: claim(hosts, agent_id, f"cap{run}"), agents)
        served = [row["oli_id"] for row in got if row]
        assert len(served) == 1, f"run {run}: {served}"
        numbers = same_on_every_node(node_url, "SELECT version, attempts FROM dialerapi_contact_numbers"
                                     " WHERE phone_e164 = %s", phone)
        assert numbers[0]["version"] == 2 and len(json.loads(numbers[0]["attempts"])) == 3
        live = same_on_every_node(node_url, "SELECT oli_id FROM sales_master WHERE isReserved = 1")
        assert [row["oli_id"] for row in live] == served
        sql("UPDATE sales_master SET dial_status = 'Received', isReserved = 0, reservation_id = NULL")


def test_claims_through_two_nodes_on_leads_sharing_a_number_serve_exactly_one(hosts, node_url, sql, agents):
    """Issue #65 item 6: one live call per number with no cap enabled: every claim writes the
    number's row over the version it read, so of 16 claims through two nodes on 16 leads sharing a
    number one is served and the others pass its leads over (the loser of a certification conflict
    runs again and sees the winner's call)."""
    for run in range(5):
        phone = 919845033000 + run
        leads_of_one_number(sql, f"ONE{run}", phone)
        got = at_once(lambda agent_id: claim(hosts, agent_id, f"one{run}"), agents)
        served = [row["oli_id"] for row in got if row]
        assert len(served) == 1, f"run {run}: {served}"
        live = same_on_every_node(node_url, "SELECT oli_id FROM sales_master WHERE isReserved = 1 AND phone_e164 = %s",
                                  phone)
        assert [row["oli_id"] for row in live] == served
        sql("UPDATE sales_master SET dial_status = 'Received', isReserved = 0, reservation_id = NULL")


def test_personal_callbacks_filed_on_one_node_go_to_their_owners_only_through_two_nodes(hosts, node_url, sql, agents):
    """Issue #40: the CRM files personal callbacks for half the agents through host A (node 1);
    every agent claims at once through both hosts, rounds on end: each callback goes to its owner,
    none twice, the same on every node."""
    owners = agents[:ACTORS // 2]
    names = []
    for owner in owners:
        for n in range(2):
            name = f"PC-{owner}-{n}"
            assert push(hosts["A"], [lead(name, "personal")])[0] == 201
            response = hosts["A"].test_client().post("/api/pending-callbacks", headers=AUTH, json={
                "oliId": name, "scheduledAt": (DEFAULT_NOW - timedelta(minutes=n + 1)).strftime("%Y-%m-%d %H:%M:%S"),
                "callbackAgentId": owner})
            assert response.status_code == 200, response.get_json()
            names.append(name)
    # The module's hosts share one counter of CRM actions per client address (120 a minute): these
    # 16 must not use up what test_a_host_reads_what_another_host_just_wrote needs.
    limiter.reset()
    for run in range(2):
        due_leads(sql, run)
    taken = []
    for run in range(2):
        got = at_once(lambda agent_id: (agent_id, claim(hosts, agent_id, f"pc{run}")), agents)
        assert None not in [row for _, row in got], f"run {run}: a claim was empty while leads were due"
        taken += [(agent_id, row["oli_id"]) for agent_id, row in got]
    assert len({oli_id for _, oli_id in taken}) == len(taken) == 2 * ACTORS
    assert sorted(oli_id for _, oli_id in taken if oli_id.startswith("PC-")) == sorted(names)
    for agent_id, oli_id in taken:
        if oli_id.startswith("PC-"):
            assert oli_id.split("-")[1] == str(agent_id), f"{oli_id} went to {agent_id}"
    live = same_on_every_node(node_url, "SELECT oli_id, callback_agent_id FROM sales_master"
                              " WHERE dial_status = 'Calling' AND isReserved = 1 ORDER BY oli_id")
    assert sorted(row["oli_id"] for row in live) == sorted(oli_id for _, oli_id in taken)
    assert {row["oli_id"]: row["callback_agent_id"] for row in live if row["callback_agent_id"]} == {
        oli_id: agent_id for agent_id, oli_id in taken if oli_id.startswith("PC-")}, "kept until the call ends"


def test_crm_callbacks_at_settle_through_the_other_node_are_applied_once(hosts, node_url, sql, agents):
    leads = due_leads(sql, 0)
    claimed = at_once(lambda agent_id: claim(hosts, agent_id, 0), agents)
    assert sorted(row["oli_id"] for row in claimed) == leads

    def crm_then_engine(row):
        # The CRM files a callback through host A while the engine settles through host B, at once.
        oli_id = row["oli_id"]
        held = hosts["A"].test_client().post("/api/pending-callbacks", headers=AUTH,
                                             json={"oliId": oli_id, "scheduledAt": "2026-11-23 11:30"})
        settled = hosts["B"].test_client().post("/engine/settle", headers=ENGINE, json={
            "oli_id": oli_id, "outcome": "no_answer", "started_at": "2026-11-21 09:59:45"})
        return held.status_code, settled.status_code

    # 202: held while live, applied at settle; 200: the settle came first and it applied at once.
    assert set(at_once(crm_then_engine, claimed)) <= {(202, 200), (200, 200)}
    with hosts["A"].app_context():  # the sweep applies a callback held by a lead that settled meanwhile
        crm_actions.sweep(get_db(), DEFAULT_NOW.replace(minute=5), hosts["A"].config["DB_TIMEZONE"], hosts["A"].config)
    rows = same_on_every_node(node_url, "SELECT oli_id, dial_status, callback_scheduled_at, isReserved"
                              " FROM sales_master ORDER BY oli_id")
    assert {(row["dial_status"], str(row["callback_scheduled_at"]), row["isReserved"]) for row in rows} == \
        {("Callback", "2026-11-23 11:30:00", 0)}, "every callback applied, over the settled call"
    assert same_on_every_node(node_url, "SELECT COUNT(*) AS n FROM sales_call_attempts") == [{"n": ACTORS}]
    assert same_on_every_node(node_url, "SELECT status, COUNT(*) AS n FROM sales_pending_actions GROUP BY status") \
        == [{"status": "applied", "n": ACTORS}], "each callback applied once"


def conflicts(node_url):
    """Certification failures and brute-force aborts on the three nodes, summed (Galera's own counters)."""
    total = 0
    for n in (1, 2, 3):
        for row in on_node(node_url, n, "SHOW GLOBAL STATUS WHERE Variable_name IN"
                                        " ('wsrep_local_cert_failures', 'wsrep_local_bf_aborts')"):
            total += int(row["Value"])
    return total


def test_settles_through_two_nodes_count_every_call_once_without_a_conflict(hosts, node_url, sql, agents):
    """Issue #37 item 6: 16 engines settling at once through two nodes (answers, abandons, no
    answers) lose and double no count (the windows equal a count over the call
    records), and the counts' rows, one per node, cost no certification conflict."""
    for run in range(3):
        leads = due_leads(sql, run)
        claimed = at_once(lambda agent_id: claim(hosts, agent_id, run), agents)
        assert sorted(row["oli_id"] for row in claimed) == leads
        outcomes = {}

        def play(row):
            n = int(row["oli_id"][-2:])
            app, outcome = hosts["AB"[n % 2]], ("answered", "abandoned", "no_answer", "answered")[n % 4]
            outcomes[row["oli_id"]] = outcome
            client = app.test_client()
            if outcome != "no_answer":
                assert client.post("/engine/bridge", headers=ENGINE, json={
                    "oli_id": row["oli_id"], "request_id": f"b-{run}-{n}"}).status_code == 200
            if outcome == "answered":
                assert client.post("/engine/call-connected", headers=ENGINE, json={
                    "oli_id": row["oli_id"], "agent_id": 701 + n, "request_id": f"m-{run}-{n}"}).status_code == 200
            return row

        at_once(play, claimed)
        before = conflicts(node_url)

        def settle(row):
            n = int(row["oli_id"][-2:])
            return hosts["AB"[n % 2]].test_client().post("/engine/settle", headers=ENGINE, json={
                "oli_id": row["oli_id"], "outcome": outcomes[row["oli_id"]], "started_at": row["reserved_at"],
                "reservation_id": row["reservation_id"]}).status_code

        assert at_once(settle, claimed) == [200] * ACTORS
        assert conflicts(node_url) == before, "settles on two nodes never certify against each other"
        sql("UPDATE sales_agents SET ami_idle = 1")
    counts = same_on_every_node(node_url, "SELECT node, SUM(calls) AS calls, SUM(answered) AS answered,"
                                " SUM(abandoned) AS abandoned FROM dialerapi_abandon_counts WHERE grain = 'd'"
                                " GROUP BY node ORDER BY node")
    assert len(counts) == 2, "each node writes its own rows"
    records = same_on_every_node(node_url, "SELECT COUNT(*) AS calls, SUM(result IN ('ANSWER', 'ABANDON'))"
                                 " AS answered, SUM(result = 'ABANDON') AS abandoned FROM sales_call_attempts")[0]
    assert {key: sum(int(row[key]) for row in counts) for key in ("calls", "answered", "abandoned")} == \
        {key: int(records[key]) for key in ("calls", "answered", "abandoned")} == \
        {"calls": 3 * ACTORS, "answered": 3 * 12, "abandoned": 3 * 4}
    for host in hosts.values():
        state = host.test_client().post("/engine/floor", headers=ENGINE, json={}).get_json()
        assert state["form_types"][0]["abandons"]["windows"]["today"]["answered"] == 3 * 12


def test_agent_states_changed_through_two_nodes_are_each_recorded_once(hosts, node_url, sql, agents):
    """Issue #49: 16 agents' states changed at once through two hosts on two nodes, each change in
    its own transaction: every node holds the same history, one row per change, and each agent's
    last row is the agent as sales_agents holds them."""

    def change(agent_id):
        app = hosts["AB"[agent_id % 2]]
        for step in range(6):
            body = {"agent_id": agent_id, "ami_idle": step % 2 == 1}
            response = app.test_client().post("/engine/agent-state", headers=ENGINE, json=body)
            assert response.status_code == 200, response.get_json()

    at_once(change, agents)
    rows = same_on_every_node(node_url, "SELECT agent_id, ami_idle FROM dialerapi_agent_states ORDER BY agent_id, at_utc, id")
    for agent_id in agents:
        mine = [row["ami_idle"] for row in rows if row["agent_id"] == agent_id]
        assert mine == [0, 1, 0, 1, 0, 1], (agent_id, mine)
    current = {row["id"]: row["ami_idle"] for row in sql("SELECT id, ami_idle FROM sales_agents")}
    assert all(current[agent_id] == 1 for agent_id in agents)


def test_a_claim_that_read_its_campaign_before_a_pause_on_the_other_node_does_not_commit(hosts, node_url, sql, agents):
    """Issue #67 item 4 (migration 0024): a claim through node 1 reads home_loan active and writes
    its lead; a pause commits through node 2; the claim's commit fails certification (no lock
    crosses nodes: without the claim gate it commits, after the pause), and run again it is refused
    campaign_paused. The lead stays free on every node."""
    due_leads(sql, 0)
    claimer = connect(node_url(1))
    try:
        row = claims.claim_next(claimer, agents[0], DEFAULT_NOW, tz=TZ)
        assert row is not None
        with hosts["B"].app_context():
            get_db().run(operations.pause, "home_loan", DEFAULT_NOW, "test")
        with pytest.raises(pymysql.err.OperationalError) as refused:
            claimer.commit()
        assert refused.value.args[0] == 1213, "a certification failure, which transaction() runs again"
    finally:
        claimer.close()
    answer = hosts["A"].test_client().post("/engine/claim", headers=ENGINE, json={
        "mode": "progressive", "agent_id": agents[0], "request_id": "after-the-pause"})
    assert (answer.status_code, answer.get_json()["reason"]) == (409, "campaign_paused")
    assert same_on_every_node(node_url, "SELECT COUNT(*) AS n FROM sales_master WHERE isReserved = 1") == [{"n": 0}]


def written_seqno(conn):
    """The cluster's sequence number of the last transaction this connection committed (Galera
    orders every commit of the cluster in one sequence)."""
    with conn.cursor() as cur:
        cur.execute("SELECT WSREP_LAST_WRITTEN_GTID() AS gtid")
        return int(cur.fetchone()["gtid"].decode().rsplit("-", 1)[1])


def committed(conn, work, *args):
    """Run `work(conn, *args)` and commit, again after a certification failure as transaction()
    does; (its result, the commit's sequence number)."""
    while True:
        try:
            result = work(conn, *args)
            conn.commit()
            return result, written_seqno(conn)
        except pymysql.err.OperationalError as exc:
            conn.rollback()
            if exc.args[0] != 1213:
                raise


def test_sixteen_claimers_and_a_pause_through_two_nodes_commit_no_claim_after_it(node_url, sql, agents):
    """Issue #67 item 4: 16 claimers, half through node 1 and half through node 2, and a pause
    through node 2 released at once, three rounds: every claim committed before the pause in the
    cluster's one order of commits, every claimer ends refused campaign_paused, and no lead is
    reserved twice (without the claim gate, claims through node 1 commit after the pause)."""
    leads = [f"S-{n:03d}" for n in range(400)]
    sql("INSERT INTO sales_master (oli_id, data_id, phone_number, client_name, form_type, priority_id, dial_status,"
        " call_count, isReserved, created_at, updated_at) VALUES "
        + ", ".join("(%s, UUID(), %s, 'Lead', 'home_loan', 2, 'Pending', 0, 0, %s, %s)" for _ in leads),
        *[v for name in leads for v in (name, own_number(name), DEFAULT_NOW, DEFAULT_NOW)])
    for run in range(3):
        claimed, refusals = [], []

        def claimer(agent_id):
            conn = connect(node_url(1 + agent_id % 2))
            try:
                while True:
                    try:
                        row, seqno = committed(conn, claims.claim_next, agent_id, DEFAULT_NOW, TZ)
                    except claims.NotClaimable as refused:
                        conn.rollback()
                        refusals.append(refused.reason)
                        return None
                    claimed.append((row["oli_id"], seqno))
            finally:
                conn.close()

        def pause():
            conn = connect(node_url(2))
            try:
                return committed(conn, operations.pause, "home_loan", DEFAULT_NOW, "test")[1]
            finally:
                conn.close()

        paused_at = [seqno for seqno in at_once(lambda agent_id: claimer(agent_id) if agent_id else pause(),
                                                 [*agents, None]) if seqno is not None]
        assert refusals == [operations.CAMPAIGN_PAUSED] * ACTORS, f"run {run}"
        assert [(oli_id, seqno) for oli_id, seqno in claimed if seqno > paused_at[0]] == [], \
            f"no claim committed after the pause (run {run})"
        assert len({oli_id for oli_id, _ in claimed}) == len(claimed)
        assert same_on_every_node(node_url, "SELECT COUNT(*) AS n FROM sales_master WHERE isReserved = 1") == \
            [{"n": len(claimed)}]
        sql("UPDATE sales_master SET isReserved = 0, dial_status = 'Pending', reservation_id = NULL")
        conn = connect(node_url(1))
        committed(conn, operations.resume, "home_loan", DEFAULT_NOW, "test")
        conn.close()


def test_a_job_runs_once_per_tick_across_hosts_on_two_nodes(node_url):
    databases = [Database(node_url(*((1, 2, 3) if i % 2 else (2, 3, 1))), pool_size=1) for i in range(ACTORS)]
    try:
        ticks = [TICK + timedelta(hours=1, seconds=60 * i) for i in range(40)]
        runs = race_ticks(databases, "sweep", ticks)
    finally:
        for db in databases:
            db.close()
    assert {tick: len(ran) for tick, ran in runs.items()} == {tick: 1 for tick in ticks}


def test_a_host_reads_what_another_host_just_wrote(hosts):
    missing = 0
    for i in range(100):
        assert push(hosts["A"], [lead(f"C{i:03d}", "causal")])[0] == 201
        answer = hosts["B"].test_client().post("/api/send-callback-request", headers=AUTH,
                                               json={"oliId": f"C{i:03d}", "scheduledAt": "2026-11-22 15:30"})
        missing += answer.status_code == 404
        assert answer.status_code in (200, 404)
    assert missing == 0, f"{missing} of 100 callbacks through host B did not find a lead pushed through host A"


def test_no_outbox_row_is_skipped_with_writers_on_two_nodes(node_url):
    writers = [Database(node_url(1, 2, 3), pool_size=8), Database(node_url(2, 3, 1), pool_size=8)]
    reader = Database(node_url(3, 1, 2), pool_size=1)
    try:
        committed, delivered, _ = race(writers, reader, total_rows=100_000)
    finally:
        for db in (*writers, reader):
            db.close()
    assert len(committed) == 100_000 and sorted(delivered) == sorted(committed)


def test_a_node_killed_and_rejoined_loses_doubles_and_splits_nothing(hosts, node_url):
    answers, lock, stop = [], threading.Lock(), threading.Event()

    def pusher(index):
        app, batch = hosts["AB"[index % 2]], 0
        while not stop.is_set():
            names = [f"K{index:02d}-{batch:04d}-{n:02d}" for n in range(50)]
            started = time.monotonic()
            status, retry_after, body = push(app, [lead(name, "kill") for name in names])
            with lock:
                answers.append(("AB"[index % 2], started, status, retry_after, body, names))
            batch += 1

    threads = [threading.Thread(target=pusher, args=(i,)) for i in range(ACTORS)]
    for thread in threads:
        thread.start()
    time.sleep(4)
    killed_at = time.monotonic()
    galera("kill", 2)
    time.sleep(10)
    galera("rejoin", 2)
    time.sleep(3)
    stop.set()
    for thread in threads:
        thread.join(timeout=120)

    statuses = {(status, (body or {}).get("error")) for _, _, status, _, body, _ in answers}
    assert statuses <= {(201, None), (503, "database_unavailable"), (503, "commit_unknown")}, statuses
    assert all(retry for _, _, status, retry, _, _ in answers if status == 503), "every 503 has Retry-After"
    recovered = [started for host, started, status, *_ in answers if host == "B" and status == 201 and started > killed_at]
    assert recovered and min(recovered) - killed_at < 10, "host B pushes through a live node within seconds"

    stored = {row["oli_id"] for row in same_on_every_node(
        node_url, "SELECT oli_id FROM sales_master WHERE oli_id LIKE 'K%%' ORDER BY oli_id")}
    for _, _, status, _, body, names in answers:
        kept = stored.intersection(names)
        if status == 201:
            assert kept == set(names), "a 201 batch is on every node"
        elif body["error"] == "commit_unknown":
            assert kept in (set(), set(names)), "a batch of unknown outcome is whole or absent"
        else:
            assert kept == set(), "a 503 database_unavailable batch stored nothing"
    assert len(stored) == sum(len(names) for *_, names in answers if set(names) <= stored), "nothing doubled"


def test_a_node_cut_off_from_the_cluster_is_reported_and_passed_over(node_url):
    galera("isolate", 3, 1)
    try:
        deadline = time.monotonic() + 30
        only_three = make_app(node_url(3))
        state = only_three.extensions["dialerapi.health"]
        # Node 3 leaves the Primary component after the suspect timeout (2 s, scripts/galera.sh).
        while (health.check_database(only_three) or "not ready" not in state.db_error) \
                and time.monotonic() < deadline:
            time.sleep(0.5)
        assert only_three.extensions["dialerapi.health"].snapshot() == {"ok": True, "ami": False, "db": False}
        body = only_three.test_client().get("/health", headers=AUTH)
        assert body.status_code == 503 and "is not ready (wsrep_ready OFF" in body.get_json()["checks"]["db"]["error"]
        status, retry_after, answer = push(only_three, [lead("ISO-1", "isolated")])
        assert (status, retry_after, answer["error"]) == (503, "2", "database_unavailable")

        three_then_one = make_app(node_url(3, 1))
        assert push(three_then_one, [lead("ISO-2", "isolated")])[0] == 201
        checks = three_then_one.test_client().get("/health", headers=AUTH).get_json()["checks"]["db"]
        assert checks["node"] == "%s:%s" % database_nodes(node_url(1))[0]
        assert checks["cluster"] == {"wsrep_cluster_size": 2, "wsrep_local_state_comment": "Synced",
                                     "wsrep_ready": True}
    finally:
        galera("isolate", 3, 0)
    checks = make_app(node_url(3)).test_client().get("/health", headers=AUTH).get_json()["checks"]["db"]
    assert checks["cluster"] == {"wsrep_cluster_size": 3, "wsrep_local_state_comment": "Synced", "wsrep_ready": True}


def test_webhooks_through_two_nodes_go_out_once_from_one_sender_at_a_time(node_url):
    """Issue #48: dispatchers of two hosts on two nodes, 16 stepping at once each round: one holds
    the lease in every round, the events written on both nodes take one feed place each, and the
    receiver gets each event once, in feed order per lead."""
    from test_webhooks import Receiver

    from dialerapi.rules.events import lead_events, webhooks
    from dialerapi.upkeep import webhooks as dispatch

    apps = {"A": make_app(node_url(1, 2, 3), WEBHOOK_ALLOWED_HOSTS="127.0.0.1"),
            "B": make_app(node_url(2, 3, 1), WEBHOOK_ALLOWED_HOSTS="127.0.0.1")}
    receiver = Receiver()
    senders = [dispatch.Dispatcher(apps["AB"[n % 2]], by=f"host-{'AB'[n % 2]}:{n}") for n in range(ACTORS)]
    try:
        with apps["A"].app_context():
            get_db().run(webhooks.add_endpoint, receiver.url, ["*"], dispatch.utc_now())

        def write(n):
            lead = {"id": n % 8 + 1, "oli_id": f"G-{n % 8 + 1}", "data_id": "00000000-0000-0000-0000-000000000000"}
            with apps["AB"[n % 2]].app_context():
                get_db().run(lead_events.record, lead_events.CALL_ENDED, lead, DEFAULT_NOW, {"n": n})

        at_once(write, list(range(40)))
        holders = []
        for _ in range(60):
            holding = at_once(lambda one: (one.step(), one.holding)[1], senders)
            holders.append(sum(holding))
            for one in senders:
                if one.in_flight:
                    one.wait_results(10)
            if len(receiver.requests) >= 40 and not any(one.in_flight for one in senders):
                break
        assert set(holders) == {1}, "exactly one sender holds the lease in every round"
        at_once(lambda one: one.step(), senders)
        events = same_on_every_node(node_url, "SELECT id, seq, lead_id FROM dialerapi_lead_events ORDER BY seq")
        assert [row["seq"] for row in events] == list(range(1, 41))
        assert sorted(receiver.ids()) == sorted(f"evt_{row['id']}" for row in events), "each event once"
        seq_of = {f"evt_{row['id']}": row["seq"] for row in events}
        for lead_id in range(1, 9):
            got = [seq_of[r["headers"]["webhook-id"]] for r in receiver.requests if r["event"]["oli_id"] == f"G-{lead_id}"]
            assert got == sorted(got), f"lead {lead_id} in feed order"
    finally:
        for one in senders:
            one.pool.shutdown(wait=True)
            one.sender.close()
        receiver.close()
