"""Commands for a dialing engine without HTTP: claim, bridge, call-connected, settle, release, sweep
(the same rules as /engine/, docs/engine/library.md "The same rules as a Python library and as commands")."""

import click
from flask import current_app

from dialerapi.cli.base import echo_json, log, main, service_now, service_tz
from dialerapi.plumbing.db import get_db
from dialerapi.rules.agents import roster
from dialerapi.rules.core import vocabulary
from dialerapi.rules.dialing import claims, crm_actions
from dialerapi.rules.leads import dialstate
from dialerapi.rules.views import floor


@main.command()
@click.argument("oli_id")
@click.argument("outcome", type=click.Choice(list(vocabulary.OUTCOMES)))
@click.option("--agent-id", type=int, help="Employee id of the agent the call was bridged to.")
@click.option("--call-type", type=click.Choice(vocabulary.CALL_TYPES), default="outbound", show_default=True)
@click.option("--hangup-by", help="Who hung up (customer, agent, system); stored as reported.")
@click.option("--hangup-cause", help="The telephony hangup cause, e.g. 16 or NORMAL_CLEARING.")
@click.option("--started-at", type=click.DateTime(["%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%S"]),
              help="When the call started, wall-clock in DB_TIMEZONE (default: now).")
def settle(oli_id, outcome, agent_id, call_type, hangup_by, hangup_cause, started_at):
    """Settle the hangup of OLI_ID's live call with OUTCOME (decisions.md D6).

    Records the call attempt, applies the hangup transition, clears the reservation, starts the
    grace window of the agent's missed activity, then applies the latest held CRM callback or
    disposition. Prints the lead and the action applied as JSON. Exits 1, storing nothing, if the
    lead does not exist or is not live (dial_status Calling and isReserved 1), or if --agent-id is
    not on the roster.
    """
    config = current_app.config
    try:
        result = get_db().run(
            dialstate.settle, oli_id, outcome, service_now(), tz=config["DB_TIMEZONE"],
            grace_minutes=config["MISSED_ACTIVITY_GRACE_MINUTES"], release_retry_ms=config["RELEASE_RETRY_MS"],
            agent_id=agent_id, call_type=call_type, hangup_by=hangup_by, hangup_cause=hangup_cause,
            started_at=started_at,
        )
    except vocabulary.UnknownLead:
        raise click.ClickException(f"no lead has oli_id {oli_id!r}") from None
    except vocabulary.UnknownAgent:
        raise click.ClickException(f"no agent has id {agent_id}: nothing was settled") from None
    except vocabulary.NotLive:
        raise click.ClickException(f"lead {oli_id!r} is not live (Calling and reserved): nothing to settle") from None
    _echo_end_of_call(result)


def _echo_end_of_call(result):
    shown = ("oli_id", "data_id", "dial_status", "priority_id", "callback_scheduled_at", "next_retry_at", "call_count",
             "disposeRemark")
    lead = {key: result["lead"][key] for key in shown}
    pending = result["pending"] and {key: result["pending"][key] for key in ("id", "action", "scheduled_at", "reason")}
    echo_json({"lead": lead, "applied": pending})


@main.command()
def sweep():
    """Apply held CRM actions whose lead is no longer live, and release expired reservations, now.

    The job runs this every 60 s. Rows older than 30 s are applied; rows whose oli_id no longer
    exists become failed; reservations older than RESERVATION_LEASE_SECONDS are released as an
    originate failure. Prints the counts as JSON.
    """
    config = current_app.config
    echo_json(crm_actions.sweep(get_db(), service_now(), config["DB_TIMEZONE"], config))


@main.command()
@click.argument("oli_id")
def release(oli_id):
    """Release OLI_ID's live reservation by hand: for a call that no settle will end (a crashed engine).

    What an originate failure does, with no call attempt recorded: the status from before the
    claim comes back, call_count is untouched, the lead is retried after RELEASE_RETRY_MS, the
    missed activity of the call starts its grace window and a held CRM action is applied. A later
    settle naming the released reservation answers 409 stale_reservation. Prints the lead as JSON;
    exits 1 if the lead does not exist or is not live.
    """
    config = current_app.config
    try:
        result = get_db().run(
            dialstate.release, oli_id, service_now(), tz=config["DB_TIMEZONE"],
            grace_minutes=config["MISSED_ACTIVITY_GRACE_MINUTES"], release_retry_ms=config["RELEASE_RETRY_MS"],
        )
    except vocabulary.UnknownLead:
        raise click.ClickException(f"no lead has oli_id {oli_id!r}") from None
    except vocabulary.NotLive:
        raise click.ClickException(f"lead {oli_id!r} is not live (Calling and reserved): nothing to release") from None
    log.warning("reservation of %s released by hand (dialerapi release)", oli_id)
    _echo_end_of_call(result)


