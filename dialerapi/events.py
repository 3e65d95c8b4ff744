"""Agent events through a transactional outbox (decisions.md D9).

A change to an agent's blocked flag or missed-activity list calls `notify` in the same
transaction, so the event exists exactly when the change does, whichever process or host (or the
dialing engine, through settle) made it.
"""

from .db import queries


def notify(conn, agent_ids, now):
    """Queue a change event for each agent in dialerapi_outbox, in the caller's transaction."""
    if agent_ids:
        queries.insert_outbox(conn, [{"agent_id": agent_id, "created_at": now} for agent_id in sorted(set(agent_ids))])
