"""`dialerapi config show|set`: the floor settings of sales_dialer_config that an operator tunes
without SQL, each checked before it is stored (the abandon limit and how it is counted;
How long a personal callback waits for its owner; the work hours, so the
tour can be tried at any hour; the answering-machine false positive share; the caller IDs'
daily cap, default pool and the headroom share /health names a pool under)."""

import click
from marshmallow import Schema, ValidationError, fields, pre_load, validates_schema
from marshmallow.validate import OneOf, Range, Regexp

from dialerapi.cli.base import echo_json, main
from dialerapi.plumbing.db import get_db, queries
from dialerapi.rules.caller_ids import numbers
from dialerapi.rules.config import dialer as dialer_config
from dialerapi.rules.config import ranges


class FloorSettingsSchema(Schema):
    """The floor settings and their bounds (docs/compliance/abandon-rate.md, docs/crm/personal-callbacks.md)."""

    enforce_abandon_limit = fields.Boolean(required=True)
    abandon_limit = fields.Float(required=True, validate=Range(*ranges.ABANDON_LIMIT_RANGE, min_inclusive=False))
    abandon_period = fields.String(required=True, validate=OneOf(ranges.ABANDON_PERIODS))
    abandon_min_answered = fields.Integer(required=True, strict=False, validate=Range(min=0, max=1_000_000))
    abandon_connect_seconds = fields.Integer(required=True, validate=Range(*ranges.ABANDON_CONNECT_SECONDS_RANGE))
    personal_callback_fallback_minutes = fields.Integer(required=True, allow_none=True,
                                                        validate=Range(*ranges.FALLBACK_MINUTES_RANGE))
    # The work window (decisions.md D1), wall-clock in DB_TIMEZONE; it may cross midnight.
    work_start = fields.Time(required=True)
    work_end = fields.Time(required=True)
    # The share of answering-machine outcomes taken to be live people (Ofcom).
    amd_false_positive_share = fields.Float(required=True, validate=Range(0, 1))
    # Caller IDs (docs/operations/caller-ids.md): the calls a number without a cap of its own may
    # present a day, the pool of a campaign that names none, and the share of a pool's headroom
    # under which /health names it.
    caller_id_daily_cap = fields.Integer(required=True, validate=Range(1, numbers.MAX_DAILY_CAP))
    caller_id_default_pool = fields.String(required=True, validate=Regexp(ranges.CALLER_ID_POOL))
    caller_id_headroom_share = fields.Float(required=True, validate=Range(0, 1))

    @validates_schema
    def a_window_that_opens(self, data, **kwargs):
        if data.get("work_start") is not None and data.get("work_start") == data.get("work_end"):
            raise ValidationError("must differ from work_start: an empty window never opens", "work_end")

    @pre_load
    def empty_is_never(self, data, **kwargs):
        # `personal_callback_fallback_minutes=` (empty): a personal callback never falls back.
        if data.get("personal_callback_fallback_minutes") == "":
            data = {**data, "personal_callback_fallback_minutes": None}
        return data


def _current(conn):
    config = dialer_config.load_config(conn)
    schema = FloorSettingsSchema()
    return schema.dump({name: getattr(config, name) for name in schema.fields})


@main.group("config")
def config_group():
    """Floor settings stored in sales_dialer_config, read by every host at once."""


@config_group.command("show")
def config_show():
    """Print the floor settings as JSON."""
    echo_json(get_db().run(_current))


@config_group.command("set")
@click.argument("settings", nargs=-1, required=True, metavar="NAME=VALUE...")
def config_set(settings):
    """Set floor settings, all or none: abandon_limit (0 < x <= 0.2), abandon_period (24h or 30d),
    abandon_min_answered (0 or more), abandon_connect_seconds (1 to 30), enforce_abandon_limit
    (true or false), personal_callback_fallback_minutes (0 to 10080; empty: never), work_start and
    work_end (HH:MM[:SS], wall-clock in DB_TIMEZONE; the window may cross midnight),
    amd_false_positive_share (0 to 1: the share of `machine` outcomes counted as live answers
    abandoned, docs/compliance/abandon-rate.md), caller_id_daily_cap (1 to 10000 calls a number
    presents a day), caller_id_default_pool (a pool's name), caller_id_headroom_share (0 to 1;
    docs/operations/caller-ids.md). A value out of range is refused, naming the setting, and
    nothing is stored."""
    given = {}
    for setting in settings:
        name, sep, value = setting.partition("=")
        if not sep or name not in FloorSettingsSchema().fields:
            raise click.BadParameter(f"{setting!r}: expected NAME=VALUE with NAME one of "
                                     f"{', '.join(FloorSettingsSchema().fields)}", param_hint="SETTINGS")
        given[name] = value

    def store(conn):
        try:
            wanted = FloorSettingsSchema().load({**_current(conn), **given})
        except ValidationError as exc:
            raise click.BadParameter("; ".join(f"{name}: {' '.join(messages)}" for name, messages in
                                               sorted(exc.messages.items())), param_hint="SETTINGS") from None
        queries.set_floor_settings(conn, **wanted)
        return FloorSettingsSchema().dump(wanted)

    echo_json(get_db().run(store))
