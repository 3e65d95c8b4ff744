"""What the service tells others of a change, written in the change's transaction (decisions.md D9).

events.lead_events  the lead and campaign events and the CRM's feed (docs/crm/results.md)
events.webhooks     webhook endpoints and the delivery rules
events.outbox       the agents' outbox, read by every process's sockets

May import core and the plumbing.
"""
