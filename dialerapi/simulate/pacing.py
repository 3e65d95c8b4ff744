"""Predictive pacing of the simulated floor, per skill: each form_type's group dials on
its own free agents (`ratio`), steers its own ratio on its own abandon rate (`abandon`), or dials
at its own Poisson moments (`rate`); answered customers wait for a bridge to an agent with their
lead's skill, or give up (docs/simulator.md, "The floor simulator"). A part of simulate.floor.Floor.

An agent with several skills is shared: each of its skills' groups counts it as 1 / (its number of
skills) of a free agent, so the groups together never count more agents than are free.

The engine bridges an answered customer at once (the first bridge is the answer's moment
the service counts late connects from), the `abandon` rule reads each group's rates from the
service's floor state, and a group whose predictive claim the service refuses with abandon_limit
dials progressively (its free agents claim for themselves) until a predictive claim is served again.
"""

from collections import Counter
from datetime import datetime, timedelta

from dialerapi.plumbing.db import queries
from dialerapi.rules.compliance.abandons import ABANDON_LIMIT, over_limit
from dialerapi.rules.leads import callbacks

PACE_SECONDS = 5
ADAPT_SECONDS = 60
ADAPT_WINDOWS = ("15m", "today", "period")  # the service's abandon windows the `abandon` rule steers on
CEILING_WINDOWS = {"today", "period"}  # those the law caps: over the aim there, the group dials progressively
RATIO_BOUNDS = (0.5, 3.0)
# The `abandon` rule steers to this share of target_abandon: the target is a ceiling (Ofcom and the
# FTC's TSR cap abandons at 3% of answered calls), and a rule that steers to the ceiling itself
# spends half its days over it.
AIM = 0.8
# The floor skips work it knows would change nothing: a group's predictive claim while
# nothing can be due (Pacing._known_dry), the blocking job while no grace window has ended and the
# sweep while it has nothing to apply (Floor._jobs). A switch, so that a test holds a run's figures
# to those of doing it all.
SKIP_FUTILE = True


