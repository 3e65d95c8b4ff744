"""Claim benchmark: p50/p99 of a progressive claim with 1,000,000 leads and 200 agents, in-process
and through the engine API over HTTP.

    make bench            (or: scripts/devdb.sh exec .venv/bin/python bench/claim_bench.py)

Builds (once) a database `dialerapi_bench` on the same server as DATABASE_URL: 1,000,000
sales_master rows spread over 10 form_types and every claimable status (generated in SQL with
MariaDB's Sequence engine), and 200 available agents with 2 skills each. Nine leads in ten have an
Indian mobile number, one in ten a US number in New York, Chicago, Los Angeles or Honolulu, with
phone_e164 and call_zone_id as a push writes them (issue #30; bench/compliance_bench.py turns the
rules on).

- In-process: each round claims for a random agent in its own transaction
  (dialerapi.rules.dialing.claims.claim_next) and rolls back, so the table stays the same for every claim. A
  reference round trip (SELECT 1 in a transaction) is measured alternately in the same minutes,
  because this machine's CPU speed drifts.
- A busy floor (issue #16): the 200 agents claim at once over 16 connections (16 threads, each
  claim committed), FLOOR_ROUNDS rounds: claims per second, p50/p99 per claim, and the empty
  answers given while a lead the agent may take was due (each empty answer is checked by claiming
  again for that agent after the round, rolled back: a lead there means the answer was wrong).
  The claimed leads are then put back as they were.
- Over HTTP: gunicorn (deploy/gunicorn.conf.py, 2 workers) serves the engine API; wrk (bench/
  engine_claim.lua) sends progressive claims at 50 per second for HTTP_SECONDS, then
  (bench/engine_settle.lua) settles every lead it claimed at the same rate, on a fixed schedule
  (bench/wrk_common.lua). Latency is wrk's, per request, on the client. Before them, with
  LIVE_CALLS leads reserved (two calls per agent: a predictive floor dialing at a ratio of 2),
  wrk (bench/engine_floor.lua) reads the floor state (POST /engine/floor, every form_type) at the
  same rate for FLOOR_STATE_SECONDS (issue #29: target p99 < 20 ms). The claimed and reserved
  leads are then put back as they were.

Prints a table and writes bench-results-claim.json.
"""

import json
import os
import platform
import random
import statistics
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from zoneinfo import ZoneInfo

from common import bench_database, gunicorn, wrk

from dialerapi.plumbing import clock
from dialerapi.plumbing.db import Database, connect
from dialerapi.rules.compliance import claim_checks, phones
from dialerapi.rules.config import dialer as dialer_config
from dialerapi.rules.dialing import claims

LEADS = int(os.environ.get("BENCH_LEADS", 1_000_000))
UTC = ZoneInfo("UTC")  # the bench database's DB_TIMEZONE
AGENTS = 200
FORM_TYPES = [f"form_{n}" for n in range(10)]
ROUNDS = int(os.environ.get("BENCH_CLAIMS", 3000))
DB_NAME = "dialerapi_bench"
ENGINE_SECRET = "bench-engine-secret-0123456789"
HTTP_SECONDS = int(os.environ.get("BENCH_HTTP_SECONDS", 40))
RATE = 50  # engine calls per second
FLOOR_STATE_SECONDS = int(os.environ.get("BENCH_FLOOR_STATE_SECONDS", 20))
FLOOR_STATE_TARGET_MS = 20
LIVE_CALLS = 2 * AGENTS
FLOOR_CONNECTIONS = 16
FLOOR_ROUNDS = int(os.environ.get("BENCH_FLOOR_ROUNDS", 10))
# What a claim leaves on a row besides Calling and the reservation: put back after the HTTP round.
RESTORED = ("priority_id", "disposeRemark", "last_dial_result", "hangup_by", "hangup_cause", "last_attempt_at",
            "first_attempt_at", "next_retry_at", "callback_scheduled_at", "call_count", "data_id")

