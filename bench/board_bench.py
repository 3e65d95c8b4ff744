"""The supervisor board and the agent state history (issue #49).

    make bench            (or: scripts/devdb.sh exec .venv/bin/python bench/board_bench.py)

1. The board: a floor of AGENTS agents in four campaigns, each agent's panel open on the socket
   pool (one gevent gunicorn, as shipped) behind the shipped nginx, and the HTTP pool beside it.
   Headless Chromium opens /board/ with a supervisor token: first render is the page's time from
   navigation to the snapshot's table on screen (performance.now()). Then CHANGES agent-state
   changes at CHANGE_RATE/s through nginx (the engine's POST /engine/agent-state, random agents,
   each one a change, none of an agent changed in the last 2 s); the page notes when each row is put on screen (Date.now(), the same
   machine's clock as the bench's), so a change's latency is from just before its request to its
   row in the DOM. The script time of every update frame is the page's own measure
   (performance.now() around the frame's handling). Targets: first render < 1 s, each update
   < 100 ms of script, change to DOM p99 < 1 s.
2. The history's cost: claim, settle and agent-state p99 of this release beside the release
   before it (PREVIOUS, a git worktree, which writes no history) on the same schema and floor, in
   the same minutes: six blocks, ABBAAB; in each, for each release, progressive claims, settles
   of live leads and agent-state changes at HOT_RATE/s each, all three at once, for HOT_SECONDS.
   Target: each p99 within 1.05x of the previous release's (medians of the blocks).
3. Rows a day and the report: the history rows one call writes through the engine API (the agent
   busy, call-connected, settle, idle with a wrap-up), measured; 30 days of a floor of AGENTS
   agents written into the history (SHIFT_SQL: the measured two rows a call, CALLS_PER_DAY slots
   of an 8-hour shift less lunch, a pause and a resume, the panel opening and closing), every day
   rolled up by the job's own function (timed), and GET /api/reports/agents over the 30 days
   through gunicorn, REPORT_RUNS times, with today rolled up to 12 minutes before its last change
   (as between two runs of the job), so today's last 12 minutes come from the history. Target: < 2 s.

Prints tables and writes bench-results-board.json.
"""

import json
import os
import platform
import random
import statistics
import sys
import tempfile
import threading
import time
from contextlib import ExitStack
from datetime import datetime, timedelta, timezone
from pathlib import Path
from types import SimpleNamespace
from zoneinfo import ZoneInfo

import requests
from common import ROOT, bench_database, gunicorn, wait_for_purge, wait_until_idle, wrk
from floor_bench import SECRET, Floor
from results_bench import previous_release, sql

from dialerapi.plumbing import clock
from dialerapi.plumbing.db import connect
from dialerapi.rules.agents import state_history

sys.path.insert(0, str(ROOT / "tests"))
from conftest import start_chromium, start_nginx  # noqa: E402 (the tests' Chromium and private nginx)

DB_NAME = "dialerapi_bench_board"
ENGINE_SECRET = "bench-board-engine-secret-01234"
SUPERVISOR_SECRET = "bench-board-supervisor-secret-0123"
PREVIOUS = os.environ.get("BENCH_BOARD_PREVIOUS", "5d19dea")
AGENTS = int(os.environ.get("BENCH_AGENTS", 1000))
FORM_TYPES = ("home_loan", "credit_card", "personal_loan", "auto_loan")
LEADS = 100_000
CHANGES = int(os.environ.get("BENCH_BOARD_CHANGES", 600))
CHANGE_RATE = 20
HOT_RATE = 50
HOT_SECONDS = int(os.environ.get("BENCH_HOT_SECONDS", 20))
CALLS_PER_DAY = 160  # an 8-hour shift, a call every 3 minutes
REPORT_DAYS = 30
REPORT_RUNS = 5
PARTS = os.environ.get("BENCH_BOARD_PARTS", "board,hot,report").split(",")
# The bench's servers run in UTC (DB_TIMEZONE), so its days are UTC days.
TZ = ZoneInfo("UTC")
RUN = int(time.time())


