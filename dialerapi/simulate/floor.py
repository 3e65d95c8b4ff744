"""The floor: agents, customers, the dialing engine and the CRM as a discrete-event simulation.

Time is a virtual clock in whole seconds (the service's one clock, decisions.md D2, is pointed at
it for the run). Every event (a dial, an answer, a hangup, the end of a wrap-up, a CRM filing, a
customer giving up, a job run) happens at its exact second; nothing waits for a tick. What the
floor does between events is the modelling, stated in docs/simulator.md "The floor simulator":

- Progressive: a free agent claims (`claim_next`); the call rings `ring_seconds` (0 for an
  originate failure), an answered call talks `talk_seconds`; wrap-up follows answered calls (or
  every call with wrapup_after = every). An agent whose claim finds nothing due, or who is blocked,
  tries again after `claim_retry_seconds` (at once when a filing unblocks them).
- Predictive, per skill (simulate.pacing): each form_type's group dials leads of its form_type
  (`claim_predictive` with form_type) on its own free agents; the customer rings, an answered
  customer waits (oldest first) until `bridge` finds a free agent with the lead's skill, or gives
  up after `patience_seconds` (settled `abandoned`). Pacing rules: `ratio` keeps the group's ratio
  x its free agents ringing or waiting; `abandon` moves each group's ratio each minute on its own
  abandon rate toward `target_abandon`; `rate` dials each group at its own Poisson moments, its
  share of `calls_per_hour`, dialing ahead (the Erlang-A case).
- CRM: one draw per call that reached an agent: filed while the call is live (`during_call`),
  within the grace window after it (the rest of `files_outcome`), or late (the agent forgets, is
  blocked after the grace window and files `late_filing_minutes` after it).
- Jobs: the blocking job every 10 s and the sweep every 60 s (upkeep.jobs), while the floor is open
  or calls are live.

The event loop and the accounting of agent time it drives; a call's life (simulate.calls), pacing
(simulate.pacing) and the CRM (simulate.crm) are apart.
"""

import heapq
from collections import Counter, defaultdict, deque
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from dialerapi.plumbing import clock
from dialerapi.plumbing.db import queries
from dialerapi.rules.agents import roster
from dialerapi.rules.campaigns import operations
from dialerapi.rules.compliance import calling_rules, contact_caps, do_not_call, phones
from dialerapi.rules.config import dialer as dialer_config
from dialerapi.rules.dialing.crm_actions import sweep
from dialerapi.rules.leads import outcome_retries, transitions
from dialerapi.simulate import pacing
from dialerapi.simulate.calls import CallLife
from dialerapi.simulate.crm import CrmFilings
from dialerapi.simulate.engines import ENGINES
from dialerapi.simulate.pacing import ADAPT_SECONDS, Pacing
from dialerapi.simulate import caller_ids as sim_caller_ids
from dialerapi.simulate.scenario import PHONE_ZONES
from dialerapi.upkeep.jobs import BLOCKING_SECONDS, SWEEP_SECONDS

SETUP_SECONDS = 600  # the clock starts this long before the first day opens: leads and agents arrive
PUSH_BATCH = 500


@dataclass
class Agent:
    id: int
    skills: list
    state: str = "off"
    since: int = 0
    blocked: bool = False
    poll: int = 0
    calls: int = 0
    contacts: int = 0
    seconds: Counter = field(default_factory=Counter)


