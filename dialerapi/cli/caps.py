"""`dialerapi caps ...` and `dialerapi retries ...`: contact caps per phone number and retries per
outcome (docs/compliance/contact-caps.md)."""

import click

from dialerapi.cli.base import echo_json, main
from dialerapi.plumbing.db import get_db
from dialerapi.rules.compliance import contact_caps
from dialerapi.rules.leads import outcome_retries


@main.group("caps")
def caps_group():
    """Contact caps: at most N dial attempts to one phone number in a rolling window, across every
    lead with that number. Off until enabled; the shipped presets are florida-oklahoma-3-per-24h
    and reg-f-7-in-7."""


HOW_REGIONS_ARE_FOUND = (
    "A number's country is the one of its E.164 form; a US state (US-FL) is the one of its area code, from "
    "phonenumbers' geocoding data (every entry of the code; a code in two states counts for both).")


@caps_group.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print the caps as JSON.")
def caps_list(as_json):
    """Every cap: on or off, its limit, regions, form_type, the consent it leaves out, and source."""
    caps = get_db().run(contact_caps.listing)
    if as_json:
        echo_json(caps)
        return
    click.echo(f"{'name':<30} {'state':<4} {'limit':>10}  {'region':<14} {'form_type':<16} {'consent':<9} source")
    for cap in caps:
        limit = f"{cap['max_attempts']}/{cap['per']}"
        consent = f"{cap['consent_days']}d out" if cap["consent_days"] else "counted"
        click.echo(f"{cap['name']:<30} {'on' if cap['enabled'] else 'off':<4} {limit:>10}  "
                   f"{cap['region'] or 'all':<14} {cap['form_type'] or 'all':<16} {consent:<9} {cap['source'] or ''}")
    click.echo(HOW_REGIONS_ARE_FOUND)


def _switch(name, on):
    try:
        get_db().run(contact_caps.set_enabled, name, on)
    except contact_caps.UnknownCap:
        raise click.ClickException(f"no cap is named {name!r}: `dialerapi caps list` shows them") from None
    click.echo(f"{name} {'enabled' if on else 'disabled'}")


@caps_group.command("enable")
@click.argument("name")
def caps_enable(name):
    """Turn the cap NAME on: every claim from now on holds it."""
    _switch(name, True)


@caps_group.command("disable")
@click.argument("name")
def caps_disable(name):
    """Turn the cap NAME off."""
    _switch(name, False)


@caps_group.command("add")
@click.argument("name")
@click.option("--max", "max_attempts", type=int, required=True, help="Dial attempts allowed in the window.")
@click.option("--per", required=True, help="The rolling window: 24h, 7d, 90m (at most 31d).")
@click.option("--region", help="Only numbers of these regions, comma-separated: US-FL, US-OK, GB.")
@click.option("--form-type", help="Only leads of this form_type, counting their attempts only.")
@click.option("--consent-days", type=int, help="Leave out calls made within this many days after the lead's "
              "written or express consent (Regulation F: 7).")
@click.option("--enable", is_flag=True, help="Turn it on at once.")
def caps_add(name, max_attempts, per, region, form_type, consent_days, enable):
    """Add the cap NAME (off unless --enable)."""
    def store(conn):
        contact_caps.add(conn, name, max_attempts, per, region, form_type, consent_days)
        if enable:
            contact_caps.set_enabled(conn, name, True)

    try:
        get_db().run(store)
    except contact_caps.InvalidCap as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(f"{name} added, {'enabled' if enable else 'off: `dialerapi caps enable ' + name + '`'}")


@caps_group.command("remove")
@click.argument("name")
def caps_remove(name):
    """Remove the cap NAME (a preset can only be disabled)."""
    try:
        get_db().run(contact_caps.remove, name)
    except (contact_caps.UnknownCap, contact_caps.InvalidCap) as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(f"{name} removed")


@main.group("retries")
def retries_group():
    """Retries per outcome: a delay and a maximum of attempts of their own for busy, no_answer,
    congestion, machine and abandoned. An outcome with none follows the specification's rule."""


@retries_group.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print the rules as JSON.")
def retries_list(as_json):
    """Each outcome's rule, or the specification's."""
    rules = get_db().run(outcome_retries.listing)
    if as_json:
        echo_json(rules)
        return
    for rule in rules:
        delay = contact_caps.describe_window(rule["delay_seconds"]) if rule["delay_seconds"] else "spec"
        most = rule["max_attempts"] if rule["max_attempts"] else "max_tries"
        click.echo(f"{rule['outcome']:<11} delay {delay:<6} max {most}")


@retries_group.command("set")
@click.argument("outcome", type=click.Choice(outcome_retries.OUTCOMES))
@click.option("--delay", help="Retry this long after the outcome: 120s, 15m, 2h (at most 31d); "
                              "outside the work window, at the next work_start.")
@click.option("--max", "max_attempts", type=int, help="Dispose the lead after this many attempts with this outcome.")
def retries_set(outcome, delay, max_attempts):
    """Give OUTCOME a delay, a maximum, or both."""
    try:
        get_db().run(outcome_retries.set_rule, outcome, delay, max_attempts)
    except outcome_retries.InvalidRule as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(f"{outcome}: delay {delay or 'spec'}, max {max_attempts or 'max_tries'}")


@retries_group.command("reset")
@click.argument("outcome", type=click.Choice(outcome_retries.OUTCOMES))
def retries_reset(outcome):
    """Back to the specification's rule for OUTCOME."""
    get_db().run(outcome_retries.reset, outcome)
    click.echo(f"{outcome}: the specification's rule")