FILL = """
INSERT INTO sales_master
  (oli_id, data_id, phone_number, client_name, form_type, priority_id, dial_status, next_retry_at,
   callback_scheduled_at, call_count, isReserved, created_at, updated_at)
SELECT CONCAT('BENCH-', seq), UUID(),
       IF(seq %% 10 = 3, CONCAT('1', ELT(1 + (seq DIV 10) %% 4, '212', '312', '415', '808'), '2', LPAD(seq, 6, '0')),
          CONCAT('9198', LPAD(seq, 8, '0'))),
       CONCAT('Lead ', seq),
       CONCAT('form_', seq %% 10),
       IF(seq %% 20 = 0, 1, 2),
       ELT(1 + seq %% 20, 'Callback', 'Pending', 'Pending', 'Pending', 'Pending', 'Pending', 'Pending',
           'Pending', 'Pending', 'Pending', 'Not Connected', 'Not Connected', 'Not Connected',
           'Not Connected', 'Abandoned', 'Received', 'Received', 'Disposed', 'Rejected', 'Pending'),
       IF(seq %% 20 BETWEEN 10 AND 14, %(now)s - INTERVAL 1 DAY + INTERVAL (seq %% 2880) MINUTE, NULL),
       IF(seq %% 20 = 0, %(now)s - INTERVAL 1 DAY + INTERVAL (seq %% 2880) MINUTE, NULL),
       seq %% 5, 0, %(now)s, %(now)s
FROM seq_1_to_{leads}
"""


def phone_facts(conn):
    """phone_e164 and call_zone_id of every lead, as a push works them out (issue #30), by prefix."""
    config = dialer_config.load_config(conn)
    with conn.cursor() as cur:
        cur.execute("UPDATE sales_master SET phone_e164 = CAST(phone_number AS UNSIGNED), do_not_call = 0")
        for prefix, sample in (("9198", "919876543210"), ("1212", "12125550100"), ("1312", "13125550100"),
                               ("1415", "14155550100"), ("1808", "18085550100")):
            zones = phones.zones(claim_checks.number_of(sample, config))
            zone_id = claim_checks.zone_ids(conn, [zones])[zones]
            cur.execute("UPDATE sales_master SET call_zone_id = %s WHERE phone_number LIKE %s", (zone_id, prefix + "%"))


def make_agents(cur, form_types):
    """AGENTS available agents, each with 2 of `form_types` (the same 2 for an agent id every time)."""
    cur.execute("DELETE FROM sales_agent_skills")
    cur.execute("DELETE FROM sales_agents")
    for agent_id in range(1, AGENTS + 1):
        cur.execute("INSERT INTO sales_agents (id, extension, name, panel_active, ami_idle)"
                    " VALUES (%s, %s, %s, 1, 1)", (agent_id, str(5000 + agent_id), f"Agent {agent_id}"))
        for skill in random.Random(agent_id).sample(form_types, 2):
            cur.execute("INSERT INTO sales_agent_skills (agent_id, form_type) VALUES (%s, %s)", (agent_id, skill))


def prepare(now, name=DB_NAME, form_types=FORM_TYPES):
    """The bench database `name` (built when missing): LEADS leads spread over `form_types` in
    every claimable status, and AGENTS available agents with 2 of those skills each. Returns its URL."""
    url = bench_database(name)
    conn = connect(url, io_timeout=600)
    with conn.cursor() as cur:
        cur.execute("SELECT COUNT(*) AS n, SUM(phone_e164 IS NULL) AS unknown FROM sales_master")
        counts = cur.fetchone()
        if counts["n"] != LEADS or counts["unknown"]:
            print(f"filling sales_master with {LEADS:,} leads over {len(form_types)} form_types ...", flush=True)
            started = time.monotonic()
            cur.execute("DELETE FROM sales_master")
            # seq % 20 sets the status. This bench's 10 form_types keep the layout its figures were
            # measured on (two statuses each); any other count takes its form_type from seq DIV 20,
            # so each form_type has leads of every status.
            prefix, count = form_types[0].rsplit("_", 1)[0], len(form_types)
            number = "seq %% 10" if count == 10 else f"(seq DIV 20) %% {count}"
            fill = FILL.replace("CONCAT('form_', seq %% 10)", f"CONCAT('{prefix}_', {number})")
            cur.execute(fill.format(leads=LEADS), {"now": now})
            phone_facts(conn)
            make_agents(cur, form_types)
            conn.commit()
            cur.execute("ANALYZE TABLE sales_master")
            print(f"  filled in {time.monotonic() - started:.1f} s", flush=True)
    conn.close()
    return url


