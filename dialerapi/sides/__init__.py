"""One folder a caller, each with its HTTP (or socket) surface and its request schemas: crm (lead
push, callbacks, dispositions), engine (/engine/), agent (the socket, missed activities, tokens, the
reference panel) and monitor (health and metrics).

A side imports web, upkeep, the rules and the plumbing, never another side.
"""