def fresh_floor(url):
    """AGENTS agents (ids 1..AGENTS) in four campaigns, idle on AMI and out of wrap-up, with no
    history, and LEADS due leads of those campaigns."""
    sql(url, "DELETE FROM sales_pending_actions", "DELETE FROM sales_missed_activities",
        "DELETE FROM sales_call_attempts", "DELETE FROM sales_agent_skills", "DELETE FROM sales_agents",
        "DELETE FROM dialerapi_outbox", "DELETE FROM dialerapi_engine_replies", "DELETE FROM dialerapi_socket_hosts",
        "TRUNCATE dialerapi_agent_states", "TRUNCATE dialerapi_agent_days", "TRUNCATE sales_master",
        "INSERT INTO sales_master (oli_id, data_id, phone_number, client_name, form_type, priority_id, dial_status,"
        " call_count, isReserved, phone_e164, created_at, updated_at) SELECT CONCAT('L-', LPAD(seq, 6, '0')), UUID(),"
        " CONCAT('9198', LPAD(seq, 8, '0')), CONCAT('Lead ', seq), ELT(seq % 4 + 1, 'home_loan', 'credit_card',"
        f" 'personal_loan', 'auto_loan'), 2, 'Pending', 0, 0, CAST(CONCAT('9198', LPAD(seq, 8, '0')) AS UNSIGNED),"
        f" NOW(), NOW() FROM seq_0_to_{LEADS - 1}",
        "INSERT INTO sales_agents (id, extension, name, ami_idle, panel_active) SELECT seq, CONCAT('6', LPAD(seq, 4,"
        f" '0')), CONCAT('Agent ', seq), 1, 1 FROM seq_1_to_{AGENTS}",
        "INSERT INTO sales_agent_skills (agent_id, form_type) SELECT id, ELT(id % 4 + 1, 'home_loan', 'credit_card',"
        " 'personal_loan', 'auto_loan') FROM sales_agents")


def percentile(values, fraction):
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(fraction * len(ordered)))], 1) if ordered else None


# --- 1. the board ------------------------------------------------------------------------------------

