"""A lead's life: the push, its dial state, callbacks and retries (lead-intake-api.md).

leads.push             POST /api/leads: the batch upsert (D4)
leads.dialstate        lock, settle, release, apply a held CRM action: the one dial-state writer
leads.transitions      the pure transitions (resets, retry rule, hangup, callback, disposition, claim)
leads.callbacks        personal callbacks and their fallback
leads.outcome_retries  retries per outcome
leads.catalog          the pause-reason catalog and the push's priority rules

May import campaigns, compliance, config, events, core and the plumbing.
"""
