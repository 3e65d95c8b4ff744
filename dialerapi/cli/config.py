"""`dialerapi config show|set`: the floor settings of sales_dialer_config that an operator tunes
without SQL, each checked before it is stored (issue #37: the abandon limit and how it is counted)."""

import click
from marshmallow import Schema, ValidationError, fields
from marshmallow.validate import OneOf, Range

from dialerapi.cli.base import echo_json, main
from dialerapi.plumbing.db import get_db, queries
from dialerapi.rules import abandons, dialstate


class AbandonSettingsSchema(Schema):
    """The abandon settings and their bounds (README "Abandon rate")."""

    enforce_abandon_limit = fields.Boolean(required=True)
    abandon_limit = fields.Float(required=True, validate=Range(*abandons.LIMIT_RANGE, min_inclusive=False))
    abandon_period = fields.String(required=True, validate=OneOf(abandons.PERIODS))
    abandon_min_answered = fields.Integer(required=True, strict=False, validate=Range(min=0, max=1_000_000))
    abandon_connect_seconds = fields.Integer(required=True, validate=Range(*abandons.CONNECT_SECONDS_RANGE))


def _current(conn):
    config = dialstate.load_config(conn)
    return {name: getattr(config, name) for name in AbandonSettingsSchema().fields}


@main.group("config")
def config_group():
    """Floor settings stored in sales_dialer_config, read by every host at once."""


@config_group.command("show")
def config_show():
    """Print the abandon settings as JSON."""
    echo_json(get_db().run(_current))


@config_group.command("set")
@click.argument("settings", nargs=-1, required=True, metavar="NAME=VALUE...")
def config_set(settings):
    """Set abandon settings, all or none: abandon_limit (0 < x <= 0.2), abandon_period (24h or 30d),
    abandon_min_answered (0 or more), abandon_connect_seconds (1 to 30), enforce_abandon_limit
    (true or false). A value out of range is refused, naming the setting, and nothing is stored."""
    given = {}
    for setting in settings:
        name, sep, value = setting.partition("=")
        if not sep or name not in AbandonSettingsSchema().fields:
            raise click.BadParameter(f"{setting!r}: expected NAME=VALUE with NAME one of "
                                     f"{', '.join(AbandonSettingsSchema().fields)}", param_hint="SETTINGS")
        given[name] = value

    def store(conn):
        try:
            wanted = AbandonSettingsSchema().load({**_current(conn), **given})
        except ValidationError as exc:
            raise click.BadParameter("; ".join(f"{name}: {' '.join(messages)}" for name, messages in
                                               sorted(exc.messages.items())), param_hint="SETTINGS") from None
        queries.set_abandon_settings(conn, **wanted)
        return wanted

    echo_json(get_db().run(store))
