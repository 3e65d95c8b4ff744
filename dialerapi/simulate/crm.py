"""The CRM of the simulated floor: callbacks and dispositions filed during, after or late after a
call (docs/simulator.md, "The floor simulator"), and the report of callbacks honoured. A part of
simulate.floor.Floor.
"""

from datetime import timedelta

from dialerapi.plumbing import clock
from dialerapi.plumbing.db import queries
from dialerapi.rules.config import work_window
from dialerapi.rules.core import vocabulary

ON_TIME_SECONDS = 300
DISPOSITIONS = ("Not Intrested", "Invalid Lead", "Language Barrier", "DND")


class CrmFilings:
    """Floor's CRM methods; they use the Floor's clock (t, at, now), http, agents and callbacks."""

    def _file(self, oli_id, agent_id=None):
        """File the outcome of a call of `oli_id`; `agent_id`: the agent who took it, whom a personal
        callback (personal_callback_share of the callbacks) names."""
        scenario = self.scenario
        self._leads_changed(self.form_types[oli_id])
        if self.rng.random() < scenario.callback_share:
            minutes = scenario.callback_in_minutes.sample(self.rng)
            when = clock.after(self.now, timedelta(minutes=minutes), self.tz)
            body = {"oliId": oli_id, "scheduledAt": f"{when:%Y-%m-%d %H:%M:%S}"}
            # Drawn only when the share is set, so a scenario without it draws as before.
            owner = agent_id if agent_id is not None and scenario.personal_callback_share and \
                self.rng.random() < scenario.personal_callback_share else None
            if owner is not None:
                body["callbackAgentId"] = owner
                self.count["personal_callbacks_filed"] += 1
            self.http("/api/pending-callbacks", body, expect=(200, 202))
            self.callbacks[oli_id] = when
            self.callback_owners[oli_id] = owner
            self.count["callbacks_filed"] += 1
        else:
            self.http("/api/pending-dispositions", {"oliId": oli_id, "reason": self.rng.choice(DISPOSITIONS)},
                      expect=(200, 202))
            self.count["dispositions_filed"] += 1

    def _file_late(self, oli_id, agent_id=None):
        self._file(oli_id, agent_id)
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
                    if not work_window.in_work_window(wall, self.config):
                        start = self._second(work_window.next_work_start(wall, self.config, self.tz))
                        if start >= closes:
                            continue
                return start
        return None

    def _record_callback_dialed(self, oli_id, previous_status, agent):
        """A claim took `oli_id`: when it was a callback the CRM filed, record how late it was
        dialed, and for a personal one whether its owner took it or another after the fallback."""
        due = self.callbacks.pop(oli_id, None)
        owner = self.callback_owners.pop(oli_id, None)
        if previous_status != vocabulary.CALLBACK or due is None:
            return
        lateness = self.t - self._effective_due(due)
        self.callback_lateness["personal" if owner is not None else "ordinary"].append(lateness)
        if owner is None:
            return
        if agent is not None and agent.id == owner:
            self.count["personal_by_owner"] += 1
            return
        self.count["personal_after_fallback"] += 1
        # Another claim took it: the rule says only once it has been due for the fallback (stays 0).
        fallback = self.config.personal_callback_fallback_minutes
        since_due = (clock.instant(self.now, self.tz) - clock.instant(due, self.tz)).total_seconds()
        self.count["personal_taken_early"] += fallback is None or since_due < fallback * 60

    def callback_report(self, end):
        """Callbacks whose effective due moment fell in the run: honoured on time (claimed within 5
        minutes of it), late, or not dialed by the end; and those due after the run. The same for
        the personal ones (with by_owner and after_fallback, who took them) and the
        ordinary ones apart."""
        parts = {}
        for kind in ("personal", "ordinary"):
            lateness = self.callback_lateness[kind]
            on_time = sum(1 for seconds in lateness if seconds <= ON_TIME_SECONDS)
            due_later = not_dialed = 0
            for oli_id, scheduled in self.callbacks.items():
                if (self.callback_owners.get(oli_id) is not None) != (kind == "personal"):
                    continue
                due = self._effective_due(scheduled)
                if due is None or due > end:
                    due_later += 1
                else:
                    not_dialed += 1
            parts[kind] = {"due": len(lateness) + not_dialed, "on_time": on_time, "late": len(lateness) - on_time,
                           "not_dialed": not_dialed, "due_after_the_run": due_later}
        parts["personal"].update(by_owner=self.count["personal_by_owner"],
                                 after_fallback=self.count["personal_after_fallback"],
                                 taken_early_by_another=self.count["personal_taken_early"])
        total = {name: parts["personal"][name] + parts["ordinary"][name]
                 for name in ("due", "on_time", "late", "not_dialed", "due_after_the_run")}
        return {**total, "personal": parts["personal"], "ordinary": parts["ordinary"]}
