"""Agents: the roster, who may take a call, and their state history (lead-intake-api.md "Missed
activity"; decisions.md D7).

agents.roster         the roster, missed activities, outbound blocking, bridge
agents.availability   who may take a call now
agents.state_history  agent state history, board rows, the agent time report

May import leads and everything below it.
"""
