"""Which number the customer sees (docs/operations/caller-ids.md).

caller_ids.numbers  the floor's numbers: read, added, changed, flagged, retired, with their history

May import compliance, campaigns, config, events, core and the plumbing; never leads, agents,
dialing or views.
"""