def over_http(url):
    """Claims, the floor state, then settles, through /engine/ at about 50 per second; returns the wrk reports."""
    conn = connect(url)
    conn.autocommit(True)
    with gunicorn("wsgi:app", 18500 + os.getpid() % 400, DATABASE_URL=url, WS_SECRET="bench-crm-secret-0123456789",
                  ENGINE_SECRET=ENGINE_SECRET) as (base, _):
        run = f"bench{int(time.time())}"
        before = marks(conn)
        with conn.cursor() as cur:
            cur.execute("UPDATE sales_master SET previous_dial_status = dial_status, dial_status = 'Calling',"
                        " isReserved = 1 WHERE dial_status = 'Pending' AND isReserved = 0 ORDER BY id LIMIT %s",
                        (LIVE_CALLS,))
        floor_state = wrk("engine_floor.lua", base, FLOOR_STATE_SECONDS, ENGINE_SECRET=ENGINE_SECRET, BENCH_RATE=RATE)
        with conn.cursor() as cur:
            cur.execute("UPDATE sales_master SET dial_status = previous_dial_status, isReserved = 0,"
                        " previous_dial_status = NULL WHERE dial_status = 'Calling' AND isReserved = 1")
        claimed = wrk("engine_claim.lua", base, HTTP_SECONDS, ENGINE_SECRET=ENGINE_SECRET, BENCH_AGENTS=AGENTS,
                      BENCH_RATE=RATE, BENCH_RUN=run)
        live = claimed_leads(conn)
        with tempfile.NamedTemporaryFile("w", suffix=".txt") as listing:
            listing.write("".join(f"{row['oli_id']}\n" for row in live))
            listing.flush()
            settled = wrk("engine_settle.lua", base, 2 * HTTP_SECONDS + 30, ENGINE_SECRET=ENGINE_SECRET,
                          BENCH_RATE=RATE, BENCH_RUN=run, BENCH_OLI_FILE=listing.name)
    put_back(conn, live, before)
    conn.close()
    return claimed, floor_state, settled, len(live)


def marks(conn):
    """The last ids of the tables an HTTP run adds to, which put_back cleans after it: other benches
    keep rows there (bench/abandon_bench.py, 6,000,000 call records)."""
    with conn.cursor() as cur:
        cur.execute("SELECT (SELECT COALESCE(MAX(id), 0) FROM sales_call_attempts) AS attempts,"
                    " (SELECT COALESCE(MAX(id), 0) FROM sales_missed_activities) AS activities")
        return cur.fetchone()


def claimed_leads(conn):
    """The leads claims through HTTP left reserved, with what put_back restores."""
    with conn.cursor() as cur:
        cur.execute("SELECT id, previous_dial_status, oli_id, " + ", ".join(RESTORED) +
                    " FROM sales_master WHERE dial_status = 'Calling' AND isReserved = 1")
        return cur.fetchall()


def put_back(conn, live, before):
    """The leads `live` (claimed_leads) as they were before their claims, and the rows the run added
    since `before` (marks) taken away (autocommit `conn`)."""
    with conn.cursor() as cur:
        if live:
            cur.executemany(
                "UPDATE sales_master SET dial_status = %(previous_dial_status)s, isReserved = 0, previous_dial_status = NULL, "
                + ", ".join(f"{column} = %({column})s" for column in RESTORED) + " WHERE id = %(id)s", live)
        cur.execute("DELETE FROM sales_call_attempts WHERE id > %s", (before["attempts"],))
        cur.execute("DELETE FROM sales_missed_activities WHERE id > %s", (before["activities"],))
        cur.execute("DELETE FROM dialerapi_engine_replies")
        cur.execute("DELETE FROM dialerapi_abandon_counts WHERE node NOT LIKE 'bench:%%'")


