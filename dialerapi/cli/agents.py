"""`dialerapi agents ...`: the agent roster, availability and panel tokens."""

import csv

import click
from flask import current_app

from dialerapi.cli.base import echo_json, main, service_now
from dialerapi.plumbing import clock
from dialerapi.plumbing.db import get_db, queries
from dialerapi.rules.agents import roster as agents
from dialerapi.rules.core import vocabulary
from dialerapi.web import agent_tokens


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
    except vocabulary.UnknownAgent:
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
        echo_json(roster)
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
        get_db().run(agents.remove_agent, agent_id, service_now())
    except vocabulary.UnknownAgent:
        raise click.ClickException(f"no agent has id {agent_id}") from None
    click.echo(f"removed agent {agent_id}")


@agents_group.command("token")
@click.argument("agent_id", type=int)
@click.option("--lifetime", type=click.IntRange(min=1), default=None,
              help="Seconds the token is valid (default AGENT_TOKEN_SECONDS, at most AGENT_TOKEN_MAX_SECONDS).")
@click.option("--json", "as_json", is_flag=True, help="Print {agent_id, token, expires_at} as JSON.")
def agents_token(agent_id, lifetime, as_json):
    """Mint a token for agent AGENT_ID's panel: it opens that agent's /ws and missed activities only.
    Prints the token (and its expiry, UTC, on stderr)."""
    config = current_app.config
    if lifetime is not None and lifetime > config["AGENT_TOKEN_MAX_SECONDS"]:
        raise click.BadParameter(f"at most {config['AGENT_TOKEN_MAX_SECONDS']} seconds (AGENT_TOKEN_MAX_SECONDS)",
                                 param_hint="--lifetime")
    try:
        agent = get_db().run(agents.find_agent, agent_id=agent_id)
    except vocabulary.UnknownAgent:
        raise click.ClickException(f"no agent has id {agent_id}") from None
    token, expires_at = agent_tokens.mint(config, agent["id"], lifetime)
    if as_json:
        echo_json({"agent_id": agent["id"], "token": token, "expires_at": clock.format_utc(expires_at)})
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


@agents_group.command("state")
@click.argument("agent_id", type=int)
@click.option("--panel/--no-panel", "panel_active", default=None, help="The agent panel is connected.")
@click.option("--ami-idle/--ami-busy", "ami_idle", default=None, help="The agent's phone is idle in Asterisk.")
@click.option("--wrapup-seconds", type=click.IntRange(0, 86400), default=0, show_default=True,
              help="The agent is in wrap-up for this many seconds from now (0: not in wrap-up).")
def agents_state(agent_id, panel_active, ami_idle, wrapup_seconds):
    """Record what the engine knows of AGENT_ID: panel, AMI state and wrap-up (used by the claim)."""
    get_db().run(agents.set_availability, agent_id, panel_active=panel_active, ami_idle=ami_idle,
                 wrapup_until=agents.wrapup_until(wrapup_seconds, service_now(), current_app.config["DB_TIMEZONE"]))
    click.echo(f"agent {agent_id}: state recorded")
