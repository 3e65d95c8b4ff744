"""`dialerapi campaigns list|show|set|pause|resume`: each campaign's (form_type's) calendar,
rulebook and switch, with the validation the CRM's PATCH /api/campaigns/{form_type} uses
(rules.config.campaign_settings). Changes are kept with the credential `cli` and told as campaign.* events.
"""

import json

import click

from dialerapi.cli.base import CHANGED_BY, echo_json, main, service_now, service_tz
from dialerapi.plumbing.db import get_db
from dialerapi.rules.campaigns import operations
from dialerapi.rules.config import campaign_settings
from dialerapi.rules.config import dialer as dialer_config



@main.group("campaigns")
def campaigns_group():
    """Campaigns: each form_type's own calendar, rules and state over the floor's settings."""


@campaigns_group.command("list")
def campaigns_list():
    """One line per campaign: form_type, state, open now or why closed (and until when), what it overrides."""
    now, tz = service_now(), service_tz()

    def read(conn):
        config = dialer_config.load_config(conn)
        return [operations.view(config, form_type, now, tz) for form_type in operations.form_types(conn, config)]

    for item in get_db().run(read):
        shown = "open" if item["open"] else f"closed: {item['closed_reason']}" + (
            f" until {item['next_open_at']}" if item["next_open_at"] else "")
        click.echo(f"{item['form_type']}  [{item['state']}]  {shown}  settings: "
                   f"{', '.join(sorted(item['settings'])) or 'the floor'}")


@campaigns_group.command("show")
@click.argument("form_type")
def campaigns_show(form_type):
    """A campaign as JSON: state, open now, settings it overrides, every effective setting, its history."""
    now, tz = service_now(), service_tz()

    def read(conn):
        config = dialer_config.load_config(conn)
        operations.require_known(conn, config, form_type)
        return {**operations.view(config, form_type, now, tz), "history": operations.history(conn, form_type)}

    echo_json(_run(read))


@campaigns_group.command("set")
@click.argument("form_type")
@click.argument("settings", nargs=-1, required=True, metavar="NAME=VALUE...")
def campaigns_set(form_type, settings):
    """Set a campaign's settings, all or none. VALUE is JSON when it reads as JSON (30, true,
    [4,4,2], {"mon": ["09:00-21:00"]}), else text (24h, 09:00, 2026-12-01); `NAME=` alone goes back
    to the floor's value; `state=paused|active|ended` sets its state. A wrong value is refused,
    naming the setting, and nothing is stored (docs/operations/campaigns.md lists every setting)."""
    patch = {}
    for setting in settings:
        name, sep, value = setting.partition("=")
        if not sep or not name:
            raise click.BadParameter(f"{setting!r}: expected NAME=VALUE", param_hint="SETTINGS")
        patch[name] = _value(value)
    stored = _run(lambda conn: operations.update(conn, form_type, patch, service_now(), CHANGED_BY))
    echo_json({"form_type": form_type, **stored})


@campaigns_group.command("pause")
@click.argument("form_type")
def campaigns_pause(form_type):
    """Pause a campaign: no new claim of its leads (live calls, settles, held actions go on)."""
    before, after = _run(lambda conn: operations.pause(conn, form_type, service_now(), CHANGED_BY))
    click.echo(f"{form_type}: {before} -> {after}")


@campaigns_group.command("resume")
@click.argument("form_type")
def campaigns_resume(form_type):
    """Resume a paused or ended campaign: its leads are claimed again."""
    before, after = _run(lambda conn: operations.resume(conn, form_type, service_now(), CHANGED_BY))
    click.echo(f"{form_type}: {before} -> {after}")


def _value(text):
    if text == "":
        return None
    try:
        return json.loads(text)
    except ValueError:
        return text


def _run(work):
    try:
        return get_db().run(work)
    except campaign_settings.InvalidSettings as exc:
        raise click.BadParameter(str(exc), param_hint="SETTINGS") from None
    except operations.UnknownCampaign as exc:
        raise click.ClickException(f"no agent skill and no campaign is {exc.args[0]!r}: "
                                   "`dialerapi campaigns set` creates one") from None
