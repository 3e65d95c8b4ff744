"""The `dialerapi` operator command (Flask's CLI group over create_app, with jobs switched off).

    dialerapi db upgrade     apply pending migrations and add missing reference rows
    dialerapi db pending     list migrations not yet applied
    dialerapi settle OLI_ID OUTCOME   settle the hangup of a live call (for the dialing engine)
    dialerapi sweep          apply held CRM actions whose lead is no longer live; release expired reservations
    dialerapi release OLI_ID release a live reservation that no settle will end (a crashed engine)
    dialerapi call-connected OLI_ID --agent-id N   open the agent's missed activity (for the engine)
    dialerapi agents add|update|list|remove|import|state   the agent roster and availability
    dialerapi agents token ID   mint a token for an agent's panel (its /ws and missed activities only)
    dialerapi claim --agent-id N | --predictive       reserve a lead (for the engine)
    dialerapi bridge OLI_ID  predictive: pick a free skilled agent for an answered call
    dialerapi dnc add|remove|import|export|count   the do-not-call list
    dialerapi caps list|enable|disable|add|remove   contact caps per phone number
    dialerapi caller-ids add|import|list|show|set|flag|retire   the floor's caller IDs
    dialerapi retries list|set|reset   retries per outcome
    dialerapi leads import FILE   load a CSV, Excel or JSON Lines lead list through the push's rules
    dialerapi floor          the floor per form_type for a pacing engine (agents, calls, leads due, abandons)
    dialerapi campaigns list|show|set|pause|resume   each campaign's calendar, rules and state
    dialerapi config show|set   the abandon settings (limit, period, minimum answered, connect seconds, enforcement)
    dialerapi report abandons --from DAY --to DAY   the abandon rate's compliance record per day and form_type
    dialerapi report agents --from DAY --to DAY     the agent time report per agent and day
    dialerapi report caps --from DAY --to DAY       numbers that reached a contact cap per day and cap
    dialerapi report board-token NAME   mint a supervisor token for the board (/board/) and the reports
    dialerapi webhooks add|list|disable|enable|remove|rotate-secret|test|replay|log|dispatch   the CRM's webhooks
    dialerapi simulate       play a campaign on a virtual clock in its own schema; figures with intervals
    dialerapi routes         list the HTTP routes (Flask's own commands are here too)
"""

from dialerapi.cli import (  # noqa: F401 - each module adds its commands to main
    agents, caller_ids, calling, calls, campaigns, caps, config, db, dnc, leads, report, simulate, webhooks)
from dialerapi.cli.base import main

__all__ = ["main"]
