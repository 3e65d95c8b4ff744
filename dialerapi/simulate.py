"""A floor simulator: a day of dialing on a virtual clock against the real database and HTTP API.

`dialerapi simulate` pushes leads through POST /api/leads, adds agents, and plays the dialing
engine: progressive claims, outcomes drawn from `Rates`, ring, talk and wrap-up times, missed
activities for bridged calls, settle, the blocking job and the sweep. The engine calls either the
Python library (`LibraryEngine`: claims, agents, dialstate) or the engine API (`HttpEngine`: POST
/engine/..., exactly what an engine in another language sends). After
answered calls the CRM files callbacks and dispositions through POST /api/pending-callbacks and
/api/pending-dispositions, some while the call is still live (held, applied at settle); some
agents forget to, get blocked after the grace window and file late.

The HTTP API runs in-process (the app's own request path, auth, validation and transactions)
because the service takes "now" from one clock (decisions.md D2), which here is the virtual one.
Simulated rows are marked: leads `SIM<run>-n` with form_types `<type>.SIM<run>`, which only the
run's agents (ids from 900001, removed at the end) have as skills, so a run never dials or changes
a lead it did not push.
"""

import random
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

from . import agents, claims, clock, dialstate
from .actions import sweep
from .db import queries

TICK = timedelta(seconds=5)
SNAPSHOT_EVERY = timedelta(minutes=5)
FORM_TYPES = ("home_loan", "credit_card", "health_insurance")
DISPOSITIONS = ("Not Intrested", "Invalid Lead", "Language Barrier", "DND")
ON_TIME = timedelta(minutes=5)
AGENT_BASE = 900000


@dataclass
class Rates:
    """How calls go. Outcome weights, and the CRM's behaviour after an answered call."""

    outcomes: dict = field(default_factory=lambda: {
        "answered": 35, "no_answer": 33, "busy": 10, "congestion": 3, "rejected": 7, "cancelled": 5,
        "originate_failed": 2,
    })
    ring_seconds: tuple = (8, 30)
    talk_seconds: tuple = (60, 420)
    wrapup_seconds: tuple = (15, 90)
    files_outcome: float = 0.85      # an agent files the CRM outcome within the grace window
    during_call: float = 0.25        # ... and does so while the call is still live
    callback_share: float = 0.45     # a filed outcome is a callback (else a disposition)
    late_filing_minutes: tuple = (5, 30)  # a forgetful agent files this long after being blocked


@dataclass
class Call:
    agent_id: int
    oli_id: str
    outcome: str
    started_at: object
    ends_at: object
    needs_filing: bool  # answered, and the CRM outcome was not filed during the call


@dataclass
class Claimed:
    oli_id: str
    previous_dial_status: str
    callback_scheduled_at: object  # naive DB_TIMEZONE datetime or None


class LibraryEngine:
    """An engine written in Python: the claims, agents and dialstate functions, each in a transaction."""

    name = "library"

    def __init__(self, floor):
        self.floor = floor
        self.db = floor.db

    def state(self, agent_id, *, panel_active=None, ami_idle=None, wrapup_seconds=None):
        wrapup_until = claims.KEEP if wrapup_seconds is None else claims.wrapup_until(
            wrapup_seconds, self.floor.now, self.floor.tz)
        self.db.run(claims.set_availability, agent_id, panel_active=panel_active, ami_idle=ami_idle,
                    wrapup_until=wrapup_until)

    def claim(self, agent_id):
        try:
            row = self.db.run(claims.claim_next, agent_id, self.floor.now)
        except claims.NotClaimable:  # not available now (wrap-up, blocked, maintenance): try later
            return None
        return row and Claimed(row["oli_id"], row["previous_dial_status"], row["callback_scheduled_at"])

    def connected(self, oli_id, agent_id):
        self.db.run(agents.open_missed_activity, oli_id, agent_id, self.floor.now, self.floor.tz)

    def settle(self, call):
        config = self.floor.app.config
        self.db.run(dialstate.settle, call.oli_id, call.outcome, self.floor.now, tz=self.floor.tz,
                    grace_minutes=config["MISSED_ACTIVITY_GRACE_MINUTES"], release_retry_ms=config["RELEASE_RETRY_MS"],
                    agent_id=call.agent_id, started_at=call.started_at)


