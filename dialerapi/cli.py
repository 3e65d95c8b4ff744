"""The `dialerapi` operator command (Flask's CLI group over create_app, with jobs switched off).

    dialerapi db upgrade     apply pending migrations and add missing reference rows
    dialerapi db pending     list migrations not yet applied
    dialerapi settle OLI_ID OUTCOME   settle the hangup of a live call (for the dialing engine)
    dialerapi sweep          apply held CRM actions whose lead is no longer live
    dialerapi routes         list the HTTP routes (Flask's own commands are here too)
"""

import json
from datetime import datetime

import click
from flask import current_app
from flask.cli import FlaskGroup

from . import actions, clock, create_app, dialstate, migrate
from .clock import format_wall_clock
from .config import ConfigError
from .db import get_db


def _create_cli_app():
    try:
        return create_app({"JOBS_ENABLED": False})
    except ConfigError as exc:
        raise click.ClickException(str(exc)) from None


@click.group(cls=FlaskGroup, create_app=_create_cli_app, add_version_option=False)
def main():
    """Operator commands of the dialerapi lead-intake service.

    Settings come from the environment and a .env file in the working directory
    (DATABASE_URL, WS_SECRET, ...; see README.md).
    """


@main.group()
def db():
    """Database schema: migrations (yoyo) and reference rows."""


@db.command("upgrade")
def db_upgrade():
    """Apply every pending migration, then add missing priorities, dialer config and pause reasons.

    Safe to run again: rows an operator changed are kept. Exits non-zero if the database is
    unreachable.
    """
    applied = migrate.upgrade(current_app.config["DATABASE_URL"])
    click.echo(f"applied {len(applied)} migration(s): {', '.join(applied)}" if applied else "schema is up to date")


@db.command("pending")
def db_pending():
    """List the migrations not yet applied (exit status 0 either way)."""
    names = migrate.pending(current_app.config["DATABASE_URL"])
    click.echo("\n".join(names) if names else "schema is up to date")


def _echo_json(value):
    click.echo(json.dumps(value, default=_json_default, ensure_ascii=False, indent=2))


def _json_default(value):
    if isinstance(value, datetime):
        return format_wall_clock(value)
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


@main.command()
@click.argument("oli_id")
@click.argument("outcome", type=click.Choice(list(dialstate.OUTCOMES)))
@click.option("--agent-id", type=int, help="Employee id of the agent the call was bridged to.")
@click.option("--call-type", type=click.Choice(dialstate.CALL_TYPES), default="outbound", show_default=True)
@click.option("--hangup-by", help="Who hung up (customer, agent, system); stored as reported.")
@click.option("--hangup-cause", help="The telephony hangup cause, e.g. 16 or NORMAL_CLEARING.")
@click.option("--started-at", type=click.DateTime(["%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%S"]),
              help="When the call started, wall-clock in DB_TIMEZONE (default: now).")
def settle(oli_id, outcome, agent_id, call_type, hangup_by, hangup_cause, started_at):
    """Settle the hangup of OLI_ID's live call with OUTCOME (decisions.md D6).

    Records the call attempt, applies the hangup transition, clears the reservation, starts the
    grace window of the agent's missed activity, then applies the latest held CRM callback or
    disposition. Prints the lead and the action applied as JSON. Exits 1 if the lead does not
    exist or is not live (dial_status Calling and isReserved 1).
    """
    config = current_app.config
    try:
        result = get_db().run(
            dialstate.settle, oli_id, outcome, clock.now(config["DB_TIMEZONE"]),
            grace_minutes=config["MISSED_ACTIVITY_GRACE_MINUTES"], release_retry_ms=config["RELEASE_RETRY_MS"],
            agent_id=agent_id, call_type=call_type, hangup_by=hangup_by, hangup_cause=hangup_cause,
            started_at=started_at,
        )
    except dialstate.UnknownLead:
        raise click.ClickException(f"no lead has oli_id {oli_id!r}") from None
    except dialstate.NotLive:
        raise click.ClickException(f"lead {oli_id!r} is not live (Calling and reserved): nothing to settle") from None
    shown = ("oli_id", "data_id", "dial_status", "priority_id", "callback_scheduled_at", "next_retry_at", "call_count",
             "disposeRemark")
    lead = {key: result["lead"][key] for key in shown}
    pending = result["pending"] and {key: result["pending"][key] for key in ("id", "action", "scheduled_at", "reason")}
    _echo_json({"lead": lead, "applied": pending})


@main.command()
def sweep():
    """Apply held CRM actions whose lead is no longer live, now (the job runs this every 60 s).

    Rows older than 30 s are applied; rows whose oli_id no longer exists become failed. Prints the
    counts as JSON.
    """
    _echo_json(actions.sweep(get_db(), clock.now(current_app.config["DB_TIMEZONE"])))