def busy_floor(url, now, unlawful=None):
    """Every agent claims at once over FLOOR_CONNECTIONS connections, FLOOR_ROUNDS times; see the module doc.
    `unlawful(conn)`, when given, counts the reserved leads no claim should have taken, before they are put back."""
    db = Database(url, pool_size=FLOOR_CONNECTIONS)
    claim_ms, empty, wrong_empty = [], 0, 0

    def claim(agent_id):
        started = time.perf_counter()
        row = db.run(claims.claim_next, agent_id, now, tz=UTC)
        return agent_id, row, (time.perf_counter() - started) * 1000

    elapsed = 0.0
    with ThreadPoolExecutor(FLOOR_CONNECTIONS) as pool:
        for _ in range(FLOOR_ROUNDS):
            gate = threading.Barrier(FLOOR_CONNECTIONS)
            list(pool.map(lambda _: gate.wait(), range(FLOOR_CONNECTIONS)))  # every connection ready
            started = time.perf_counter()
            results = list(pool.map(claim, range(1, AGENTS + 1)))
            elapsed += time.perf_counter() - started
            claim_ms.extend(ms for _, _, ms in results)
            for agent_id, row, _ in results:
                if row is None:
                    empty += 1
                    with db.transaction() as conn:
                        wrong_empty += claims.claim_next(conn, agent_id, now, tz=UTC) is not None
                        conn.rollback()
    conn = connect(url)
    wrong = unlawful(conn) if unlawful else None
    with conn.cursor() as cur:
        cur.execute("UPDATE sales_master SET dial_status = previous_dial_status, isReserved = 0, "
                    "previous_dial_status = NULL, reservation_id = NULL, reserved_at = NULL "
                    "WHERE dial_status = 'Calling' AND isReserved = 1")
    conn.commit()
    conn.close()
    db.close()
    return {"agents": AGENTS, "connections": FLOOR_CONNECTIONS, "rounds": FLOOR_ROUNDS, "claims": len(claim_ms),
            "claims_per_s": round(len(claim_ms) / elapsed, 1), "p50_ms": round(statistics.median(claim_ms), 2),
            "p99_ms": round(percentile(claim_ms, 0.99), 2), "max_ms": round(max(claim_ms), 2),
            "empty_answers": empty, "empty_answers_while_leads_were_due": wrong_empty, "unlawful": wrong}


def timed_claim(db, agent_id, now):
    """A progressive claim for `agent_id` in its own transaction, rolled back: (the row or None, ms)."""
    started = time.perf_counter()
    with db.transaction() as conn:
        row = claims.claim_next(conn, agent_id, now, tz=UTC)
        conn.rollback()
    return row, (time.perf_counter() - started) * 1000


def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]


def claim_block(db, rng, now, rounds):
    """`rounds` progressive claims for random agents, each rolled back (timed_claim): (claim ms, empty answers)."""
    ms, empty = [], 0
    for _ in range(rounds):
        row, took = timed_claim(db, rng.randint(1, AGENTS), now)
        ms.append(took)
        empty += row is None
    return ms, empty


def claim_figures(ms):
    """{claims, p50_ms, p95_ms, p99_ms, max_ms} of claim times in milliseconds."""
    return {"claims": len(ms), "p50_ms": round(statistics.median(ms), 2), "p95_ms": round(percentile(ms, 0.95), 2),
            "p99_ms": round(percentile(ms, 0.99), 2), "max_ms": round(max(ms), 2)}


