"""A call's life on the simulated floor: dialed, rung, answered or not, connected to an agent,
hung up and settled (docs/simulator.md, "The floor simulator"). A part of simulate.floor.Floor.
"""

import heapq
from dataclasses import dataclass
from datetime import datetime

from dialerapi.plumbing import clock
from dialerapi.rules.compliance import phones


@dataclass
class Call:
    oli_id: str
    form_type: str
    outcome: str
    dialed_at: int
    started_at: datetime
    agent: object | None = None
    answered_at: int | None = None
    token: int = 0
    filing: str | None = None


class CallLife:
    """Floor's call methods; they use the Floor's clock (t, at, now), engine, agents, counts and pacing."""

    def _check_lawful(self, oli_id):
        """Count a dial the rules should have stopped: a listed phone, or one whose
        customer's local time is outside the calling window while it is obeyed. Both stay 0."""
        self.count["dialed_listed"] += oli_id in self.listed
        config = self.config
        if config.obey_calling_window:
            self.count["dialed_outside_window"] += not phones.window_open(
                self.zone_names[oli_id], clock.instant(self.now, self.tz), config.calling_window_start,
                config.calling_window_end, self.tz)

    def _dial(self, claimed, agent=None):
        scenario = self.scenario
        self._record_callback_dialed(claimed.oli_id, claimed.previous_dial_status, agent)
        outcome = self.rng.choices(list(scenario.outcomes), weights=list(scenario.outcomes.values()))[0]
        call = Call(claimed.oli_id, claimed.form_type, outcome, self.t, self.now, agent)
        self.live.add(call.oli_id)
        self.next_due_rows.pop(call.form_type, None)  # the claim took one of its leads
        if agent is None:
            self.in_flight[call.form_type] += 1
            self.dialed_since[call.form_type] += 1
        self.count["dialed"] += 1
        self._check_lawful(claimed.oli_id)
        self.bucket()["calls"] += 1
        if agent:
            self._set_state(agent, "ringing")
        ring = 0 if outcome == "originate_failed" else scenario.ring_seconds.sample(self.rng)
        self.at(self.t + ring, self._answer if outcome == "answered" else self._hangup, call)

    def _answer(self, call):
        call.answered_at = self.t
        self.count["answered"] += 1
        self.count[f"answered[{call.form_type}]"] += 1
        self.day_count[(self.day_number, call.form_type)]["answered"] += 1
        self.bucket()["answered"] += 1
        if call.agent:
            self._connect(call)
            return
        self.queue.append(call)
        if self.scenario.patience_seconds is not None:
            self.at(self.t + self.scenario.patience_seconds.sample(self.rng), self._abandon, call, call.token)
        self._bridge_waiting(answered=call)

    def _connect(self, call):
        """The customer is through to the call's agent: talk, and decide when the outcome is filed."""
        scenario = self.scenario
        agent = call.agent
        self.engine.connected(call.oli_id, agent.id)
        self._set_state(agent, "talk")
        agent.contacts += 1
        self.count["contacts"] += 1
        self.contacted.add(call.oli_id)
        self.bucket()["contacts"] += 1
        talk = scenario.talk_seconds.sample(self.rng)
        draw = self.rng.random()
        if draw < scenario.during_call:
            call.filing = "during"
            self.at(self.t + self.rng.randint(0, max(0, talk - 1)), self._file, call.oli_id, agent and agent.id)
        elif draw < scenario.files_outcome:
            call.filing = "after"
        else:
            call.filing = "late"
        self.count[f"filed_{call.filing}"] += 1
        self.at(self.t + talk, self._hangup, call)

    def _hangup(self, call):
        scenario = self.scenario
        agent = call.agent
        grace = scenario.grace_minutes * 60
        # Drawn in this order before the settle, which takes the agent's wrap-up with it.
        filed_in = None
        if call.filing == "after":
            filed_in = self.rng.randint(0, max(0, grace - 1))
        elif call.filing == "late":
            filed_in = grace + int(round(scenario.late_filing_minutes.sample(self.rng) * 60))
        wrap = None
        if agent:
            reached = call.answered_at is not None
            wrap = scenario.wrapup_seconds.sample(self.rng) if reached or scenario.wrapup_after == "every" else 0
        self.engine.settle(call.oli_id, call.outcome, agent and agent.id, call.started_at, wrapup_seconds=wrap)
        # One live call per number: the number's other leads, passed over while it rang,
        # may be claimed again, whatever their form_type.
        for form_type in sorted(self.number_form_types[self.phones[call.oli_id]] | {call.form_type}):
            self._leads_changed(form_type)
        self.live.discard(call.oli_id)
        if agent is None:
            self.in_flight[call.form_type] -= 1
        self.outcomes[call.outcome] += 1
        if filed_in is not None:
            self.at(self.t + filed_in, self._file if call.filing == "after" else self._file_late, call.oli_id,
                    agent and agent.id)
        if call.filing == "late":
            # The settle started the grace window of the agent's missed activity, which nothing
            # clears before it ends: the blocking job blocks the agent then. An outcome filed
            # during the call or the grace window clears the activity before.
            heapq.heappush(self.grace_ends, self.t + grace)
        if agent:
            agent.calls += 1
            if wrap:
                self._set_state(agent, "wrap")
                self.at(self.t + wrap, self._free, agent)
            else:
                self._free(agent)
        elif self.scenario.mode == "predictive":
            self._pace()
        self._maybe_finish()

