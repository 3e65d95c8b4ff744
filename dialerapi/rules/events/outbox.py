"""Agent events through a transactional outbox (decisions.md D9).

A change to an agent's blocked flag or missed-activity list calls `notify` in the same
transaction, so the event exists exactly when the change does, whichever process or host (or the
dialing engine, through settle) made it. Every process reads the outbox with an `OutboxTail`.
"""

import collections
import time

from dialerapi.plumbing.db import queries

# A row's id is taken at INSERT and it becomes visible at COMMIT, so rows appear out of id order
# (and on Galera each node takes ids from its own series). A row is looked for again while a
# higher id seen less than this many seconds ago exists: longer than any transaction of the service
# (a statement waits at most 60 s) plus Galera's apply lag.
OUTBOX_WINDOW_SECONDS = 120
# How often the window below the highest id seen is read again for rows committed late.
OUTBOX_RESCAN_SECONDS = 2
OUTBOX_MAX_ROWS = 5000


def notify(conn, agent_ids, now):
    """Queue a change event for each agent in dialerapi_outbox, in the caller's transaction."""
    if agent_ids:
        queries.insert_outbox(conn, [{"agent_id": agent_id, "created_at": now} for agent_id in sorted(set(agent_ids))])


class OutboxTail:
    """One process's reader of dialerapi_outbox (or of dialerapi_agent_states: `table` "states"):
    each committed row once, whatever order rows
    commit in. Not thread-safe; one thread polls.

    The first poll starts at the newest row. Each poll reads the rows above the highest id seen;
    every OUTBOX_RESCAN_SECONDS it also reads the ids between `low` and that highest id that it has
    not delivered, where `low` is the highest id seen OUTBOX_WINDOW_SECONDS ago. `monotonic` is
    the elapsed-time source (seconds), never wall-clock time.
    """

    def __init__(self, window_seconds=OUTBOX_WINDOW_SECONDS, rescan_seconds=OUTBOX_RESCAN_SECONDS,
                 monotonic=time.monotonic, table="outbox"):
        # The same reading serves the agent state history: `table` "states".
        self.after, self.between, self.last_id = (getattr(queries, f"{table}_{name}")
                                                  for name in ("after", "between", "last_id"))
        self.window_seconds = window_seconds
        self.rescan_seconds = rescan_seconds
        self.monotonic = monotonic
        self.low = self.high = None
        self.delivered = set()  # ids above `low` already returned
        self.marks = collections.deque()  # (elapsed time, highest id seen then)
        self.last_rescan = None

    def poll(self, db):
        """The rows committed since the last poll, [{"id", "agent_id"}] in id order, each once.

        Reads through `db` (a Database) in one transaction; the tail moves on only after it committed.
        """
        now = self.monotonic()
        rescan = self.high is not None and self.high > self.low and now - self.last_rescan >= self.rescan_seconds
        rows, last_id = db.run(self._read, rescan)
        if self.high is None:
            self.low = self.high = last_id
            self.last_rescan = now
            return []
        if rescan:
            self.last_rescan = now
        fresh = sorted((row for row in rows if row["id"] not in self.delivered), key=lambda row: row["id"])
        self.delivered.update(row["id"] for row in fresh)
        if rows:
            self.high = max(self.high, max(row["id"] for row in rows))
        self.marks.append((now, self.high))
        low = self.low
        while now - self.marks[0][0] >= self.window_seconds:
            low = max(low, self.marks.popleft()[1])
        if low != self.low:
            self.low = low
            self.delivered = {row_id for row_id in self.delivered if row_id > low}
        return fresh

    def _read(self, conn, rescan):
        if self.high is None:
            return [], self.last_id(conn)
        rows = list(self.after(conn, last_id=self.high, max_rows=OUTBOX_MAX_ROWS))
        if rescan:
            rows += self.between(conn, after=self.low, upto=self.high)
        return rows, None
