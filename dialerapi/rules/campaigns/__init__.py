"""Campaign operations: pause, resume, change and their history (docs/operations/campaigns.md).
A campaign's settings and calendar are config's; these are the changes an operator makes.

campaigns.operations  refusal, status, view, update, pause, resume, history

May import config, events, core and the plumbing; independent of compliance.
"""