class HttpEngine:
    """An engine in any language: every operation a POST to /engine/ with ENGINE_SECRET, as JSON."""

    name = "http"

    def __init__(self, floor):
        self.floor = floor
        self.headers = {"Authorization": f"Bearer {floor.app.config['ENGINE_SECRET']}"}
        self.requests = 0

    def _post(self, operation, body):
        return self.floor.http(f"/engine/{operation}", body, expect=(200,), headers=self.headers).get_json()

    def _request_id(self):
        self.requests += 1
        return f"{self.floor.run_id}-{self.requests}"

    def state(self, agent_id, **fields):
        self._post("agent-state", {"agent_id": agent_id, **{k: v for k, v in fields.items() if v is not None}})

    def claim(self, agent_id):
        body = {"mode": "progressive", "agent_id": agent_id, "request_id": self._request_id()}
        response = self.floor.http("/engine/claim", body, expect=(200, 409), headers=self.headers)
        lead = response.get_json().get("lead")
        if lead is None:  # nothing due, or a 409 saying why the agent cannot take a call now
            return None
        due = lead["callback_scheduled_at"]
        return Claimed(lead["oli_id"], lead["previous_dial_status"], due and clock.parse_wall_clock(due, self.floor.tz))

    def connected(self, oli_id, agent_id):
        self._post("call-connected", {"oli_id": oli_id, "agent_id": agent_id, "request_id": self._request_id()})

    def settle(self, call):
        self._post("settle", {"oli_id": call.oli_id, "outcome": call.outcome, "agent_id": call.agent_id,
                              "started_at": clock.format_wall_clock(call.started_at)})


ENGINES = {engine_class.name: engine_class for engine_class in (LibraryEngine, HttpEngine)}


@dataclass
class Report:
    statuses: Counter
    attempts_per_lead: Counter
    calls: int
    callbacks_due: int
    callbacks_on_time: int
    blocked_agent_minutes: float
    series: list
    chart: str | None
    engine: str