@main.command("call-connected")
@click.argument("oli_id")
@click.option("--agent-id", type=int, required=True, help="Employee id of the agent the call was bridged to.")
@click.option("--call-type", type=click.Choice(roster.CONNECTED_CALL_TYPES), default="outbound", show_default=True)
def call_connected(oli_id, agent_id, call_type):
    """A bridged outgoing or redial call to OLI_ID connected: open the agent's missed activity.

    The activity stays open (ended_at and due_at empty) until `dialerapi settle` ends the call;
    if no CRM callback or disposition arrives within MISSED_ACTIVITY_GRACE_MINUTES after that,
    the agent's outbound is paused. Prints the activity id; exits 1, opening nothing, when the lead
    is not live (no call to connect) or either id is unknown.
    """
    try:
        activity_id = get_db().run(roster.open_missed_activity, oli_id, agent_id, service_now(),
                                   current_app.config["DB_TIMEZONE"], call_type)
    except vocabulary.UnknownLead:
        raise click.ClickException(f"no lead has oli_id {oli_id!r}") from None
    except vocabulary.UnknownAgent:
        raise click.ClickException(f"no agent has id {agent_id}: add them with `dialerapi agents add`") from None
    except vocabulary.NotLive:
        raise click.ClickException(f"lead {oli_id!r} is not live (Calling and reserved): no call to connect") from None
    echo_json({"missed_activity_id": activity_id})


@main.command()
@click.option("--agent-id", type=int, help="Claim for this agent (progressive, or a named lead).")
@click.option("--oli-id", help="Claim this lead for a redial or an inbound call (with --agent-id).")
@click.option("--call-type", type=click.Choice(["redial", "inbound"]), default="redial", show_default=True,
              help="With --oli-id: the kind of call.")
@click.option("--predictive", is_flag=True, help="Claim a lead for the skills of whoever is free; bridge later.")
@click.option("--form-type", help="With --predictive: only a lead of this form_type (pacing per skill).")
def claim(agent_id, oli_id, call_type, predictive, form_type):
    """Reserve a lead for the dialing engine (lead-intake-api.md, Claim and retry rules).

    Progressive: --agent-id N claims the next due lead for agent N (due Callback, then Pending,
    Abandoned, Not Connected). Predictive: --predictive claims one that a free agent could take
    (skill and priority), of one skill with --form-type.
    Redial or inbound: --agent-id N --oli-id X [--call-type inbound]. Prints the lead as JSON, or
    `null` when no lead it may take is due and unreserved; exits 1 with the reason when no claim
    can be made (maintenance, the agent's state, no free agent, a live named lead, a listed phone,
    the customer's calling window).
    """
    if predictive == (agent_id is not None) or (oli_id and agent_id is None):
        raise click.UsageError("give --agent-id (with or without --oli-id) or --predictive")
    if form_type is not None and not predictive:
        raise click.UsageError("--form-type goes with --predictive")
    db = get_db()
    try:
        if predictive:
            row = db.run(claims.claim_predictive, service_now(), form_type=form_type, tz=service_tz())
        elif oli_id:
            row = db.run(claims.claim_lead, agent_id, oli_id, service_now(), call_type, tz=service_tz())
        else:
            row = db.run(claims.claim_next, agent_id, service_now(), tz=service_tz())
    except claims.NotClaimable as exc:
        raise click.ClickException(f"cannot claim {oli_id or 'a lead'}: {exc.reason}") from None
    except (vocabulary.UnknownAgent, vocabulary.UnknownLead) as exc:
        kind = "agent" if isinstance(exc, vocabulary.UnknownAgent) else "lead"
        raise click.ClickException(f"unknown {kind}: {exc}") from None
    echo_json(row and {key: row[key] for key in ("id", "oli_id", "data_id", "phone_number", "form_type", "priority_id",
                                                  "dial_status", "previous_dial_status", "call_count")})


@main.command()
@click.argument("oli_id")
def bridge(oli_id):
    """Predictive: OLI_ID's customer answered; pick a free agent with the lead's skill and priority.

    Prints {"agent_id": N} (the agent is marked AMI-busy), or {"agent_id": null} when nobody
    matching is free and the call holds.
    """
    try:
        agent_id = get_db().run(roster.bridge, oli_id, service_now())
    except vocabulary.UnknownLead:
        raise click.ClickException(f"no lead has oli_id {oli_id!r}") from None
    except vocabulary.NotLive:
        raise click.ClickException(f"lead {oli_id!r} is not live (Calling and reserved): nothing to bridge") from None
    echo_json({"agent_id": agent_id})


@main.command("floor")
@click.option("--form-type", help="Only this form_type.")
def floor_command(form_type):
    """The floor per form_type, for pacing: agents by state, calls reserved, leads due.

    Prints the JSON of POST /engine/floor (without "ok"), read in one snapshot.
    """
    now = service_now()
    echo_json({"at": now, **get_db().run_snapshot(floor.floor_state, now, form_type, service_tz())})
