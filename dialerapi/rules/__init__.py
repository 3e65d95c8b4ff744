"""The dial-state rules every side shares (lead-intake-api.md; decisions.md): the dial state (the
push reset, settle, release, retry), claims, CRM actions held while a lead is live, the lead push,
agents and missed activities, the catalog, the engine's operations with their stored replies, and
the outbox of agent events.

Each function takes the connection first and never commits (plumbing.db.Database.run does). Imports
only the plumbing.
"""
