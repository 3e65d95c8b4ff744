"""The `dialerapi` command group and what its commands share: the app (jobs off), now, JSON output."""

import json
import logging
import os
import subprocess
from datetime import datetime
from pathlib import Path

import click
from dotenv import dotenv_values, find_dotenv
from flask import current_app
from flask.cli import FlaskGroup

from dialerapi import create_app
from dialerapi.plumbing import clock, release
from dialerapi.plumbing.clock import format_wall_clock
from dialerapi.plumbing.config import ConfigError

log = logging.getLogger("dialerapi.cli")


# scripts/devdb.sh of the checkout this package runs from (an editable install, as `make` makes).
DEVDB = Path(__file__).resolve().parents[2] / "scripts" / "devdb.sh"


def private_database():
    """{"DATABASE_URL": URL} of the private MariaDB `make run` leaves running, when neither the
    environment nor .env sets DATABASE_URL and this is a checkout whose scripts/devdb.sh says it is
    running (honouring DEVDB_DIR, DEVDB_PORT and DEVDB_NAME, as `make run` does); {} otherwise,
    and the setting's own error stands."""
    if os.environ.get("DATABASE_URL") or dotenv_values(find_dotenv(usecwd=True)).get("DATABASE_URL"):
        return {}
    if not DEVDB.is_file():
        return {}
    found = subprocess.run([str(DEVDB), "url", "--running"], capture_output=True, text=True, timeout=30)
    return {"DATABASE_URL": found.stdout.strip()} if found.returncode == 0 and found.stdout.strip() else {}


def create_cli_app():
    """The app of a command: jobs off; the private database of `make run` when no DATABASE_URL is set."""
    try:
        return create_app({"JOBS_ENABLED": False, **private_database()})
    except ConfigError as exc:
        hint = ""
        if "DATABASE_URL is required" in str(exc) and DEVDB.is_file():
            hint = " (or start the private database of `make run`: make db-start)"
        raise click.ClickException(f"{exc}{hint}") from None


# Flask's own --version names Flask's version; this one names this release's and the schema it
# expects (plumbing.release), what an operator compares with /health's before an upgrade.
@click.group(cls=FlaskGroup, create_app=create_cli_app, add_version_option=False)
@click.version_option(release.VERSION, "--version", prog_name="dialerapi",
                      message=f"%(prog)s %(version)s (schema {release.migrations()[-1]})")
def main():
    """Operator commands of the dialerapi lead-intake service.

    Settings come from the environment and a .env file in the working directory
    (DATABASE_URL, WS_SECRET, ...; docs: Reference, Settings). Without DATABASE_URL, a checkout's
    command uses the private database `make run` leaves running.
    """


# The credential the commands' changes are kept and told with (a campaign's, a caller ID's history).
CHANGED_BY = "cli"


def service_now():
    """The service clock's wall-clock reading in DB_TIMEZONE (decisions.md D2)."""
    return clock.now(current_app.config["DB_TIMEZONE"])


def service_tz():
    """DB_TIMEZONE, the zone of service_now()."""
    return current_app.config["DB_TIMEZONE"]


def echo_json(value):
    click.echo(json.dumps(value, default=_json_default, ensure_ascii=False, indent=2))


def _json_default(value):
    if isinstance(value, datetime):
        return format_wall_clock(value)
    raise TypeError(f"{type(value).__name__} is not JSON serializable")
