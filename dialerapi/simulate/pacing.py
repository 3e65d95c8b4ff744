"""Predictive pacing of the simulated floor, per skill (issue #29): each form_type's group dials on
its own free agents (`ratio`), steers its own ratio on its own abandon rate (`abandon`), or dials
at its own Poisson moments (`rate`); answered customers wait for a bridge to an agent with their
lead's skill, or give up (docs/simulator.md, "The floor simulator"). A part of simulate.floor.Floor.

An agent with several skills is shared: each of its skills' groups counts it as 1 / (its number of
skills) of a free agent, so the groups together never count more agents than are free.

Issue #37: the engine bridges an answered customer at once (the first bridge is the answer's moment
the service counts late connects from), the `abandon` rule reads each group's rates from the
service's floor state, and a group whose predictive claim the service refuses with abandon_limit
dials progressively (its free agents claim for themselves) until a predictive claim is served again.
"""

from collections import Counter

from dialerapi.rules.abandons import ABANDON_LIMIT

PACE_SECONDS = 5
ADAPT_SECONDS = 60
RATIO_BOUNDS = (0.5, 3.0)
# The `abandon` rule steers to this share of target_abandon: the target is a ceiling (Ofcom and the
# FTC's TSR cap abandons at 3% of answered calls), and a rule that steers to the ceiling itself
# spends half its days over it.
AIM = 0.8


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
                wanted = int(self.ratios[group] * self._free_agents(group) + 0.5) - self.in_flight[group]
                # A held group asks once a round whether the limit still holds it.
                for _ in range(max(0, wanted) if group not in self.held else 1):
                    claimed, refusal = self.engine.claim_predictive(False, group)
                    if not self._held(group, refusal) and claimed is not None:
                        self._dial(claimed)
                    if claimed is None:
                        break
        self._claim_held()

    def _held(self, group, refusal):
        """Note whether the abandon limit refused the group's predictive claim; True when it did."""
        if refusal == ABANDON_LIMIT:
            self.held.add(group)
            self.count[f"held[{group}]"] += 1
            return True
        self.held.discard(group)
        return False

    def _claim_held(self):
        """Free agents with a held group's skill claim progressively: an agent waits, so no abandon."""
        if not self.held:
            return
        for agent in list(self.agents.values()):
            if agent.state == "idle" and not agent.blocked and self.held.intersection(agent.skills):
                self._claim(agent)

    def _pace_tick(self):
        if self.open:
            self._pace()
            self.at(self.t + PACE_SECONDS, self._pace_tick)

    def _adapt(self):
        """Each minute, each group's ratio: -0.1 when its abandon rate over the last 15 minutes or
        over the day so far (what a 24-hour ceiling measures), as the service counts them (POST
        /engine/floor, issue #37), is over AIM x target_abandon, else +0.05, within RATIO_BOUNDS."""
        if not self.open:
            return
        aim = AIM * self.scenario.target_abandon
        rates = self.engine.abandons()
        for group in self.groups:
            windows = rates[group]["windows"] if group in rates else {"15m": {"rate": 0}, "today": {"rate": 0}}
            recent, today = windows["15m"]["rate"], windows["today"]["rate"]
            step = -0.1 if recent > aim or today > aim else 0.05
            self.ratios[group] = min(RATIO_BOUNDS[1], max(RATIO_BOUNDS[0], round(self.ratios[group] + step, 2)))
        self.at(self.t + ADAPT_SECONDS, self._adapt)

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
