"""Predictive pacing of the simulated floor: how many to dial for the free agents (`ratio`), the
ratio steered on the abandon rate (`abandon`), Poisson dials (`rate`), and the answered customers
who wait for a bridge or give up (README, "The floor simulator"). A part of simulate.floor.Floor.
"""

PACE_SECONDS = 5
ADAPT_SECONDS = 60
ADAPT_WINDOW_SECONDS = 900
RATIO_BOUNDS = (1.0, 3.0)


class Pacing:
    """Floor's predictive methods; they use the Floor's clock (t, at), engine, agents and queue."""

    def _bridge_waiting(self):
        while self.queue:
            call = self.queue[0]
            agent_id = self.engine.bridge(call.oli_id)
            if agent_id is None:
                return
            self.queue.popleft()
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
        self.bucket()["abandoned"] += 1
        self._hangup(call)

    def _wait_ended(self, call, abandoned):
        self.waits.append(self.t - call.answered_at)
        self.answers.append((self.t, abandoned))

    def _free_agents(self):
        return sum(1 for agent in self.agents.values() if agent.state == "idle" and not agent.blocked)

    def _pace(self):
        if not self.open or self.scenario.pacing == "rate":
            return
        wanted = round(self.ratio * self._free_agents()) - self.ringing - len(self.queue)
        for _ in range(max(0, wanted)):
            claimed, _refusal = self.engine.claim_predictive(False)
            if claimed is None:
                return
            self._dial(claimed)

    def _pace_tick(self):
        if self.open:
            self._pace()
            self.at(self.t + PACE_SECONDS, self._pace_tick)

    def _adapt(self):
        if not self.open:
            return
        while self.answers and self.answers[0][0] < self.t - ADAPT_WINDOW_SECONDS:
            self.answers.popleft()
        if self.answers:
            rate = sum(abandoned for _, abandoned in self.answers) / len(self.answers)
            step = -0.1 if rate > self.scenario.target_abandon else 0.05
            self.ratio = min(RATIO_BOUNDS[1], max(RATIO_BOUNDS[0], round(self.ratio + step, 2)))
        self.at(self.t + ADAPT_SECONDS, self._adapt)

    def _schedule_arrival(self):
        self.next_arrival += self.rng.expovariate(self.scenario.calls_per_hour / 3600)
        self.at(int(round(self.next_arrival)), self._arrival)

    def _arrival(self):
        if not self.open:
            return
        claimed, refusal = self.engine.claim_predictive(True)
        if claimed is None:
            self.count["not_dialed_" + (refusal or "nothing_due")] += 1
        else:
            self._dial(claimed)
        self._schedule_arrival()
