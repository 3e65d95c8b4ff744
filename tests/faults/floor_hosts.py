"""Two hosts behind the shipped nginx, agent panels that reconnect as the reference panel does, and
the CRM's and the engine's load through nginx: the harness of the restart and rolling-upgrade tests
(issue #38).

A host is what `make run` and the systemd units start: the HTTP pool and the socket pool of
deploy/gunicorn.conf.py, each its own gunicorn master on its own port. `Host.stop()` sends SIGTERM
to both masters, as `systemctl restart` does (KillMode=mixed: the master only).
"""

import asyncio
import json
import math
import multiprocessing
import os
import random
import signal
import threading
import time

from datetime import timedelta

import requests
import websockets

from conftest import DEFAULT_NOW, ENGINE_SECRET, SECRET, free_port, start_gunicorn

AUTH = {"X-API-Key": SECRET}
ENGINE = {"Authorization": f"Bearer {ENGINE_SECRET}"}
# panel.js: the first retry after 1 s plus up to 3 s of jitter, doubling to 30 s; 1008 stops it;
# after 1013 it waits the refusal's retry_after plus the jitter.
FIRST_RETRY_SECONDS, LAST_RETRY_SECONDS, JITTER_SECONDS = 1.0, 30.0, 3.0
# The load's pace: a busy floor's, within what the two cores these tests run on (both hosts, nginx,
# MariaDB, the panels' client and Chromium) leave after taking over 1,000 sockets.
PUSH_SECONDS = 2
CLAIM_PAUSE_SECONDS = 0.2


class Host:
    """One host's two gunicorn pools on fixed ports, so nginx's upstreams find it again after a restart.

    Every host's clock runs from DEFAULT_NOW at `t0` (a monotonic instant shared by the hosts of a
    floor), so a host started later agrees with the others on the time, as real hosts do."""

    def __init__(self, name, database_url, workdir, t0, release=None, http_settings=None, **settings):
        self.name, self.database_url, self.workdir, self.t0 = name, database_url, workdir, t0
        self.http_port, self.sockets_port = free_port(), free_port()
        self.settings, self.http_settings = settings, http_settings or {}
        self.http = self.sockets = None
        self.start(release)

    def start(self, release=None):
        """Start (or start again) both pools, of `release` (a worktree; None: this checkout)."""
        self.release = release
        self.sockets = start_gunicorn(self.database_url, self.workdir / f"{self.name}-sockets.log", workers=1,
                                      now=self._now(), pool="sockets", port=self.sockets_port, release=release,
                                      **self.settings)
        self.http = start_gunicorn(self.database_url, self.workdir / f"{self.name}-http.log", workers=2,
                                   now=self._now(), port=self.http_port, release=release, **self.settings,
                                   **self.http_settings)

    def _now(self):
        """The floor's wall clock for a process started at once: DEFAULT_NOW plus the floor's age, taken
        at a whole second of that age. libfaketime starts a clock at a whole second, so a fraction
        cut off would leave this pool's clock behind the others' by up to 1 s (and one pool started
        after the other with the same start, by the seconds between): a job's last start then looks
        a second in the future to a host, which runs it again as after a fall-back night (issue #63)."""
        age = time.monotonic() - self.t0
        time.sleep(math.ceil(age) - age)
        return DEFAULT_NOW + timedelta(seconds=math.ceil(age))

    def stop(self):
        """SIGTERM to both masters at once; returns when both have exited (seconds taken)."""
        started = time.monotonic()
        for server in (self.http, self.sockets):
            os.kill(server.process.pid, signal.SIGTERM)
        for server in (self.http, self.sockets):
            server.process.wait(timeout=90)
        return time.monotonic() - started

    def kill(self):
        for server in (self.http, self.sockets):
            if server is not None and server.process.poll() is None:
                server.stop()

    def heartbeat(self, sql):
        """The dialerapi_socket_hosts row of this host's socket pool, or None."""
        rows = sql("SELECT * FROM dialerapi_socket_hosts WHERE host LIKE %s", f"%/127.0.0.1:{self.sockets_port}")
        return rows[0] if rows else None


