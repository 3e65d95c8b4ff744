"""Who may take a call (lead-intake-api.md "Claim and retry rules" 1 and 6): the one rule the
claim, the bridge, the floor and the agents' state history read from an agent's five availability
columns of sales_agents.
"""


def unavailable_reason(agent, now, *, outbound=True):
    """Why an agent may not take a call now, or None (Claim and retry rules 1 and 6).

    An agent takes a call when panel-active, presence ready (no pause code), AMI idle and out of
    wrap-up; an outbound claim also needs the agent not outbound-blocked. `outbound=False` (an
    inbound call, or a redial of the agent's own missed lead) ignores the block.
    """
    if not agent["panel_active"]:
        return "panel_inactive"
    if agent["pause_code"]:
        return "paused"
    if not agent["ami_idle"]:
        return "ami_busy"
    if agent["wrapup_until"] is not None and agent["wrapup_until"] > now:
        return "wrap_up"
    if outbound and agent["outbound_blocked"]:
        return "outbound_blocked"
    return None