class Floor(Pacing, CrmFilings, CallLife):
    """One run of a Scenario against the app `app` (whose database is the run's own schema)."""

    def __init__(self, app, scenario, rng):
        self.app = app
        self.db = app.extensions["dialerapi.db"]
        self.tz = app.config["DB_TIMEZONE"]
        self.client = app.test_client()
        self.headers = {"X-API-Key": app.config["WS_SECRET"]}
        self.scenario = scenario
        self.rng = rng
        self.engine = ENGINES[scenario.engine](self)
        dialer = scenario.dialer
        self.dialer = dialer
        first_open = clock.instant(datetime.combine(scenario.start_date, dialer["work_start"]), self.tz)
        self.base = first_open - timedelta(seconds=SETUP_SECONDS)
        self.t = 0
        self.days = [self._day(d) for d in range(scenario.days)]
        self.events = []
        self.sequence = 0
        self.open = False
        self.last_day_closed = False
        self.finished = False
        self.jobs_running = False
        self.agents = {}
        self.live = set()
        self.queue = deque()
        self.job_runs = 0
        self.grace_ends = []  # heap: the seconds at which the grace windows of outcomes filed late end
        self.block_check = True
        self.day_number = 0
        self.day_count = defaultdict(Counter)  # (day, form_type) -> answered, abandoned
        self._start_pacing()
        self.callbacks = {}  # oli_id -> callback_scheduled_at (wall clock) not yet dialed
        self.phones = {}  # oli_id -> E.164 digits
        self.form_types = {}  # oli_id -> form_type
        self.number_form_types = defaultdict(set)  # E.164 digits -> the form_types of its leads
        self.zone_names = {}  # oli_id -> the zones its number may ring in
        self.listed = set()  # oli_ids whose phone is on the do-not-call list
        self.contacted = set()  # oli_ids whose customer reached an agent at least once
        self.count = Counter()
        self.outcomes = Counter()
        # The calls presented per caller-ID match tier (simulate.caller_ids).
        self.caller_id_matches = Counter()
        self.waits = []
        self.callback_lateness = {"personal": [], "ordinary": []}  # seconds after the effective due moment
        self.callback_owners = {}  # oli_id -> the agent a filed callback names, None for anyone
        self.hours = {}
        self.snapshots = []

    # --- time ------------------------------------------------------------------------------------------

    @property
    def utc(self):
        return self.base + timedelta(seconds=self.t)

    @property
    def now(self):
        return clock.wall(self.utc, self.tz)

    def _second(self, wall):
        return int((clock.instant(wall, self.tz) - self.base).total_seconds())

    def _day(self, d):
        day = self.scenario.start_date + timedelta(days=d)
        opens = self._second(datetime.combine(day, self.dialer["work_start"]))
        if self.scenario.hours:
            length = int(self.scenario.hours * 3600)
        else:
            closes = self._second(datetime.combine(day, self.dialer["work_end"]))
            length = closes - opens if closes > opens else closes + 86400 - opens
        return opens, opens + length

    def at(self, second, work, *args):
        self.sequence += 1
        heapq.heappush(self.events, (max(second, self.t), self.sequence, work, args))

    def hour(self, second=None):
        """The label of the wall-clock hour holding `second` (default now): "2026-01-05 09:00"."""
        moment = clock.wall(self.base + timedelta(seconds=self.t if second is None else second), self.tz)
        return f"{moment:%Y-%m-%d %H}:00"

    def bucket(self, second=None):
        label = self.hour(second)
        if label not in self.hours:
            self.hours[label] = {"hour": label, "calls": 0, "answered": 0, "contacts": 0, "abandoned": 0,
                                 "agent_seconds": Counter()}
        return self.hours[label]

    # --- the run -----------------------------------------------------------------------------------------

    def play(self):
        """Set up, then run every event in time order until the last day closes and its calls end."""
        self._setup()
        for number, (opens, closes) in enumerate(self.days):
            self.at(opens, self._open, number)
            self.at(closes, self._close, number == len(self.days) - 1)
        # Nothing changes the run schema's settings once it is set up, so they are read once.
        with dialer_config.fixed_config(self.config):
            while self.events and not self.finished:
                second, _, work, args = heapq.heappop(self.events)
                self.t = second
                work(*args)
        for agent in self.agents.values():
            self._set_state(agent, "off")
        self.count["unfiled_at_end"] = sum(1 for event in self.events if event[2] in (self._file, self._file_late))
        self._snapshot()

    def _setup(self):
        scenario = self.scenario
        self.db.run(self._caps_and_retries)
        self.config = self.db.run(dialer_config.load_config)
        form_types = [t for t, weight in scenario.form_types.items() if weight > 0]
        for number in range(1, scenario.agents + 1):
            self.agents[number] = Agent(number, [])
        if scenario.skills == "all":
            for agent in self.agents.values():
                agent.skills = list(form_types)
        else:
            offset = 0
            for form_type, n in scenario.skills.items():
                for k in range(n):
                    self.agents[(offset + k) % scenario.agents + 1].skills.append(form_type)
                offset += n
        for agent in self.agents.values():
            self.db.run(roster.save_agent, agent.id, str(1000 + agent.id), f"Sim agent {agent.id}", agent.skills, [])
        weights = [scenario.form_types[t] for t in form_types]
        zones = list(scenario.phone_zones)
        zone_weights = [scenario.phone_zones[z] for z in zones]
        leads = []
        for n in range(1, scenario.leads + 1):
            # Draws only what the scenario asks for, so a seed's campaign without zones or a list is
            # the same campaign whatever the simulator learnt since (docs/simulator.md).
            zone = self.rng.choices(zones, zone_weights)[0] if len(zones) > 1 else zones[0]
            prefix, length = PHONE_ZONES[zone]
            phone = prefix + f"{self.rng.randint(0, 10 ** (length - len(prefix)) - 1):0{length - len(prefix)}d}"
            # Drawn only when asked for, so a seed's campaign without shared numbers is the one it was.
            if scenario.shared_phone_share and leads and self.rng.random() < scenario.shared_phone_share:
                phone = self.rng.choice(leads)["phone_number"]
            lead = {"oli_id": f"SIM-{n}", "phone_number": phone,
                    "client_name": f"Sim lead {n}", "form_type": self.rng.choices(form_types, weights)[0],
                    "priority_id": 2}
            self.form_types[lead["oli_id"]] = lead["form_type"]
            self.phones[lead["oli_id"]], self.zone_names[lead["oli_id"]] = phones.facts(
                phone, self.config.phone_default_region)
            if scenario.listed_share and self.rng.random() < scenario.listed_share:
                self.listed.add(lead["oli_id"])
            if self.rng.random() < scenario.pushed_callbacks:
                due = clock.after(self.now, timedelta(seconds=SETUP_SECONDS + self.rng.randint(0, 4 * 3600)), self.tz)
                lead.update(priority_id=1, callback_scheduled_at=f"{due:%Y-%m-%d %H:%M:%S}")
                self.callbacks[lead["oli_id"]] = due
            leads.append(lead)
        for oli_id, number in self.phones.items():
            self.number_form_types[number].add(self.form_types[oli_id])
        if self.listed:
            self.db.run(do_not_call.add, [self.phones[oli_id] for oli_id in sorted(self.listed)], "sim", self.now)
        for start in range(0, len(leads), PUSH_BATCH):
            self.http("/api/leads", {"leads": leads[start:start + PUSH_BATCH]}, expect=(201,))

    def presented(self, claimed):
        """Count the caller ID of `claimed` (an engines.Claimed) by its match tier; return it."""
        if claimed.caller_id is not None:
            self.caller_id_matches[claimed.caller_id["match"]] += 1
        return claimed

    def _caps_and_retries(self, conn):
        """The scenario's contact caps, enabled, and its retries per outcome; its
        campaigns, set as `dialerapi campaigns set` sets them; its calling rules, on; its
        caller-ID pools, added."""
        sim_caller_ids.add(conn, self.scenario.caller_ids, self.now)
        for form_type, settings in self.scenario.campaigns.items():
            operations.update(conn, form_type, settings, self.now, "simulator")
        for cap in self.scenario.contact_caps:
            if not isinstance(cap, str):
                contact_caps.add(conn, cap["name"], cap["max"], cap["per"], cap.get("region"), cap.get("form_type"))
            contact_caps.set_enabled(conn, cap if isinstance(cap, str) else cap["name"], True)
        for outcome, rule in self.scenario.retries.items():
            outcome_retries.set_rule(conn, outcome, rule.get("delay"), rule.get("max"))
        for name in self.scenario.calling_rules:
            calling_rules.set_enabled(conn, name, True, self.now)

    def http(self, path, body, expect, headers=None):
        """POST through the app's own request path; raise RuntimeError on a status not in `expect`."""
        response = self.client.post(path, json=body, headers=headers or self.headers)
        if response.status_code not in expect:
            raise RuntimeError(f"{path} answered {response.status_code}: {response.get_data(as_text=True)[:300]}")
        return response

    def _open(self, number):
        self.open = True
        self._leads_changed()
        self.block_check = True
        self.day_number = number
        for agent in self.agents.values():
            self.engine.state(agent.id, panel_active=True, ami_idle=True, wrapup_seconds=0)
            self._set_state(agent, "idle")
        if not self.jobs_running:
            self.jobs_running = True
            self.at(self.t, self._jobs)
        self.at(self._next_hour(), self._hour_mark)
        if self.scenario.mode == "progressive":
            for agent in self.agents.values():
                self._claim(agent)
        else:
            self.at(self.t, self._pace_tick)
            if self.scenario.pacing == "abandon":
                self.at(self.t + ADAPT_SECONDS, self._adapt)
            if self.scenario.pacing == "rate":
                self._start_arrivals()

    def _close(self, last):
        self.open = False
        for agent in self.agents.values():
            if agent.state == "idle":
                agent.poll += 1
                self._set_state(agent, "off")
        for call in list(self.queue):  # nobody will answer them now: the customers hang up
            self._abandon(call, call.token)
        self._snapshot()
        self.last_day_closed = last
        self._maybe_finish()

    def _maybe_finish(self):
        if self.last_day_closed and not self.live and not self.queue:
            self.finished = True

    def _next_hour(self):
        moment = self.now.replace(minute=0, second=0) + timedelta(hours=1)
        return self._second(moment)

    def _hour_mark(self):
        self._snapshot()
        if self.open:
            self.at(self._next_hour(), self._hour_mark)

    def _snapshot(self):
        for agent in self.agents.values():
            self._set_state(agent, agent.state)
        state = self.db.run(queries.sim_hour_state, now=self.now)
        statuses = self.db.run(lambda conn: list(queries.sim_status_counts(conn, max_tries_remark=transitions.MAX_TRIES_REMARK)))
        label = self.hour(self.t - 1)
        if label in self.hours:
            self.hours[label].update(retry_backlog=int(state["retry_backlog"]),
                                     penetration=round(int(state["dialed"]) / max(1, int(state["leads"])), 4))
        self.snapshots.append((self.now, {row["status"]: int(row["n"]) for row in statuses}))

    # --- agents --------------------------------------------------------------------------------------

    def _set_state(self, agent, state):
        """Account the agent's time since the last change to its state, split by wall-clock hour."""
        shown = "blocked" if agent.state == "idle" and agent.blocked else agent.state
        start = agent.since
        while start < self.t and shown != "off":
            end = min(self.t, self._second(datetime.strptime(self.hour(start), "%Y-%m-%d %H:%M")
                                           + timedelta(hours=1)))
            self.bucket(start)["agent_seconds"][shown] += end - start
            agent.seconds[shown] += end - start
            start = end
        agent.state, agent.since = state, self.t

    def _set_blocked(self, agent, blocked):
        if agent.blocked != blocked:
            self._set_state(agent, agent.state)
            agent.blocked = blocked
            if not blocked and agent.state == "idle":
                self._free(agent)

    def _jobs(self):
        """The blocking job every BLOCKING_SECONDS, the sweep every SWEEP_SECONDS, while anyone works.

        The blocking job blocks an agent once a missed activity's grace has ended (D7); a filing
        unblocks its agents itself (actions.submit_action). So a run of the job finds a change only
        after a grace window that no filing ended before it (a late filing's) ended since its last
        run, or on a new day; the others are skipped (they were a quarter of a run's
        transactions), as are the sweeps that can change nothing (_sweep_may_change), and the run
        is the one that ran them all (tests/test_simulate.py)."""
        if self._grace_ended() or not pacing.SKIP_FUTILE:
            changed = self.db.run(roster.refresh_blocking, self.now, self.tz)
            for agent_id, blocked in sorted(changed.items()):
                self._set_blocked(self.agents[agent_id], blocked)
        self.job_runs += 1
        if self.job_runs % (SWEEP_SECONDS // BLOCKING_SECONDS) == 0 and (self._sweep_may_change()
                                                                          or not pacing.SKIP_FUTILE):
            swept = sweep(self.db, self.now, self.tz)
            if swept["applied"] or swept["failed"]:
                self._leads_changed()
        if self.open or self.live:
            self.at(self.t + BLOCKING_SECONDS, self._jobs)
        else:
            self.jobs_running = False

    def _sweep_may_change(self):
        """Whether the sweep could change anything now (it ran every minute for nothing).
        It applies the CRM actions held on leads no longer live, which a run never leaves: a filing
        during a call is held until the call's settle, and the settle applies it (D6). What is left
        is telling of personal callbacks that fell back, which exist once one is filed."""
        return self.count["personal_callbacks_filed"] > 0

    def _grace_ended(self):
        """True when a grace window ended before now (the service blocks on due_at < now) since the
        last call, or a day opened; forgets those windows."""
        ended = self.block_check
        while self.grace_ends and self.grace_ends[0] < self.t:
            heapq.heappop(self.grace_ends)
            ended = True
        self.block_check = False
        return ended

    def _free(self, agent):
        """The agent is done with a call (and its wrap-up), or was unblocked: take the next one."""
        if not self.open:
            self._set_state(agent, "off")
            return
        if agent.state != "idle":
            self._set_state(agent, "idle")
        if self.scenario.mode == "progressive":
            self._claim(agent)
        else:
            self._bridge_waiting()
            self._pace()

    # --- progressive ---------------------------------------------------------------------------------

    def _claim(self, agent):
        if not self.open or agent.state != "idle":
            return
        dry = self._known_dry(agent.id)
        claimed, refusal = (None, None) if dry else self.engine.claim(agent.id)
        if claimed is None:
            if refusal == "outbound_blocked":
                self._set_blocked(agent, True)
            if not dry:
                self._note_dry(agent.id, refusal, agent.skills)
            agent.poll += 1
            self.at(self.t + self.scenario.claim_retry_seconds, self._poll, agent, agent.poll)
            return
        self._dial(claimed, agent)

    def _poll(self, agent, token):
        if token == agent.poll:
            self._claim(agent)
