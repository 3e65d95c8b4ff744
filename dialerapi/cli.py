"""The `dialerapi` operator command (Flask's CLI group over create_app, with jobs switched off).

    dialerapi db upgrade     apply pending migrations and add missing reference rows
    dialerapi db pending     list migrations not yet applied
    dialerapi routes         list the HTTP routes (Flask's own commands are here too)
"""

import click
from flask import current_app
from flask.cli import FlaskGroup

from . import create_app, migrate
from .config import ConfigError


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
