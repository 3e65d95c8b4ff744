"""The `dialerapi` command group and what its commands share: the app (jobs off), now, JSON output."""

import json
import logging
from datetime import datetime

import click
from flask import current_app
from flask.cli import FlaskGroup

from dialerapi import create_app
from dialerapi.plumbing import clock
from dialerapi.plumbing.clock import format_wall_clock
from dialerapi.plumbing.config import ConfigError

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