class Floor:
    def __init__(self, app, agents_n, leads_n, rng, rates, start, engine_name="library"):
        self.app = app
        self.db = app.extensions["dialerapi.db"]
        self.tz = app.config["DB_TIMEZONE"]
        self.client = app.test_client()
        self.headers = {"X-API-Key": app.config["WS_SECRET"]}
        self.rng = rng
        self.rates = rates
        self.utc = start  # the virtual clock, an aware UTC instant; `now` is its wall-clock reading
        self.run_id = f"SIM{time.strftime('%y%m%d%H%M%S')}"
        # Form types of this run only: the simulated agents can never claim a lead the run did not push.
        self.form_types = [f"{form_type}.{self.run_id}" for form_type in FORM_TYPES]
        self.agent_ids = [AGENT_BASE + n for n in range(1, agents_n + 1)]
        self.leads_n = leads_n
        self.calls = {}            # agent_id -> Call
        self.idle_until = {}       # agent_id -> next claim attempt (after wrap-up, or nothing due)
        self.late_filings = []     # (when, oli_id)
        self.callbacks_due = self.callbacks_on_time = 0
        self.call_count = 0
        self.blocked_seconds = 0.0
        self.series = []
        self.engine = ENGINES[engine_name](self)

    @property
    def now(self):
        return clock.wall(self.utc, self.tz)

    def later(self, seconds=0, minutes=0):
        return clock.after(self.now, timedelta(seconds=seconds, minutes=minutes), self.tz)

    # --- setup and teardown -------------------------------------------------------------------------

    def setup(self):
        for agent_id in self.agent_ids:
            skills = self.rng.sample(self.form_types, self.rng.choice((1, 2)))
            self.db.run(agents.save_agent, agent_id, str(agent_id), f"Sim agent {agent_id}", skills, [])
            self.engine.state(agent_id, panel_active=True, ami_idle=True, wrapup_seconds=0)
        leads = []
        for n in range(1, self.leads_n + 1):
            lead = {"oli_id": f"{self.run_id}-{n}", "phone_number": f"9{self.rng.randint(0, 999999999):09d}",
                    "client_name": f"Sim lead {n}", "form_type": self.rng.choice(self.form_types), "priority_id": 2}
            if self.rng.random() < 0.05:
                due = self.later(minutes=self.rng.randint(0, 240))
                lead.update(priority_id=1, callback_scheduled_at=f"{due:%Y-%m-%d %H:%M:%S}")
            leads.append(lead)
        for start in range(0, len(leads), 500):
            self.http("/api/leads", {"leads": leads[start:start + 500]}, expect=(201,))

    def settle_live_calls(self):
        """End the calls still live with their outcome, so no simulated lead stays reserved."""
        for call in self.calls.values():
            self._settle(call)
        self.calls.clear()

    def remove_agents(self):
        def remove(conn):
            for agent_id in self.agent_ids:
                agents.remove_agent(conn, agent_id)
        self.db.run(remove)

    # --- one tick ------------------------------------------------------------------------------------

    def http(self, path, body, expect, headers=None):
        """POST through the app's own request path; raise RuntimeError on a status not in `expect`."""
        response = self.client.post(path, json=body, headers=headers or self.headers)
        if response.status_code not in expect:
            raise RuntimeError(f"{path} answered {response.status_code}: {response.get_data(as_text=True)[:200]}")
        return response

    def _file_outcome(self, oli_id):
        if self.rng.random() < self.rates.callback_share:
            when = self.later(minutes=self.rng.randint(30, 240))
            self.http("/api/pending-callbacks", {"oliId": oli_id, "scheduledAt": f"{when:%Y-%m-%d %H:%M:%S}"},
                       expect=(200, 202))
        else:
            self.http("/api/pending-dispositions", {"oliId": oli_id, "reason": self.rng.choice(DISPOSITIONS)},
                       expect=(200, 202))

    def _start_calls(self):
        for agent_id in self.agent_ids:
            if agent_id in self.calls or self.idle_until.get(agent_id, self.now) > self.now:
                continue
            lead = self.engine.claim(agent_id)
            if lead is None:
                self.idle_until[agent_id] = self.later(seconds=30)
                continue
            if lead.previous_dial_status == dialstate.CALLBACK and lead.callback_scheduled_at:
                self.callbacks_due += 1
                self.callbacks_on_time += self.now - lead.callback_scheduled_at <= ON_TIME
            outcome = self.rng.choices(list(self.rates.outcomes), weights=list(self.rates.outcomes.values()))[0]
            seconds = self.rng.randint(*self.rates.ring_seconds)
            needs_filing = outcome == "answered"
            if needs_filing:
                seconds += self.rng.randint(*self.rates.talk_seconds)
                self.engine.connected(lead.oli_id, agent_id)
                if self.rng.random() < self.rates.files_outcome * self.rates.during_call:
                    self._file_outcome(lead.oli_id)
                    needs_filing = False
            self.engine.state(agent_id, ami_idle=False)
            self.calls[agent_id] = Call(agent_id, lead.oli_id, outcome, self.now, self.later(seconds=seconds),
                                        needs_filing)

    def _settle(self, call):
        self.engine.settle(call)
        self.call_count += 1

    def _end_calls(self):
        config = self.app.config
        for agent_id, call in list(self.calls.items()):
            if call.ends_at > self.now:
                continue
            self._settle(call)
            wrapup_seconds = self.rng.randint(*self.rates.wrapup_seconds)
            self.engine.state(agent_id, ami_idle=True, wrapup_seconds=wrapup_seconds)
            self.idle_until[agent_id] = self.later(seconds=wrapup_seconds)
            del self.calls[agent_id]
            if call.needs_filing:
                if self.rng.random() < self.rates.files_outcome:
                    self._file_outcome(call.oli_id)
                else:
                    late = config["MISSED_ACTIVITY_GRACE_MINUTES"] + self.rng.randint(*self.rates.late_filing_minutes)
                    self.late_filings.append((self.later(minutes=late), call.oli_id))

    def _late_filings(self):
        for entry in [e for e in self.late_filings if e[0] <= self.now]:
            self.late_filings.remove(entry)
            self._file_outcome(entry[1])

    def snapshot(self):
        rows = self.db.run(lambda conn: list(queries.sim_status_counts(conn, prefix=f"{self.run_id}-%")))
        self.series.append((self.now, {row["dial_status"]: row["n"] for row in rows}))

    def step(self, tick_number):
        self._end_calls()
        self._late_filings()
        if tick_number % 2 == 0:
            self.db.run(agents.refresh_blocking, self.now, self.tz)
        if tick_number % 12 == 0:
            sweep(self.db, self.now, self.tz)
        self._start_calls()
        blocked = self.db.run(lambda conn: queries.sim_blocked_agents(conn, low=AGENT_BASE, high=AGENT_BASE + 10**5))
        self.blocked_seconds += blocked * TICK.total_seconds()

    def report(self, chart_path):
        prefix = f"{self.run_id}-%"
        statuses = self.db.run(lambda conn: list(queries.sim_status_counts(conn, prefix=prefix)))
        attempts = self.db.run(lambda conn: list(queries.sim_attempts_per_lead(conn, prefix=prefix)))
        return Report(
            statuses=Counter({r["dial_status"]: r["n"] for r in statuses}),
            attempts_per_lead=Counter({r["attempts"]: r["n"] for r in attempts}),
            calls=self.call_count, callbacks_due=self.callbacks_due, callbacks_on_time=self.callbacks_on_time,
            blocked_agent_minutes=round(self.blocked_seconds / 60, 1), series=self.series,
            chart=draw_chart(self.series, chart_path, self.run_id) if chart_path else None, engine=self.engine.name,
        )


