"""What queueing and renewal theory say a floor should do, to hold the simulator to
(tests/faults/test_simulate_theory.py, in make faults).

Rates are per second, times in seconds.
"""

from dataclasses import dataclass


@dataclass(frozen=True)
class ErlangA:
    """Steady state of M/M/n+M: answered customers arrive at `arrivals` per second, `agents` serve
    each for an exponential time of mean 1/`service`, a waiting customer leaves after an exponential
    patience of mean 1/`patience` (0: never, Erlang-C, which needs arrivals < agents x service)."""

    arrivals: float
    service: float
    agents: int
    patience: float

    def _states(self):
        """Probabilities of n customers in the system (talking or waiting), from the birth-death chain."""
        weights, weight, n = [1.0], 1.0, 0
        while True:
            n += 1
            weight *= self.arrivals / (min(n, self.agents) * self.service + max(0, n - self.agents) * self.patience)
            weights.append(weight)
            if n > self.agents and weight < 1e-15 * sum(weights):
                break
            if n > 100000:
                raise ValueError("no steady state: arrivals exceed what the agents serve and nobody leaves")
        total = sum(weights)
        return [w / total for w in weights]

    def metrics(self):
        """{waited: P(wait > 0), abandoned: P(abandon), mean_wait: mean wait of every answered
        customer, served or not (Little's law), occupancy: share of agent time talking}."""
        states = self._states()
        queue = sum((n - self.agents) * p for n, p in enumerate(states) if n > self.agents)
        waited = sum(p for n, p in enumerate(states) if n >= self.agents)
        abandoned = self.patience * queue / self.arrivals
        return {"waited": waited, "abandoned": abandoned, "mean_wait": queue / self.arrivals,
                "occupancy": self.arrivals * (1 - abandoned) / (self.agents * self.service)}


def progressive_cycle(scenario):
    """Mean and variance of one progressive agent cycle (claim to free again), in seconds.

    ring (none for an originate failure), talk when answered, wrap-up after answered calls (or
    every call with wrapup_after = every). Assumes a lead is always due and no agent is blocked.
    """
    weights = scenario.outcomes
    total = sum(weights.values())
    parts = []  # (probability, mean, variance) of each outcome's cycle
    for outcome, weight in weights.items():
        mean = var = 0.0
        if outcome != "originate_failed":
            mean, var = scenario.ring_seconds.mean, scenario.ring_seconds.variance
        if outcome == "answered":
            mean += scenario.talk_seconds.mean
            var += scenario.talk_seconds.variance
        if outcome == "answered" or scenario.wrapup_after == "every":
            mean += scenario.wrapup_seconds.mean
            var += scenario.wrapup_seconds.variance
        parts.append((weight / total, mean, var))
    mean = sum(p * m for p, m, _ in parts)
    second_moment = sum(p * (v + m * m) for p, m, v in parts)
    return mean, second_moment - mean * mean


def tries_law(retry_share, max_tries):
    """P(a lead ends its sequence after k tries), k = 1..max_tries, when each try independently
    ends it with probability 1 - `retry_share` and max_tries stops it (truncated geometric)."""
    law = {k: retry_share ** (k - 1) * (1 - retry_share) for k in range(1, max_tries)}
    law[max_tries] = retry_share ** (max_tries - 1)
    return law
