"""`dialerapi db ...`: the schema's migrations (yoyo) and reference rows."""

import click
from flask import current_app

from dialerapi.cli.base import main
from dialerapi.plumbing import migrate


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