def run(app, *, agents_n, leads_n, hours, speed, seed=1, rates=None, chart_path="simulation.png", progress=None,
        engine_name="library"):
    """Simulate `hours` of a floor of `agents_n` agents dialing `leads_n` pushed leads; return a Report.

    `engine_name`: "library" (the engine calls the Python functions) or "http" (it POSTs to the app's
    /engine/ endpoints, which need ENGINE_SECRET in the app's config).

    The virtual clock starts at 09:00 today (DB_TIMEZONE) and advances 5 s of elapsed time a tick;
    `speed` is virtual seconds per real second (0: as fast as the database allows).
    `progress(virtual seconds done)` is called after each tick. The service clock is the virtual
    one for the run; the one it replaced is put back after it.
    """
    tz = app.config["DB_TIMEZONE"]
    start = clock.instant(clock.normalize(clock.now(tz).replace(hour=9, minute=0, second=0), tz), tz)
    floor = Floor(app, agents_n, leads_n, random.Random(seed), rates or Rates(), start, engine_name)
    previous_source = clock.set_utc_source(lambda: floor.utc)
    try:
        floor.setup()
        ticks = int(timedelta(hours=hours) / TICK)
        snapshot_every = int(SNAPSHOT_EVERY / TICK)
        began = time.monotonic()
        for tick in range(ticks):
            if tick % snapshot_every == 0:
                floor.snapshot()
            floor.step(tick)
            floor.utc += TICK
            if speed:
                ahead = (tick + 1) * TICK.total_seconds() / speed - (time.monotonic() - began)
                if ahead > 0:
                    time.sleep(ahead)
            if progress:
                progress(TICK.total_seconds())
        floor.settle_live_calls()
        floor.snapshot()
        return floor.report(chart_path)
    finally:
        floor.settle_live_calls()
        floor.remove_agents()
        clock.set_utc_source(previous_source)


def draw_chart(series, path, title):
    """A PNG of dial_status counts over the simulated day (matplotlib, no display needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    statuses = sorted({status for _, counts in series for status in counts})
    times = [moment for moment, _ in series]
    figure, axes = plt.subplots(figsize=(10, 5.5), dpi=100)
    for status in statuses:
        axes.plot(times, [counts.get(status, 0) for _, counts in series], label=status, linewidth=2)
    axes.set_title(f"dial_status over the simulated day ({title})")
    axes.set_xlabel("virtual time")
    axes.set_ylabel("leads")
    axes.grid(alpha=0.3)
    axes.legend(loc="upper right")
    figure.autofmt_xdate()
    figure.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path)
    plt.close(figure)
    return str(path)


def summary(report, agents_n, leads_n, hours):
    """The text table printed at the end of `dialerapi simulate`."""
    lines = [f"\nsimulated {hours:g} h, {agents_n} agents, {leads_n} leads, engine {report.engine}: {report.calls} calls",
             ""]
    lines.append(f"{'final dial_status':<22}{'leads':>8}")
    for status, n in sorted(report.statuses.items(), key=lambda item: -item[1]):
        lines.append(f"{status:<22}{n:>8}")
    lines += ["", f"{'attempts per lead':<22}{'leads':>8}"]
    for attempts, n in sorted(report.attempts_per_lead.items()):
        lines.append(f"{attempts:<22}{n:>8}")
    on_time = f"{report.callbacks_on_time}/{report.callbacks_due}" if report.callbacks_due else "none due"
    lines += ["", f"{'callbacks honoured on time (within 5 min)':<44}{on_time:>10}",
              f"{'minutes agents were blocked (all agents)':<44}{report.blocked_agent_minutes:>10}"]
    if report.chart:
        lines.append(f"chart: {report.chart}")
    return "\n".join(lines)
