"""The `dialerapi` operator command (Flask's CLI group over create_app, with jobs switched off).

    dialerapi db upgrade     apply pending migrations and add missing reference rows
    dialerapi db pending     list migrations not yet applied
    dialerapi settle OLI_ID OUTCOME   settle the hangup of a live call (for the dialing engine)
    dialerapi sweep          apply held CRM actions whose lead is no longer live; release expired reservations
    dialerapi release OLI_ID release a live reservation that no settle will end (a crashed engine)
    dialerapi call-connected OLI_ID --agent-id N   open the agent's missed activity (for the engine)
    dialerapi agents add|update|list|remove|import|state   the agent roster and availability
    dialerapi agents token ID   mint a token for an agent's panel (its /ws and missed activities only)
    dialerapi claim --agent-id N | --predictive       reserve a lead (for the engine)
    dialerapi bridge OLI_ID  predictive: pick a free skilled agent for an answered call
    dialerapi simulate       play a campaign on a virtual clock in its own schema; figures with intervals
    dialerapi routes         list the HTTP routes (Flask's own commands are here too)
"""

import csv
import json
from datetime import datetime

import logging

import click
from click.core import ParameterSource
from flask import current_app
from flask.cli import FlaskGroup

from . import actions, agent_tokens, agents, claims, clock, create_app, dialstate, migrate
from .clock import format_wall_clock
from .config import ConfigError
from .db import get_db, queries

log = logging.getLogger("dialerapi.cli")


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