def floor(sql, panels, first_agent):
    """`panels` + 1 agents dialing home_loan, idle on AMI; 2,000 due home_loan leads for the engine;
    and MOVED-1, a lead no claim takes, for the missed activities a test files during a move."""
    sql(f"INSERT INTO sales_agents (id, extension, name, ami_idle) SELECT {first_agent} + seq,"
        f" CONCAT('7', LPAD(seq, 4, '0')), CONCAT('Agent ', seq), 1 FROM seq_0_to_{panels}")
    sql(f"INSERT INTO sales_agent_skills (agent_id, form_type) SELECT id, 'home_loan' FROM sales_agents"
        f" WHERE id >= {first_agent}")
    sql("INSERT INTO sales_master (oli_id, data_id, phone_number, client_name, form_type, priority_id, dial_status,"
        " call_count, isReserved, created_at, updated_at) SELECT CONCAT('DUE-', LPAD(seq, 5, '0')), UUID(),"
        " CONCAT('9197', LPAD(seq, 6, '0')), CONCAT('Due ', seq), 'home_loan', 2, 'Pending', 0, 0,"
        " '2026-11-21 09:00:00', '2026-11-21 09:00:00' FROM seq_0_to_1999")
    sql("INSERT INTO sales_master (oli_id, data_id, phone_number, client_name, form_type, priority_id, dial_status,"
        " call_count, isReserved, created_at, updated_at) VALUES ('MOVED-1', UUID(), '9196000001', 'Moved',"
        " 'home_loan', 2, 'Received', 1, 0, '2026-11-21 09:00:00', '2026-11-21 09:00:00')")


def file_missed_activity(sql, first_agent):
    """A change to every agent made while panels move: an open missed activity of MOVED-1."""
    sql("INSERT INTO sales_missed_activities (agent_id, lead_id, oli_id, call_type, connected_at)"
        " SELECT a.id, m.id, m.oli_id, 'outbound', '2026-11-21 09:30:00' FROM sales_agents a"
        " JOIN sales_master m ON m.oli_id = 'MOVED-1' WHERE a.id >= %s", first_agent)


def moved(panels, since):
    """Each agent whose connection open at `since` closed after it: {agent_id: (its close code,
    seconds from that close to the state on its next connection or None, that state's
    missed_activities data)}."""
    result = {}
    for agent_id, records in panels.connections.items():
        closed = next((r for r in records if r["opened"] and r["opened"] < since and r["closed"]
                       and r["closed"] >= since), None)
        if closed is None:
            continue
        after = [r for r in records if r["opened"] and r["opened"] >= closed["closed"] and r["frames"]]
        if not after:
            result[agent_id] = (closed["code"], None, None)
            continue
        frames = after[0]["frames"]
        missed = next((m["data"] for _, m in frames if m["event"] == "dialer.missed_activities"), None)
        result[agent_id] = (closed["code"], frames[0][0] - closed["closed"], missed)
    return result


def late_or_stale(result, within):
    """The agents of a `moved` result not back within `within` seconds, and those whose first state
    back did not list MOVED-1."""
    late = {agent_id: r[1] for agent_id, r in result.items() if r[1] is None or r[1] > within}
    stale = [agent_id for agent_id, r in result.items()
             if r[2] is not None and not any(item["oli_id"] == "MOVED-1" for item in r[2]["items"])]
    return late, stale


def leads_once(load, sql, prefix):
    """The database after a load: every pushed lead stored once, no lead on two calls at once, none
    left reserved. Returns the number of claims."""
    stored = sql.one("SELECT COUNT(*) AS n FROM sales_master WHERE oli_id LIKE %s", f"{prefix}-%")["n"]
    assert stored == len(load.pushed) == len(set(load.pushed))
    by_lead = {}
    for oli_id, claimed, settled in load.claims:
        by_lead.setdefault(oli_id, []).append((claimed, settled))
    for oli_id, calls in by_lead.items():
        calls.sort()
        assert all(settled is not None for _, settled in calls), f"a claim of {oli_id} was not settled"
        assert all(later[0] >= earlier[1] for earlier, later in zip(calls, calls[1:])), f"{oli_id} claimed twice"
    assert sql.one("SELECT COUNT(*) AS n FROM sales_master WHERE isReserved = 1")["n"] == 0
    return len(load.claims)