def board(url):
    settings = {"DATABASE_URL": url, "WS_SECRET": SECRET, "ENGINE_SECRET": ENGINE_SECRET, "DB_TIMEZONE": "UTC",
                "SUPERVISOR_SECRET": SUPERVISOR_SECRET, "TRUSTED_PROXY_COUNT": "1"}
    port = 19500 + os.getpid() % 300
    workdir = Path(tempfile.mkdtemp(prefix="dialerapi-bench-board-"))
    with ExitStack() as stack:
        http, _ = stack.enter_context(gunicorn("wsgi:app", port, **settings))
        sockets, _ = stack.enter_context(gunicorn("wsgi:app", port + 1, workers=1, GUNICORN_POOL="sockets", **settings))
        nginx = start_nginx(SimpleNamespace(base_url=http), workdir, sockets=SimpleNamespace(base_url=sockets))
        stack.callback(nginx.stop)
        base = f"http://127.0.0.1:{nginx.port}"
        panels = Floor(base.replace("http://", "ws://"), range(1, AGENTS + 1))
        stack.callback(panels.close)
        browser = start_chromium(workdir / "chromium")
        stack.callback(browser.quit)
        browser.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument",
                                {"source": "window.DIALERAPI_BOARD = {trace: true};"})
        token = requests.post(base + "/api/supervisor-tokens", json={"name": "bench"}, headers={"X-API-Key": SECRET},
                              timeout=10).json()["token"]
        renders = []
        for _ in range(3):  # the first load also warms the page's files and the service's reads
            browser.get("about:blank")
            browser.get(f"{base}/board/#token={token}")
            deadline = time.monotonic() + 30
            while browser.execute_script("return window.DialerBoard && window.DialerBoard.renderedAt") is None:
                if time.monotonic() > deadline:
                    sys.exit("the board did not render its snapshot within 30 s")
                time.sleep(0.02)
            rows = browser.execute_script("return document.querySelectorAll('#agents tbody tr').length")
            renders.append((browser.execute_script("return window.DialerBoard.renderedAt"), rows,
                            browser.execute_script("return window.DialerBoard.snapshotMs")))
        time.sleep(1)
        changes = []
        chooser = random.Random(49)
        busy, last_change = {}, {}
        session = requests.Session()
        started = time.monotonic()
        for n in range(CHANGES):
            due = started + n / CHANGE_RATE
            if time.monotonic() < due:
                time.sleep(due - time.monotonic())
            # An agent changed in the last 2 s is not changed again: a state that lasts less than a
            # frame is never on screen, rightly, and would count as lost.
            agent_id = chooser.randint(1, AGENTS)
            while time.monotonic() - last_change.get(agent_id, -10) < 2:
                agent_id = chooser.randint(1, AGENTS)
            last_change[agent_id] = time.monotonic()
            busy[agent_id] = not busy.get(agent_id, False)
            sent = time.time() * 1000
            answer = session.post(base + "/engine/agent-state", headers={"X-API-Key": ENGINE_SECRET}, timeout=10,
                                  json={"agent_id": agent_id, "ami_idle": not busy[agent_id]})
            if answer.status_code != 200:
                sys.exit(f"agent-state answered {answer.status_code}: {answer.text}")
            changes.append((agent_id, "on_call" if busy[agent_id] else "free", sent))
        time.sleep(3)
        puts = browser.execute_script("return window.DialerBoard.puts")
        script_ms = browser.execute_script("return window.DialerBoard.scriptMs")
        open_sockets = panels.with_state()
    latencies = []
    for agent_id, state, sent in changes:
        shown = [at for put_agent, put_state, at in puts if put_agent == agent_id and put_state == state and at >= sent]
        latencies.append(min(shown) - sent if shown else None)
    shown = [value for value in latencies if value is not None]
    render_ms = [render for render, _, _ in renders[1:]]
    return {
        "agents": AGENTS, "agent_sockets_open": open_sockets, "rows_rendered": renders[-1][1],
        "first_render_ms": {"runs": [round(r, 1) for r in render_ms], "max": round(max(render_ms), 1),
                            "cold": round(renders[0][0], 1)},
        "snapshot_script_ms": round(renders[-1][2], 1),
        "changes": {"sent": len(changes), "rate_per_s": CHANGE_RATE, "shown": len(shown),
                    "p50_ms": percentile(shown, 0.5), "p99_ms": percentile(shown, 0.99), "max_ms": round(max(shown), 1)},
        "update_script_ms": {"frames": len(script_ms), "p50": percentile(script_ms, 0.5),
                             "p99": percentile(script_ms, 0.99), "max": round(max(script_ms), 1)},
        "target_met": max(render_ms) < 1000 and max(script_ms) < 100 and len(shown) == len(changes)
                      and percentile(shown, 0.99) < 1000,
    }


# --- 2. the history's cost on the hot paths ------------------------------------------------------------

def live_leads(url, name, count):
    """`count` due leads made live as a claim leaves them; a file of their oli_ids for engine_settle.lua."""
    sql(url, "UPDATE sales_master SET previous_dial_status = dial_status, dial_status = 'Calling', isReserved = 1"
             f" WHERE dial_status = 'Pending' AND isReserved = 0 ORDER BY id DESC LIMIT {count}")
    rows = sql(url, "SELECT oli_id FROM sales_master WHERE dial_status = 'Calling' AND isReserved = 1"
                    " AND reservation_id IS NULL")
    path = Path(tempfile.gettempdir()) / f"bench-board-live-{name}.txt"
    path.write_text("\n".join(row["oli_id"] for row in rows) + "\n")
    return path