def _now():
    """The service clock's wall-clock reading in DB_TIMEZONE (decisions.md D2)."""
    return clock.now(current_app.config["DB_TIMEZONE"])


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
    disposition. Prints the lead and the action applied as JSON. Exits 1, storing nothing, if the
    lead does not exist or is not live (dial_status Calling and isReserved 1), or if --agent-id is
    not on the roster.
    """
    config = current_app.config
    try:
        result = get_db().run(
            dialstate.settle, oli_id, outcome, _now(), tz=config["DB_TIMEZONE"],
            grace_minutes=config["MISSED_ACTIVITY_GRACE_MINUTES"], release_retry_ms=config["RELEASE_RETRY_MS"],
            agent_id=agent_id, call_type=call_type, hangup_by=hangup_by, hangup_cause=hangup_cause,
            started_at=started_at,
        )
    except dialstate.UnknownLead:
        raise click.ClickException(f"no lead has oli_id {oli_id!r}") from None
    except dialstate.UnknownAgent:
        raise click.ClickException(f"no agent has id {agent_id}: nothing was settled") from None
    except dialstate.NotLive:
        raise click.ClickException(f"lead {oli_id!r} is not live (Calling and reserved): nothing to settle") from None
    _echo_end_of_call(result)


def _echo_end_of_call(result):
    shown = ("oli_id", "data_id", "dial_status", "priority_id", "callback_scheduled_at", "next_retry_at", "call_count",
             "disposeRemark")
    lead = {key: result["lead"][key] for key in shown}
    pending = result["pending"] and {key: result["pending"][key] for key in ("id", "action", "scheduled_at", "reason")}
    _echo_json({"lead": lead, "applied": pending})


@main.command()
def sweep():
    """Apply held CRM actions whose lead is no longer live, and release expired reservations, now.

    The job runs this every 60 s. Rows older than 30 s are applied; rows whose oli_id no longer
    exists become failed; reservations older than RESERVATION_LEASE_SECONDS are released as an
    originate failure. Prints the counts as JSON.
    """
    config = current_app.config
    _echo_json(actions.sweep(get_db(), _now(), config["DB_TIMEZONE"], config))


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
            dialstate.release, oli_id, _now(), tz=config["DB_TIMEZONE"],
            grace_minutes=config["MISSED_ACTIVITY_GRACE_MINUTES"], release_retry_ms=config["RELEASE_RETRY_MS"],
        )
    except dialstate.UnknownLead:
        raise click.ClickException(f"no lead has oli_id {oli_id!r}") from None
    except dialstate.NotLive:
        raise click.ClickException(f"lead {oli_id!r} is not live (Calling and reserved): nothing to release") from None
    log.warning("reservation of %s released by hand (dialerapi release)", oli_id)
    _echo_end_of_call(result)


@main.command("call-connected")
@click.argument("oli_id")
@click.option("--agent-id", type=int, required=True, help="Employee id of the agent the call was bridged to.")
@click.option("--call-type", type=click.Choice(agents.CONNECTED_CALL_TYPES), default="outbound", show_default=True)
def call_connected(oli_id, agent_id, call_type):
    """A bridged outgoing or redial call to OLI_ID connected: open the agent's missed activity.

    The activity stays open (ended_at and due_at empty) until `dialerapi settle` ends the call;
    if no CRM callback or disposition arrives within MISSED_ACTIVITY_GRACE_MINUTES after that,
    the agent's outbound is paused. Prints the activity id; exits 1, opening nothing, when the lead
    is not live (no call to connect) or either id is unknown.
    """
    try:
        activity_id = get_db().run(agents.open_missed_activity, oli_id, agent_id, _now(),
                                   current_app.config["DB_TIMEZONE"], call_type)
    except dialstate.UnknownLead:
        raise click.ClickException(f"no lead has oli_id {oli_id!r}") from None
    except agents.UnknownAgent:
        raise click.ClickException(f"no agent has id {agent_id}: add them with `dialerapi agents add`") from None
    except dialstate.NotLive:
        raise click.ClickException(f"lead {oli_id!r} is not live (Calling and reserved): no call to connect") from None
    _echo_json({"missed_activity_id": activity_id})


@main.group("agents")
def agents_group():
    """The agent roster: employee id, extension, name, skills (form_types) and allowed priorities."""


def _int_list(values):
    return [int(v) for v in values]


def _save(agent_id, extension, name, skills, priorities):
    try:
        get_db().run(agents.save_agent, agent_id, extension, name, skills, priorities)
    except agents.RosterError as exc:
        raise click.ClickException(str(exc)) from None


@agents_group.command("add")
@click.argument("agent_id", type=int)
@click.argument("extension")
@click.argument("name")
@click.option("--skill", "skills", multiple=True, help="A form_type the agent may dial; repeat for several.")
@click.option("--priority", "priorities", multiple=True, type=int,
              help="An allowed priority_id; repeat for several. None given: every priority.")
def agents_add(agent_id, extension, name, skills, priorities):
    """Add agent AGENT_ID (the employee id) with EXTENSION (3-16 digits) and NAME."""
    if get_db().run(queries.get_agent, agent_id=agent_id) is not None:
        raise click.ClickException(f"agent {agent_id} exists: use `dialerapi agents update`")
    _save(agent_id, extension, name, list(skills), _int_list(priorities))
    click.echo(f"added agent {agent_id}")


@agents_group.command("update")
@click.argument("agent_id", type=int)
@click.option("--extension", help="New extension (3-16 digits).")
@click.option("--name", help="New name.")
@click.option("--skill", "skills", multiple=True, help="Replace the skills with these form_types.")
@click.option("--no-skills", is_flag=True, help="Remove every skill.")
@click.option("--priority", "priorities", multiple=True, type=int, help="Replace the allowed priorities.")
@click.option("--all-priorities", is_flag=True, help="Allow every priority (removes the list).")
def agents_update(agent_id, extension, name, skills, no_skills, priorities, all_priorities):
    """Change what is given of agent AGENT_ID; skills and priorities are replaced only when given."""
    try:
        agent = get_db().run(agents.find_agent, agent_id=agent_id)
    except agents.UnknownAgent:
        raise click.ClickException(f"no agent has id {agent_id}") from None
    new_skills = [] if no_skills else (list(skills) or None)
    new_priorities = [] if all_priorities else (_int_list(priorities) or None)
    _save(agent_id, extension or agent["extension"], name or agent["name"], new_skills, new_priorities)
    click.echo(f"updated agent {agent_id}")


@agents_group.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def agents_list(as_json):
    """List the roster: id, extension, name, blocked, pause code, skills and priorities."""
    roster = get_db().run(agents.list_agents)
    if as_json:
        _echo_json(roster)
        return
    click.echo(f"{'id':>8}  {'extension':<10} {'name':<24} {'blocked':<7} {'pause':<14} skills / priorities")
    for a in roster:
        priorities = ",".join(map(str, a["priorities"])) or "all"
        click.echo(f"{a['id']:>8}  {a['extension']:<10} {a['name']:<24} {'yes' if a['outbound_blocked'] else 'no':<7} "
                   f"{a['pause_code'] or '-':<14} {','.join(a['skills']) or '-'} / {priorities}")


@agents_group.command("remove")
@click.argument("agent_id", type=int)
def agents_remove(agent_id):
    """Remove agent AGENT_ID with their skills and priorities (missed-activity history is kept)."""
    try:
        get_db().run(agents.remove_agent, agent_id)
    except agents.UnknownAgent:
        raise click.ClickException(f"no agent has id {agent_id}") from None
    click.echo(f"removed agent {agent_id}")


@agents_group.command("token")
@click.argument("agent_id", type=int)
@click.option("--lifetime", type=click.IntRange(min=1), default=None,
              help="Seconds the token is valid (default AGENT_TOKEN_SECONDS, at most AGENT_TOKEN_MAX_SECONDS).")
@click.option("--json", "as_json", is_flag=True, help="Print {agent_id, token, expires_at} as JSON.")
def agents_token(agent_id, lifetime, as_json):
    """Mint a token for agent AGENT_ID's panel: it opens that agent's /ws and missed activities only
    (issue #28). Prints the token (and its expiry, UTC, on stderr)."""
    config = current_app.config
    if lifetime is not None and lifetime > config["AGENT_TOKEN_MAX_SECONDS"]:
        raise click.BadParameter(f"at most {config['AGENT_TOKEN_MAX_SECONDS']} seconds (AGENT_TOKEN_MAX_SECONDS)",
                                 param_hint="--lifetime")
    try:
        agent = get_db().run(agents.find_agent, agent_id=agent_id)
    except agents.UnknownAgent:
        raise click.ClickException(f"no agent has id {agent_id}") from None
    token, expires_at = agent_tokens.mint(config, agent["id"], lifetime)
    if as_json:
        _echo_json({"agent_id": agent["id"], "token": token, "expires_at": clock.format_utc(expires_at)})
        return
    click.echo(token)
    click.echo(f"expires {clock.format_utc(expires_at)}", err=True)


@agents_group.command("import")
@click.argument("csv_file", type=click.File(encoding="utf-8-sig"))
def agents_import(csv_file):
    """Add or update a floor of agents from CSV_FILE, all or nothing.

    Columns: id, extension, name, skills, priorities; skills and priorities are separated by
    `;` (e.g. `home_loan;credit_card`), an empty priorities cell allows every priority.
    """
    rows = list(csv.DictReader(csv_file))
    missing = {"id", "extension", "name"} - set(rows[0] if rows else {})
    if missing:
        raise click.ClickException(f"{csv_file.name}: missing column(s) {', '.join(sorted(missing))}")

    def split(cell):
        return [part.strip() for part in (cell or "").split(";") if part.strip()]

    def import_all(conn):
        for line, row in enumerate(rows, start=2):
            try:
                agents.save_agent(conn, int(row["id"]), row["extension"].strip(), row["name"].strip(),
                                  split(row.get("skills")), _int_list(split(row.get("priorities"))))
            except (agents.RosterError, ValueError) as exc:
                raise click.ClickException(f"{csv_file.name}, line {line}: {exc}") from None

    get_db().run(import_all)
    click.echo(f"imported {len(rows)} agent(s)")


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
    can be made (maintenance, the agent's state, no free agent, a live named lead).
    """
    if predictive == (agent_id is not None) or (oli_id and agent_id is None):
        raise click.UsageError("give --agent-id (with or without --oli-id) or --predictive")
    if form_type is not None and not predictive:
        raise click.UsageError("--form-type goes with --predictive")
    db = get_db()
    try:
        if predictive:
            row = db.run(claims.claim_predictive, _now(), form_type=form_type)
        elif oli_id:
            row = db.run(claims.claim_lead, agent_id, oli_id, _now(), call_type)
        else:
            row = db.run(claims.claim_next, agent_id, _now())
    except claims.NotClaimable as exc:
        raise click.ClickException(f"cannot claim {oli_id or 'a lead'}: {exc.reason}") from None
    except (agents.UnknownAgent, dialstate.UnknownLead) as exc:
        kind = "agent" if isinstance(exc, agents.UnknownAgent) else "lead"
        raise click.ClickException(f"unknown {kind}: {exc}") from None
    _echo_json(row and {key: row[key] for key in ("id", "oli_id", "data_id", "phone_number", "form_type", "priority_id",
                                                  "dial_status", "previous_dial_status", "call_count")})


@main.command()
@click.argument("oli_id")
def bridge(oli_id):
    """Predictive: OLI_ID's customer answered; pick a free agent with the lead's skill and priority.

    Prints {"agent_id": N} (the agent is marked AMI-busy), or {"agent_id": null} when nobody
    matching is free and the call holds.
    """
    try:
        agent_id = get_db().run(claims.bridge, oli_id, _now())
    except dialstate.UnknownLead:
        raise click.ClickException(f"no lead has oli_id {oli_id!r}") from None
    except dialstate.NotLive:
        raise click.ClickException(f"lead {oli_id!r} is not live (Calling and reserved): nothing to bridge") from None
    _echo_json({"agent_id": agent_id})


@agents_group.command("state")
@click.argument("agent_id", type=int)
@click.option("--panel/--no-panel", "panel_active", default=None, help="The agent panel is connected.")
@click.option("--ami-idle/--ami-busy", "ami_idle", default=None, help="The agent's phone is idle in Asterisk.")
@click.option("--wrapup-seconds", type=click.IntRange(0, 86400), default=0, show_default=True,
              help="The agent is in wrap-up for this many seconds from now (0: not in wrap-up).")
def agents_state(agent_id, panel_active, ami_idle, wrapup_seconds):
    """Record what the engine knows of AGENT_ID: panel, AMI state and wrap-up (used by the claim)."""
    get_db().run(claims.set_availability, agent_id, panel_active=panel_active, ami_idle=ami_idle,
                 wrapup_until=claims.wrapup_until(wrapup_seconds, _now(), current_app.config["DB_TIMEZONE"]))
    click.echo(f"agent {agent_id}: state recorded")


def _json_value(ctx, param, value):
    """A JSON option's value; a plain word (`--skills all`) stays a string for ScenarioSchema to judge."""
    if value is None:
        return None
    try:
        return json.loads(value)
    except json.JSONDecodeError:
        return value


def _scenario_options(command):
    """The scenario fields as options; each overrides the --scenario file (README "The floor simulator")."""
    json_options = {
        "--outcomes": "Outcome weights, JSON: {\"answered\": 35, \"no_answer\": 33, ...}.",
        "--ring-seconds": "Ring time, JSON: 20, [8, 30] or {\"exponential\": 20}.",
        "--talk-seconds": "Talk time of an answered call (same forms).",
        "--wrapup-seconds": "Wrap-up time (same forms).",
        "--patience-seconds": "Predictive: how long an answered customer waits for an agent (same forms; null: forever).",
        "--late-filing-minutes": "How long after the grace window a forgetful agent files (same forms).",
        "--callback-in-minutes": "How far ahead a filed callback is scheduled (same forms).",
        "--form-types": "Lead mix, JSON weights: {\"home_loan\": 2, \"credit_card\": 1}.",
        "--skills": "\"all\" (default) or JSON {form_type: number of agents with that skill}.",
    }
    plain = [
        ("--agents", click.IntRange(1, 1000), "Agents on the floor [50]."),
        ("--leads", click.IntRange(1, 200000), "Leads pushed before the first day [5000]."),
        ("--days", click.IntRange(1, 60), "Working days to play [1]."),
        ("--hours", click.FloatRange(0.1, 24), "Hours the floor works each day, from work_start [the work window]."),
        ("--start-date", click.DateTime(["%Y-%m-%d"]), "The first day [2026-01-05], so a run does not depend on today."),
        ("--seed", int, "Random seed of the first run [1]; replication k uses seed + k."),
        ("--replications", click.IntRange(1, 200), "Runs of the scenario, seeds seed, seed+1, ...; each figure gets "
                                                    "a 95% interval from 2 runs [3]."),
        ("--mode", click.Choice(["progressive", "predictive"]), "How the engine dials [progressive]."),
        ("--pacing", click.Choice(["ratio", "abandon", "rate"]), "Predictive pacing rule [ratio]."),
        ("--dial-ratio", float, "Pacing ratio: customers ringing or waiting per free agent [1.5]."),
        ("--target-abandon", float, "Pacing abandon: the abandon rate the ratio is steered to [0.03]."),
        ("--calls-per-hour", float, "Pacing rate: dials per hour at Poisson moments [600]."),
        ("--wrapup-after", click.Choice(["answered", "every"]), "Wrap-up after answered calls only, or every call."),
        ("--files-outcome", float, "Share of connected calls whose outcome is filed within the grace window [0.85]."),
        ("--during-call", float, "Share of connected calls filed while still live (part of --files-outcome) [0.2]."),
        ("--callback-share", float, "Share of filed outcomes that are callbacks, else dispositions [0.45]."),
        ("--pushed-callbacks", float, "Share of pushed leads that arrive as callbacks due in the first 4 h [0.05]."),
        ("--grace-minutes", click.IntRange(0, 1440), "MISSED_ACTIVITY_GRACE_MINUTES of the run [10]."),
        ("--claim-retry-seconds", click.IntRange(1, 3600), "An idle agent with nothing due claims again after [30]."),
        ("--retry-pattern", str, "Run's retry_pattern, attempts per working day [4,4,3,2,1,1,1,1,1,1,1]."),
        ("--retry-seconds", click.IntRange(0, 86400), "Run's retry_seconds [3600]."),
        ("--max-tries", click.IntRange(1, 100), "Run's max_tries [20]."),
        ("--work-start", str, "Run's work_start, HH:MM [09:00]."),
        ("--work-end", str, "Run's work_end, HH:MM [18:00]."),
        ("--engine", click.Choice(["library", "http"]), "The engine calls the Python library or POSTs to /engine/."),
    ]
    for name, help_text in reversed(json_options.items()):
        command = click.option(name, callback=_json_value, help=help_text)(command)
    command = click.option("--obey-work-hours/--ignore-work-hours", "outbound_obey_work_hours", default=None,
                           help="Run's outbound_obey_work_hours [obey].")(command)
    for name, kind, help_text in reversed(plain):
        command = click.option(name, type=kind, help=help_text)(command)
    return command


@main.command()
@click.option("--scenario", "scenario_file", type=click.Path(exists=True, dir_okay=False),
              help="A TOML or JSON file of scenario fields; options given here override it.")
@_scenario_options
@click.option("--json", "json_path", type=click.Path(dir_okay=False, allow_dash=True),
              help="Write the full report as JSON to this file ('-': standard output, instead of the summary).")
@click.option("--csv", "csv_dir", type=click.Path(file_okay=False), help="Write kpis.csv, hours.csv and agents.csv here.")
@click.option("--chart", type=click.Path(dir_okay=False), help="Write a PNG of calls, contacts and agent states per hour.")
@click.option("--keep", is_flag=True, help="Keep each run's schema (named on standard error) for inspection.")
def simulate(scenario_file, json_path, csv_dir, chart, keep, **options):
    """Play a campaign on a virtual clock against the real rules, each run in its own schema.

    Each run creates a schema beside the service's database (<database>_sim_<random>), writes the
    scenario's dialer config there, pushes the leads through POST /api/leads, adds the agents, plays
    the days and drops the schema: the live floor and later runs never see it. Prints a summary
    (or JSON with --json -). README "The floor simulator" defines every option and figure.
    """
    from marshmallow import ValidationError

    from . import simulate as sim
    from .simulate import report as sim_report

    context = click.get_current_context()
    # Only the options given count: null is a value of its own (--patience-seconds null: forever).
    options = {name: value for name, value in options.items()
               if context.get_parameter_source(name) is not ParameterSource.DEFAULT}
    if "start_date" in options:
        options["start_date"] = options["start_date"].date().isoformat()
    try:
        scenario = sim.load_scenario(sim.read_file(scenario_file) if scenario_file else None, **options)
    except (ValueError, ValidationError) as exc:
        messages = exc.messages if isinstance(exc, ValidationError) else str(exc)
        raise click.UsageError(f"scenario: {json.dumps(messages, default=str)}") from None
    if scenario.replications == 1:
        click.echo("one run: the figures get no 95% interval (--replications 2 or more)", err=True)
    with click.progressbar(length=scenario.replications, label="simulating",
                           file=click.get_text_stream("stderr")) as bar:
        try:
            report = sim.replicate(current_app.config["DATABASE_URL"], scenario, keep=keep,
                                   done=lambda run: bar.update(1))
        except sim.SandboxError as exc:
            raise click.ClickException(str(exc)) from None
    if json_path:
        with click.open_file(json_path, "w") as handle:
            json.dump(report, handle, indent=1, default=str)
            handle.write("\n")
    if csv_dir:
        sim_report.write_csv(report, csv_dir)
    if chart:
        sim_report.draw_chart(report, chart)
    if json_path != "-":
        click.echo(sim_report.summary(report))