def main():
    now = clock.now(UTC)
    db = Database(prepare(now), pool_size=2)
    rng = random.Random(7)
    claim_ms, reference_ms, empty = [], [], 0

    for _ in range(ROUNDS):
        row, ms = timed_claim(db, rng.randint(1, AGENTS), now)
        claim_ms.append(ms)
        empty += row is None
        started = time.perf_counter()
        with db.transaction() as conn, conn.cursor() as cur:
            cur.execute("SELECT 1")
            conn.rollback()
        reference_ms.append((time.perf_counter() - started) * 1000)
    db.close()

    print(f"busy floor: {AGENTS} agents claiming at once over {FLOOR_CONNECTIONS} connections ...", flush=True)
    floor = busy_floor(db.url, now)

    print(f"over HTTP: claims for {HTTP_SECONDS} s, then settles ...", flush=True)
    http_claims, http_floor, http_settles, live = over_http(db.url)

    def http_figures(report):
        return {k: report[k] for k in ("requests", "rate_per_s", "status_errors", "socket_errors", "p50_ms", "p90_ms",
                                       "p99_ms", "max_ms")}

    result = {
        "date": datetime.now().isoformat(timespec="seconds"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "leads": LEADS, "agents": AGENTS, "claims": ROUNDS, "claims_with_nothing_due": empty,
        "claim_ms": {"p50": round(statistics.median(claim_ms), 2), "p95": round(percentile(claim_ms, 0.95), 2),
                     "p99": round(percentile(claim_ms, 0.99), 2), "max": round(max(claim_ms), 2)},
        "reference_round_trip_ms": {"p50": round(statistics.median(reference_ms), 2),
                                    "p99": round(percentile(reference_ms, 0.99), 2)},
        "target_p99_ms": 10,
        "busy_floor": floor,
        "http": {"claim": http_figures(http_claims), "floor": http_figures(http_floor),
                 "settle": http_figures(http_settles), "leads_claimed": live,
                 "server": f"gunicorn, deploy/gunicorn.conf.py, 2 workers; load: wrk, 1 connection at {RATE}/s"},
    }
    result["target_met"] = result["claim_ms"]["p99"] < result["target_p99_ms"]
    for name, target in (("claim", 10), ("floor", FLOOR_STATE_TARGET_MS), ("settle", 10)):
        figures = result["http"][name]
        figures["target_p99_ms"] = target
        figures["target_met"] = figures["p99_ms"] < target and not figures["status_errors"] and not figures["socket_errors"]
    print(f"\nclaim benchmark: {LEADS:,} leads, {AGENTS} agents, {ROUNDS} claims ({result['machine']})")
    print(f"{'':24}{'p50 ms':>10}{'p95 ms':>10}{'p99 ms':>10}{'max ms':>10}")
    c, r = result["claim_ms"], result["reference_round_trip_ms"]
    print(f"{'claim (one transaction)':24}{c['p50']:>10}{c['p95']:>10}{c['p99']:>10}{c['max']:>10}")
    print(f"{'reference: SELECT 1':24}{r['p50']:>10}{'':>10}{r['p99']:>10}")
    print(f"target p99 < 10 ms: {'met' if result['target_met'] else 'NOT met'}")
    print(f"\nbusy floor: {floor['agents']} agents claiming at once over {floor['connections']} connections, "
          f"{floor['rounds']} rounds, each claim committed")
    print(f"{'':24}{'claims/s':>10}{'p50 ms':>10}{'p99 ms':>10}{'max ms':>10}  empty answers while leads were due")
    print(f"{'claim (busy floor)':24}{floor['claims_per_s']:>10}{floor['p50_ms']:>10}{floor['p99_ms']:>10}"
          f"{floor['max_ms']:>10}  {floor['empty_answers_while_leads_were_due']} of {floor['claims']} (goal 0)")
    print(f"\nengine API over HTTP (gunicorn, 2 workers; wrk, one connection, {RATE} per second):")
    print(f"{'':24}{'rate/s':>10}{'p50 ms':>10}{'p90 ms':>10}{'p99 ms':>10}{'max ms':>10}  target")
    for name in ("claim", "floor", "settle"):
        f = result["http"][name]
        print(f"{'POST /engine/' + name:24}{f['rate_per_s']:>10}{f['p50_ms']:>10}{f['p90_ms']:>10}{f['p99_ms']:>10}"
              f"{f['max_ms']:>10}  p99 < {f['target_p99_ms']} ms: {'met' if f['target_met'] else 'NOT met'} "
              f"({f['requests']} requests, {f['status_errors']} errors)")
    print(f"(POST /engine/floor with {LIVE_CALLS} live reservations across {len(FORM_TYPES)} form_types)")
    with open("bench-results-claim.json", "w") as out:
        json.dump(result, out, indent=2)


if __name__ == "__main__":
    main()
