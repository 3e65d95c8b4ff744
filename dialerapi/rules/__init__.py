"""The dial-state rules every side shares (lead-intake-api.md; decisions.md), a sub-package per
sub-domain (docs/architecture.md "The rules"). Imports point down, held by setup.cfg's `rules`
contract:

    views | dialing      the lead read, why not now, the floor, the board | claims, engine, CRM actions
    agents               roster, availability, state history
    leads                push, dial state, transitions, callbacks, retries, catalog
    campaigns | compliance
    config | events
    core                 the vocabulary

Each function takes the connection first and never commits (plumbing.db.Database.run does). Imports
only the plumbing from outside. rules.claims and rules.dialstate are the engine library's former
paths, kept as deprecated re-exports (docs/engine/library.md).
"""
