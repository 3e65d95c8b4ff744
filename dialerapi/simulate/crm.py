"""The CRM of the simulated floor: callbacks and dispositions filed during, after or late after a
call (README, "The floor simulator"), and the report of callbacks honoured. A part of
simulate.floor.Floor.
"""

from datetime import timedelta

from dialerapi.plumbing import clock
from dialerapi.plumbing.db import queries
from dialerapi.rules import dialstate

ON_TIME_SECONDS = 300
DISPOSITIONS = ("Not Intrested", "Invalid Lead", "Language Barrier", "DND")


class CrmFilings:
    """Floor's CRM methods; they use the Floor's clock (t, at, now), http, agents and callbacks."""

    def _file(self, oli_id):
        scenario = self.scenario
        if self.rng.random() < scenario.callback_share:
            minutes = scenario.callback_in_minutes.sample(self.rng)
            when = clock.after(self.now, timedelta(minutes=minutes), self.tz)
            self.http("/api/pending-callbacks", {"oliId": oli_id, "scheduledAt": f"{when:%Y-%m-%d %H:%M:%S}"},
                      expect=(200, 202))
            self.callbacks[oli_id] = when
            self.count["callbacks_filed"] += 1
        else:
            self.http("/api/pending-dispositions", {"oliId": oli_id, "reason": self.rng.choice(DISPOSITIONS)},
                      expect=(200, 202))
            self.count["dispositions_filed"] += 1

    def _file_late(self, oli_id):
        self._file(oli_id)
        blocked = {row["id"] for row in self.db.run(lambda conn: list(queries.sim_blocked_agents(conn)))}
        for agent in self.agents.values():
            self._set_blocked(agent, agent.id in blocked)

    def _effective_due(self, scheduled):
        """The first second at or after a callback's time when the floor is open (and, when the config
        obeys work hours, in the work window): a callback can be honoured no earlier."""
        second = self._second(scheduled)
        for opens, closes in self.days:
            start = max(second, opens)
            if start < closes:
                if self.config.outbound_obey_work_hours:
                    wall = clock.wall(self.base + timedelta(seconds=start), self.tz)
                    if not dialstate.in_work_window(wall, self.config):
                        start = self._second(dialstate.next_work_start(wall, self.config, self.tz))
                        if start >= closes:
                            continue
                return start
        return None

    def callback_report(self, end):
        """Callbacks whose effective due moment fell in the run: honoured on time (claimed within 5
        minutes of it), late, or not dialed by the end; and those due after the run."""
        on_time = sum(1 for lateness in self.callback_lateness if lateness <= ON_TIME_SECONDS)
        due_later = not_dialed = 0
        for scheduled in self.callbacks.values():
            due = self._effective_due(scheduled)
            if due is None or due > end:
                due_later += 1
            else:
                not_dialed += 1
        dialed = len(self.callback_lateness)
        return {"due": dialed + not_dialed, "on_time": on_time, "late": dialed - on_time, "not_dialed": not_dialed,
                "due_after_the_run": due_later}
