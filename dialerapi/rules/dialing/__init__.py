"""What the engine and the CRM do to a lead on the floor: claims, the engine's operations, the CRM's
after-call actions (docs/engine/api.md; lead-intake-api.md "Pending row statuses").

dialing.claims       progressive, predictive, redial and inbound claims and their candidate reads
dialing.engine       the engine's operations with their stored replies
dialing.crm_actions  callbacks and dispositions filed by the CRM, held while a lead is live; the sweep

May import agents and everything below it; independent of views.
"""