class Pacing:
    """Floor's predictive methods; they use the Floor's clock (t, at), engine, agents and queue."""

    def _start_pacing(self):
        """Per form_type with leads: its dial ratio, its calls dialed and not yet with an agent, its next
        Poisson dial moment; and the groups the abandon limit holds back (dialing progressively)."""
        weights = {g: w for g, w in self.scenario.form_types.items() if w > 0}
        self.groups = sorted(weights)
        self.ratios = dict.fromkeys(self.groups, self.scenario.dial_ratio)
        self.held = set()
        self.in_flight = Counter()
        self.arrival_rates = {g: self.scenario.calls_per_hour * w / sum(weights.values()) / 3600
                              for g, w in weights.items()}
        self.next_arrival = {}
        self.dry = {}  # group -> the second until which its predictive claim finds nothing (None: no end)
        self.next_due_rows = {}  # form_type -> (sim_next_due's row, the second until which it holds)
        self.progressive = set()  # groups the `abandon` rule has dialing progressively (over its aim)
        # The `abandon` rule's last read of each group's windows, its calls not yet with an agent
        # then, and its predictive calls dialed since: what an engine knows between two reads.
        self.windows = {}
        self.read_pending = Counter()
        self.dialed_since = Counter()

    def _bridge_waiting(self, answered=None):
        """Bridge every waiting customer, oldest first, whose lead's skill some free agent has, and
        `answered`, a customer who just answered, in any case: the engine asks at the answer."""
        skills_free = {skill for agent in self.agents.values() if agent.state == "idle" and not agent.blocked
                       for skill in agent.skills}
        for call in list(self.queue):
            if call.form_type not in skills_free and call is not answered:
                continue
            agent_id = self.engine.bridge(call.oli_id)
            if agent_id is None:
                continue
            if self.agents[agent_id].state != "idle":  # free to the service a moment before the floor
                self.engine.state(agent_id, ami_idle=True)
                continue
            self.queue.remove(call)
            self.in_flight[call.form_type] -= 1
            call.token += 1
            call.agent = self.agents[agent_id]
            self._wait_ended(call, abandoned=False)
            self._connect(call)

    def _abandon(self, call, token):
        if token != call.token:
            return
        call.token += 1
        self.queue.remove(call)
        self._wait_ended(call, abandoned=True)
        call.outcome = "abandoned"
        self.count["abandoned"] += 1
        self.count[f"abandoned[{call.form_type}]"] += 1
        self.day_count[(self.day_number, call.form_type)]["abandoned"] += 1
        self.bucket()["abandoned"] += 1
        self._hangup(call)

    def _wait_ended(self, call, abandoned):
        self.waits.append(self.t - call.answered_at)

    def _free_agents(self, group):
        """Free agents of the group's skill, a shared agent counting 1 / (its number of skills)."""
        return sum(1 / len(agent.skills) for agent in self.agents.values()
                   if agent.state == "idle" and not agent.blocked and group in agent.skills)

    def _pace(self):
        if not self.open:
            return
        if self.scenario.pacing != "rate":
            for group in self.groups:
                if group in self.progressive:
                    continue
                wanted = int(self.ratios[group] * self._free_agents(group) + 0.5) - self.in_flight[group]
                # A held group asks once a round whether the limit still holds it.
                for _ in range(max(0, wanted) if group not in self.held else 1):
                    if self._known_dry(group):
                        break
                    if self._would_pass(group):
                        self.progressive.add(group)
                        break
                    claimed, refusal = self.engine.claim_predictive(False, group)
                    if not self._held(group, refusal) and claimed is not None:
                        self._dial(claimed)
                    if claimed is None:
                        self._note_dry(group, refusal, [group])
                        break
        self._claim_held()

    # --- claims known to find nothing --------------------------------------------------------
    # A pacing round asks each group with free agents for a call every PACE_SECONDS, and an idle agent
    # dialing progressively asks every claim_retry_seconds; once the leads are used up, most of those
    # claims find nothing, and they were most of a run's time. After a claim finds nothing, the group
    # (or the agent) does not ask again until something could change the answer: a change of its
    # leads (a settle, a CRM filing, the sweep applying one, a new day: _leads_changed) or the
    # moment time alone makes one due (_next_due). An agent's block changes only its refusal, which
    # the floor already mirrors from the blocking job and the late filing.
    # An agent whose claim is skipped polls again as after a claim that found nothing. Skipping is
    # exact: the figures of a run are those of asking every time (tests/test_simulate.py). Only while
    # the abandon limit is off: its windows move with time, and a skipped claim could not tell a hold.

    def _known_dry(self, key):
        """Whether the claim of `key` (a group's form_type, or an agent's id) is known to find nothing now."""
        if key not in self.dry:
            return False
        until = self.dry[key]
        if until is not None and self.t >= until:
            del self.dry[key]
            return False
        return True

    def _note_dry(self, key, refusal, form_types):
        """The claim of `key` over `form_types` found nothing (a refusal is not that): until when."""
        if SKIP_FUTILE and refusal is None and not self.config.enforce_abandon_limit:
            ends = [self._next_due(form_type, own=not isinstance(key, str)) for form_type in form_types]
            finite = [end for end in ends if end is not None]
            self.dry[key] = min(finite) if finite else None

    def _leads_changed(self, form_type=None):
        """A lead of `form_type` (None: of any) changed: its group, and the agents with its skill,
        ask again on their next claim."""
        if form_type is None:
            self.dry.clear()
            self.next_due_rows.clear()
            return
        self.dry.pop(form_type, None)
        self.next_due_rows.pop(form_type, None)
        for agent in self.agents.values():
            if form_type in agent.skills:
                self.dry.pop(agent.id, None)

    def _next_due(self, group, own=False):
        """The second at which time alone may next make a lead of `group` due to a predictive claim
        (`own`: to an agent's progressive claim, which takes its own personal callbacks when due),
        or None: its next claim_due, a personal callback's fallback (`own`: its due time, as early
        as any fallback), the next edge of the work window while callbacks wait for it, and the
        next minute while the calling window is obeyed (the calling window and the call zones'
        offsets are whole minutes; one with seconds gives the next second)."""
        config = self.config
        row = self._next_due_row(group)
        moments = [row["due"]]
        if row["owned_due"] is not None:
            moments.append(row["owned_due"] if own else
                           callbacks.fallback_at(row["owned_due"], config.personal_callback_fallback_minutes, self.tz))
        if config.outbound_obey_work_hours:
            moments += [self._next_wall(edge) for edge in (config.work_start, config.work_end)]
        seconds = [max(self.t + 1, self._second(moment)) for moment in moments if moment is not None]
        if config.obey_calling_window:
            edges = (config.calling_window_start, config.calling_window_end)
            whole_minutes = all(edge.second == 0 and edge.microsecond == 0 for edge in edges)
            seconds.append(self.t + (60 - self.utc.second if whole_minutes else 1))
        return min(seconds, default=None)

    def _next_due_row(self, group):
        """sim_next_due of `group` now. Kept until the group's leads change (a claim takes one, or
        _leads_changed) or time reaches its `due` or its `owned_due`'s fallback, before which the
        statement answers the same (it was a sixth of a run's transactions)."""
        kept = self.next_due_rows.get(group)
        if kept is not None and self.t < kept[1]:
            return kept[0]
        config = self.config
        row = self.db.run(queries.sim_next_due, form_type=group, now=self.now,
                          **callbacks.fallback_params(self.now, config, self.tz))
        ends = [row["due"], row["owned_due"] and
                callbacks.fallback_at(row["owned_due"], config.personal_callback_fallback_minutes, self.tz)]
        self.next_due_rows[group] = (row, min((self._second(end) for end in ends if end is not None),
                                              default=float("inf")))
        return row

    def _next_wall(self, time_of_day):
        """The first wall-clock moment after now at `time_of_day`."""
        moment = datetime.combine(self.now.date(), time_of_day)
        return moment if moment > self.now else moment + timedelta(days=1)

    def _held(self, group, refusal):
        """Note whether the abandon limit refused the group's predictive claim; True when it did."""
        if refusal == ABANDON_LIMIT:
            self.held.add(group)
            self.count[f"held[{group}]"] += 1
            return True
        self.held.discard(group)
        return False

    def _claim_held(self):
        """Free agents with the skill of a group the limit holds, or the `abandon` rule has dialing
        progressively, claim progressively: an agent waits, so no abandon."""
        groups = self.held | self.progressive
        if not groups:
            return
        for agent in list(self.agents.values()):
            if agent.state == "idle" and not agent.blocked and groups.intersection(agent.skills):
                self._claim(agent)

    def _pace_tick(self):
        if self.open:
            self._pace()
            self.at(self.t + PACE_SECONDS, self._pace_tick)

    def _adapt(self):
        """Each minute, each group's ratio: -0.1 when its abandon rate as the service and the law
        count it (POST /engine/floor: late connects included) is over AIM x
        target_abandon over the last 15 minutes, over the day so far (what a 24-hour ceiling
        measures) or over the legal period (the 30 days; in a run, the run so far, the figure a run
        is judged by), else +0.05, within RATIO_BOUNDS. While the day's or the period's
        rate would pass the aim (_would_pass), the group dials progressively (its free agents claim
        for themselves: no abandon, and every answered call lowers the rate) until a minute finds
        both clear; lowering the ratio alone left a small skill, whose agents other skills share,
        over the target in 6 runs of 20."""
        if not self.open:
            return
        aim = AIM * self.scenario.target_abandon
        rates = self.engine.abandons()
        for group in self.groups:
            windows = self.windows[group] = rates[group]["windows"] if group in rates else {}
            self.read_pending[group], self.dialed_since[group] = self.in_flight[group], 0
            over = {name for name in ADAPT_WINDOWS if name in windows and windows[name]["rate"] > aim}
            step = -0.1 if over else 0.05
            self.ratios[group] = min(RATIO_BOUNDS[1], max(RATIO_BOUNDS[0], round(self.ratios[group] + step, 2)))
            if self._would_pass(group):
                self.progressive.add(group)
                self.count[f"paced_progressive[{group}]"] += 1
            else:
                self.progressive.discard(group)
        self._claim_held()
        self.at(self.t + ADAPT_SECONDS, self._adapt)

    def _would_pass(self, group):
        """True when the group's rate over the day or the period (CEILING_WINDOWS, as last read)
        would be over the aim if its calls not yet with an agent at that read, those it dialed
        since and its next call were all abandons, in a window holding abandon_min_answered
        answered calls: the service limit's look-ahead (abandons.over_limit), held to the aim.
        Without it a run ended over the target when its last hours' few answered calls met the
        abandons already dialed; asked only at each read, the calls of the minute after it took a
        small skill's run over (1 run of 20)."""
        aim = AIM * self.scenario.target_abandon
        pending = self.read_pending[group] + self.dialed_since[group]
        windows = self.windows.get(group, {})
        return any(over_limit(windows[name], self.config, pending, limit=aim)
                   for name in CEILING_WINDOWS if name in windows)

    def _start_arrivals(self):
        for group in self.groups:
            self.next_arrival[group] = float(self.t)
            self._schedule_arrival(group)

    def _schedule_arrival(self, group):
        self.next_arrival[group] += self.rng.expovariate(self.arrival_rates[group])
        self.at(int(round(self.next_arrival[group])), self._arrival, group)

    def _arrival(self, group):
        if not self.open:
            return
        claimed, refusal = self.engine.claim_predictive(True, group)
        self._held(group, refusal)
        if claimed is None:
            self.count["not_dialed_" + (refusal or "nothing_due")] += 1
            self._claim_held()
        else:
            self._dial(claimed)
        self._schedule_arrival(group)