class Panels:
    """Agent panels on one asyncio thread, each reconnecting after a close as panel.js does.

    Every connection of an agent is recorded: {"opened", "frames": [(monotonic, message)],
    "closed", "code"} (code None for a connection attempt that failed before the handshake)."""

    def __init__(self, url, agent_ids, seed=38):
        self.url = url
        self.connections = {agent_id: [] for agent_id in agent_ids}
        self.random = random.Random(seed)
        self.stopping = False
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        self._tasks = asyncio.run_coroutine_threadsafe(self._start(list(agent_ids)), self._loop).result(30)

    async def _start(self, agent_ids):
        return [asyncio.ensure_future(self._panel(agent_id)) for agent_id in agent_ids]

    async def _panel(self, agent_id):
        delay = FIRST_RETRY_SECONDS
        while not self.stopping:
            record = {"opened": None, "frames": [], "closed": None, "code": None}
            self.connections[agent_id].append(record)
            retry_after = None
            try:
                async with websockets.connect(f"{self.url}/ws?agentId={agent_id}", additional_headers=AUTH,
                                              open_timeout=30, ping_interval=None, max_queue=None) as ws:
                    record["opened"] = time.monotonic()
                    try:
                        async for raw in ws:
                            message = json.loads(raw)
                            record["frames"].append((time.monotonic(), message))
                            if message["event"] == "dialer.outbound_blocked":
                                delay = FIRST_RETRY_SECONDS
                            elif message["event"] == "server_error":
                                retry_after = message["data"].get("retry_after")
                    except websockets.ConnectionClosed:
                        pass
                    record["code"] = ws.close_code
            except (OSError, asyncio.TimeoutError, websockets.InvalidHandshake):
                pass
            record["closed"] = time.monotonic()
            if self.stopping or record["code"] == 1008:
                return
            if record["code"] == 1013:
                await asyncio.sleep((retry_after or 10) + self.random.uniform(0, JITTER_SECONDS))
            else:
                await asyncio.sleep(delay + self.random.uniform(0, JITTER_SECONDS))
                delay = min(delay * 2, LAST_RETRY_SECONDS)

    def open_count(self):
        """Agents whose latest connection is open and got its state on connect."""
        return sum(1 for records in self.connections.values()
                   if records and records[-1]["closed"] is None and records[-1]["frames"])

    def leave(self, agent_ids):
        """Close the panels of `agent_ids` for good (their agents log off)."""
        async def cancel():
            tasks = [self._tasks[index] for index, agent_id in enumerate(self.connections) if agent_id in agent_ids]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        asyncio.run_coroutine_threadsafe(cancel(), self._loop).result(60)
        for agent_id in agent_ids:
            del self.connections[agent_id]

    def wait_open(self, count, timeout):
        deadline = time.monotonic() + timeout
        while self.open_count() < count:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.2)
        return True

    def close(self):
        self.stopping = True

        async def cancel():
            for task in self._tasks:
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)
        asyncio.run_coroutine_threadsafe(cancel(), self._loop).result(60)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)


def batch(prefix, n, size):
    return {"leads": [{"oli_id": f"{prefix}-{n:04d}-{i:03d}", "phone_number": f"98{n % 100:02d}{i:06d}",
                       "client_name": f"Lead {n}-{i}", "form_type": "home_loan", "priority_id": 2}
                      for i in range(size)]}