def hot_paths(url):
    settings = {"DATABASE_URL": url, "WS_SECRET": SECRET, "ENGINE_SECRET": ENGINE_SECRET, "DB_TIMEZONE": "UTC"}
    port = 19800 + os.getpid() % 150
    count = HOT_RATE * HOT_SECONDS
    runs = {}
    with gunicorn("wsgi:app", port, **settings) as (service, _), \
            gunicorn("wsgi:app", port + 1, root=previous_release(PREVIOUS), **settings) as (previous, _):
        for block_no in range(6):
            sides = [("previous", previous), ("service", service)]
            for side, base in sides if block_no in (0, 3, 4) else reversed(sides):
                fresh_floor(url)
                oli_file = live_leads(url, f"{RUN}-{block_no}{side}", count)
                wait_until_idle(url)
                wait_for_purge(url, limit=60, dirty_pages=5000)
                reports = {}
                name = f"b{RUN}-{block_no}{side}"
                loads = {
                    # Claims for the first half of the agents, changes of the other half: a change never
                    # makes a claim's agent unavailable.
                    "claim": ("engine_claim.lua", {"BENCH_AGENTS": AGENTS // 2, "BENCH_RUN": name}),
                    "settle": ("engine_settle.lua", {"BENCH_OLI_FILE": oli_file, "BENCH_RUN": name}),
                    "agent_state": ("engine_agent_state.lua", {"BENCH_AGENTS": AGENTS // 2, "BENCH_FIRST": AGENTS // 2 + 1}),
                }
                threads = [threading.Thread(target=lambda k=kind, s=script, e=env: reports.__setitem__(
                    k, wrk(s, base, HOT_SECONDS, ENGINE_SECRET=ENGINE_SECRET, BENCH_RATE=HOT_RATE, **e)))
                    for kind, (script, env) in loads.items()]
                for thread in threads:
                    thread.start()
                for thread in threads:
                    thread.join()
                for kind, report in reports.items():
                    if report["status_errors"] or report["socket_errors"]:
                        sys.exit(f"{kind} {side}: {report}")
                    runs.setdefault(kind, {}).setdefault(side, []).append(report)
                print(f"block {block_no + 1}, {side}: " + ", ".join(
                    f"{kind} p99 {report['p99_ms']} ms" for kind, report in reports.items()), flush=True)
    figures = {}
    for kind, sides in runs.items():
        figures[kind] = {side: {"p50_ms": round(statistics.median(r["p50_ms"] for r in reports), 2),
                                "p99_ms": round(statistics.median(r["p99_ms"] for r in reports), 2),
                                "p99_runs_ms": [r["p99_ms"] for r in reports],
                                "requests": sum(r["requests"] for r in reports)} for side, reports in sides.items()}
        figures[kind]["ratio"] = round(figures[kind]["service"]["p99_ms"] / figures[kind]["previous"]["p99_ms"], 3)
    figures["target_met"] = all(figures[kind]["ratio"] <= 1.05 for kind in runs)
    return figures


# --- 3. rows a day and the 30-day report -----------------------------------------------------------------

def rows_per_call(url, base):
    """History rows one call writes through the engine API: agent busy, call-connected, settle, idle
    with 30 s of wrap-up. Measured over 20 calls."""
    before = sql(url, "SELECT COUNT(*) AS n FROM dialerapi_agent_states")[0]["n"]
    headers = {"X-API-Key": ENGINE_SECRET}
    for n in range(20):
        agent_id = n + 1
        claimed = requests.post(base + "/engine/claim", headers=headers, timeout=10, json={
            "mode": "progressive", "agent_id": agent_id, "request_id": f"day-{RUN}-{n}"}).json()["lead"]
        requests.post(base + "/engine/agent-state", headers=headers, json={"agent_id": agent_id, "ami_idle": False},
                      timeout=10).raise_for_status()
        requests.post(base + "/engine/call-connected", headers=headers, timeout=10, json={
            "oli_id": claimed["oli_id"], "agent_id": agent_id, "request_id": f"cc-{RUN}-{n}"}).raise_for_status()
        requests.post(base + "/engine/settle", headers=headers, timeout=10, json={
            "oli_id": claimed["oli_id"], "outcome": "answered", "agent_id": agent_id, "call_id": f"day-{RUN}-{n}",
            "started_at": claimed["reserved_at"], "reservation_id": claimed["reservation_id"]}).raise_for_status()
        requests.post(base + "/engine/agent-state", headers=headers, timeout=10,
                      json={"agent_id": agent_id, "ami_idle": True, "wrapup_seconds": 30}).raise_for_status()
    return (sql(url, "SELECT COUNT(*) AS n FROM dialerapi_agent_states")[0]["n"] - before) / 20


# One day's shift of every agent, written by the database itself (a Python loop took half an hour
# for 30 days): from %(start)s plus an offset of up to 10 minutes an agent, the panel opens; a call
# every SLOT seconds (busy 5 s into its slot, idle 60 to 150 s later with 30 s of wrap-up), none in
# the 30 minutes of lunch (a pause and a resume); the panel closes 5 minutes after the last slot.
SHIFT_SQL = """
INSERT INTO dialerapi_agent_states (agent_id, at_utc, panel_active, pause_code, ami_idle, wrapup_until, outbound_blocked)
SELECT a.seq, %(start)s + INTERVAL (a.seq * 37 %% 600) SECOND, 1, NULL, 1, NULL, 0 FROM seq_1_to_{agents} AS a
UNION ALL
SELECT a.seq, %(start)s + INTERVAL ({call_second}) SECOND, 1, NULL, c.seq %% 2,
       IF(c.seq %% 2, %(start)s + INTERVAL ({call_second} + 30) SECOND, NULL), 0
FROM seq_1_to_{agents} AS a, seq_0_to_{last_row} AS c
WHERE c.seq DIV 2 NOT BETWEEN {lunch} AND {lunch} + 9
UNION ALL
SELECT a.seq, %(start)s + INTERVAL (a.seq * 37 %% 600 + ({lunch} + 1) * {slot} + p.seq * 1800) SECOND, 1,
       IF(p.seq = 0, 'lunch', NULL), 1, NULL, 0
FROM seq_1_to_{agents} AS a, seq_0_to_1 AS p
UNION ALL
SELECT a.seq, %(start)s + INTERVAL (a.seq * 37 %% 600 + ({calls} + 1) * {slot} + 300) SECOND, 0, NULL, 1, NULL, 0
FROM seq_1_to_{agents} AS a
"""
SLOT = 8 * 3600 // CALLS_PER_DAY
# The second of a call's row c (two a call: busy, then idle) after %(start)s.
CALL_SECOND = "a.seq * 37 %% 600 + (c.seq DIV 2 + 1) * {slot} + 5 + IF(c.seq %% 2, 60 + (a.seq * 7 + (c.seq DIV 2) * 13) %% 91, 0)"
LUNCH_CALL = CALLS_PER_DAY // 2


def write_history(url, today, now_utc):
    """REPORT_DAYS days of shifts of AGENTS agents (SHIFT_SQL): the closed days from 08:00 UTC,
    today's ending about now. Returns the rows written."""
    statement = SHIFT_SQL.format(agents=AGENTS, slot=SLOT, last_row=2 * CALLS_PER_DAY - 1, lunch=LUNCH_CALL,
                                 calls=CALLS_PER_DAY, call_second=CALL_SECOND.format(slot=SLOT))
    conn = connect(url, io_timeout=3600)
    total = 0
    with conn.cursor() as cur:
        for back in range(REPORT_DAYS - 1, -1, -1):
            day = today - timedelta(days=back)
            start = datetime.combine(day, datetime.min.time()) + timedelta(hours=8)
            if back == 0:
                start = now_utc - timedelta(hours=8, minutes=20)
            total += cur.execute(statement, {"start": start})
            conn.commit()
            print(f"history: day {day} written ({total} rows so far)", flush=True)
    conn.close()
    return total


def report_part(url):
    settings = {"DATABASE_URL": url, "WS_SECRET": SECRET, "ENGINE_SECRET": ENGINE_SECRET, "DB_TIMEZONE": "UTC",
                "SUPERVISOR_SECRET": SUPERVISOR_SECRET}
    port = 19950 + os.getpid() % 40
    calls_url = bench_database(DB_NAME + "_calls")
    fresh_floor(calls_url)
    with gunicorn("wsgi:app", port, **{**settings, "DATABASE_URL": calls_url}) as (base, _):
        per_call = rows_per_call(calls_url, base)
    now_utc = datetime.now(timezone.utc).replace(tzinfo=None, microsecond=0)
    today = now_utc.date()
    fresh_floor(url)
    written = write_history(url, today, now_utc)
    per_agent_day = written / AGENTS / REPORT_DAYS
    conn = connect(url, io_timeout=600)
    rolled = []
    for day in state_history.days_to_roll_up(conn, clock.now(TZ), TZ, REPORT_DAYS):
        started = time.monotonic()
        state_history.roll_up(conn, day, clock.now(TZ), TZ)
        conn.commit()
        rolled.append(time.monotonic() - started)
        print(f"rolled up {day} in {rolled[-1]:.1f} s", flush=True)
    # As the floor stands between two runs of the job (every ten minutes): today rolled up to 12
    # minutes before the shift's last change, so the report reads those 12 minutes of history.
    last = sql(url, "SELECT MAX(at_utc) AS last FROM dialerapi_agent_states")[0]["last"]
    sql(url, f"DELETE FROM dialerapi_agent_days WHERE day = '{today.isoformat()}'")
    state_history.roll_up(conn, today, last - timedelta(minutes=10), TZ)
    conn.commit()
    tail = sql(url, "SELECT COUNT(*) AS n FROM dialerapi_agent_states WHERE at_utc >= "
                    f"'{last - timedelta(minutes=12)}'")[0]["n"]
    conn.close()
    wait_until_idle(url)
    first = (today - timedelta(days=REPORT_DAYS - 1)).isoformat()
    seconds = []
    with gunicorn("wsgi:app", port, **settings) as (base, _):
        for _ in range(REPORT_RUNS):
            started = time.monotonic()
            answer = requests.get(f"{base}/api/reports/agents?from={first}&to={today.isoformat()}",
                                  headers={"Authorization": f"Bearer {SUPERVISOR_SECRET}"}, timeout=120)
            seconds.append(time.monotonic() - started)
            if answer.status_code != 200:
                sys.exit(f"the report answered {answer.status_code}: {answer.text[:300]}")
        body = answer.json()
    login_checks = all(row["login_seconds"] == row["free_seconds"] + row["talk_seconds"] + row["wrap_up_seconds"]
                       + row["blocked_seconds"] + row["pause_seconds"] for row in body["days"])
    return {
        "rows_per_call_measured": per_call, "calls_per_agent_day": CALLS_PER_DAY,
        "rows_per_agent_day": round(per_agent_day, 1), "rows_per_day_1000_agents": round(per_agent_day * 1000),
        "history_rows_written": written, "days": REPORT_DAYS, "agents": AGENTS,
        "roll_up_seconds_per_day": {"days": len(rolled), "median": round(statistics.median(rolled), 2) if rolled else None,
                                    "max": round(max(rolled), 2) if rolled else None},
        "report_seconds": {"runs": [round(s, 2) for s in seconds], "median": round(statistics.median(seconds), 2),
                           "max": round(max(seconds), 2)},
        "report_rows": len(body["days"]), "history_rows_after_todays_roll_up": tail, "login_is_the_sum": login_checks,
        "target_met": max(seconds) < 2 and login_checks,
    }


def main():
    url = bench_database(DB_NAME)
    started = datetime.now().isoformat(timespec="seconds")
    result = {"date": started, "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python "
                                          f"{platform.python_version()}; Chromium, wrk, nginx, gunicorn and MariaDB "
                                          "on the same cores"}
    if "board" in PARTS:
        fresh_floor(url)
        result["board"] = board(url)
        print(json.dumps(result["board"], indent=1), flush=True)
    if "hot" in PARTS:
        result["hot"] = hot_paths(bench_database(DB_NAME + "_hot"))
        print(json.dumps(result["hot"], indent=1), flush=True)
    if "report" in PARTS:
        result["report"] = report_part(bench_database(DB_NAME + "_report"))
        print(json.dumps(result["report"], indent=1), flush=True)
    result["target_met"] = all(result[part]["target_met"] for part in PARTS)
    Path("bench-results-board.json").write_text(json.dumps(result, indent=2) + "\n")
    print(f"targets: {'met' if result['target_met'] else 'NOT met'}")


if __name__ == "__main__":
    main()