class Load:
    """The CRM's 500-lead pushes (one every PUSH_SECONDS: 15,000 leads a minute), the engine's claims
    and settles (two engine threads, each claiming again CLAIM_PAUSE_SECONDS after it settled:
    about 10 calls a second) and the CRM's callbacks (about 1.5 a second, under the CRM-action
    limit) through nginx, each on its own thread until `stop()`, in a process of their own, so that the panels'
    client does not wait on their JSON for the interpreter lock. Every answer is kept: a failure is
    a 5xx or a request that got no answer (a connection error or a timeout at the client)."""

    def __init__(self, base, prefix, batch_size=500):
        context = multiprocessing.get_context("spawn")
        self._stop = context.Event()
        self._results = context.Queue()
        self._process = context.Process(target=_run_load, args=(base, prefix, batch_size, self._stop, self._results))
        self._process.start()
        self.answers, self.pushed, self.claims = [], [], []

    def stop(self):
        if self._process is None:
            return
        self._stop.set()
        self.answers, self.pushed, self.claims = self._results.get(timeout=120)
        self._process.join(30)
        self._process = None

    def failures(self):
        return [(kind, answer) for kind, answer in self.answers if not isinstance(answer, int) or answer >= 500]

    def counts(self):
        counts = {}
        for kind, answer in self.answers:
            key = str(answer) if isinstance(answer, int) else "error"
            counts.setdefault(kind, {}).setdefault(key, 0)
            counts[kind][key] += 1
        return counts


def _run_load(base, prefix, batch_size, stop, results):
    load = _LoadThreads(base, prefix, batch_size, stop)
    stop.wait()
    load.join()
    results.put((load.answers, load.pushed, load.claims))


class _LoadThreads:
    """The threads of `Load`, in its process."""

    def __init__(self, base, prefix, batch_size, stop):
        self.base, self.prefix, self.batch_size = base, prefix, batch_size
        self.answers = []  # (kind, status or the exception's text)
        self.pushed = []  # oli_ids stored (201)
        self.claims = []  # (oli_id, claimed at, settled at or None)
        self._lock = threading.Lock()
        self._stop = stop
        self._threads = [threading.Thread(target=target, daemon=True)
                         for target in (self._pushes, self._claims, self._claims, self._callbacks)]
        for thread in self._threads:
            thread.start()

    def join(self):
        for thread in self._threads:
            thread.join(90)

    def _request(self, kind, path, headers, body):
        try:
            response = requests.post(self.base + path, json=body, headers=headers, timeout=60)
        except requests.RequestException as exc:
            with self._lock:
                self.answers.append((kind, f"{type(exc).__name__}: {exc}"))
            return None
        with self._lock:
            self.answers.append((kind, response.status_code))
        return response

    def _pushes(self):
        n = 0
        while not self._stop.is_set():
            body = batch(self.prefix, n, self.batch_size)
            response = self._request("push", "/api/leads", AUTH, body)
            if response is not None and response.status_code == 201:
                with self._lock:
                    self.pushed.extend(lead["oli_id"] for lead in body["leads"])
            n += 1
            self._stop.wait(PUSH_SECONDS)

    def _claims(self):
        n = 0
        name = threading.current_thread().name
        while not self._stop.is_set():
            n += 1
            claim = self._request("claim", "/engine/claim", ENGINE,
                                  {"mode": "predictive", "request_id": f"{self.prefix}-{name}-{n}"})
            lead = claim.json().get("lead") if claim is not None and claim.status_code == 200 else None
            if lead is None:
                self._stop.wait(0.1)
                continue
            claimed = time.monotonic()
            settle = self._request("settle", "/engine/settle", ENGINE, {
                "oli_id": lead["oli_id"], "reservation_id": lead["reservation_id"], "outcome": "no_answer",
                "started_at": lead["reserved_at"]})
            ok = settle is not None and settle.status_code == 200
            with self._lock:
                self.claims.append((lead["oli_id"], claimed, time.monotonic() if ok else None))
            self._stop.wait(CLAIM_PAUSE_SECONDS)

    def _callbacks(self):
        n = 0
        while not self._stop.is_set():
            with self._lock:
                oli_id = self.pushed[-1 - n % len(self.pushed)] if self.pushed else None
            if oli_id is not None:
                self._request("callback", "/api/send-callback-request", AUTH,
                              {"oliId": oli_id, "scheduledAt": "2026-11-21 16:00:00"})
                n += 1
            self._stop.wait(0.6)  # the CRM-action limit is 120 a minute per address
