"""`dialerapi rules ...`, `dialerapi restrictions ...` and `dialerapi leads why`: when may a
customer be called (docs/compliance/state-rules.md)."""

from datetime import datetime, time, timedelta

import click

from dialerapi.cli.base import echo_json, main, service_now, service_tz
from dialerapi.cli.leads import leads_group
from dialerapi.plumbing.db import get_db
from dialerapi.rules.compliance import calling_rules, phones, places, state_table
from dialerapi.rules.core.vocabulary import UnknownLead
from dialerapi.rules.views import lead as lead_read

WEEKDAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")


@main.group("rules")
def rules_group():
    """The shipped table of US state calling rules: hours by day of the week in the customer's local
    time, Sunday bans, barred holidays, consent. Each row is off until enabled."""


@rules_group.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print the rows as JSON.")
def rules_list(as_json):
    """Every row: on or off, its hours, holidays, consent and source."""
    rows = get_db().run(calling_rules.listing)
    if as_json:
        echo_json(rows)
        return
    for row in rows:
        hours = " ".join(f"{day}:{row['hours'][name] or 'no calls'}" for day, name in zip(WEEKDAYS, row["hours"]))
        extras = []
        if row["holidays"]:
            extras.append("no legal holidays" + (f" (but with {'/'.join(row['holiday_consent'])} consent)"
                                                  if row["holiday_consent"] else ""))
        if row["consent_for"]:
            extras.append(f"{row['consent_for']} claims need {'/'.join(row['consent_types'])} consent")
        click.echo(f"{row['name']:<11} {'on' if row['enabled'] else 'off':<4} {row['region']:<6} {hours}")
        if extras:
            click.echo(f"{'':<23}{'; '.join(extras)}")
        click.echo(f"{'':<23}{row['source']} (checked {row['checked']})")


def _switch(names, on):
    try:
        for name in names:
            get_db().run(calling_rules.set_enabled, name, on, service_now())
    except state_table.UnknownRule as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(f"{', '.join(names)} {'enabled' if on else 'disabled'}: held from the next claim on every host")


def _names(names, every):
    if every:
        return [row.name for row in state_table.RULES]
    if not names:
        raise click.UsageError("name the rows (`dialerapi rules list`), or --all")
    return list(names)


@rules_group.command("enable")
@click.argument("names", nargs=-1)
@click.option("--all", "every", is_flag=True, help="Every row of the table.")
def rules_enable(names, every):
    """Turn the rows NAMES on (us-la us-tx ...)."""
    _switch(_names(names, every), True)


@rules_group.command("disable")
@click.argument("names", nargs=-1)
@click.option("--all", "every", is_flag=True, help="Every row of the table.")
def rules_disable(names, every):
    """Turn the rows NAMES off."""
    _switch(_names(names, every), False)


@main.group("restrictions")
def restrictions_group():
    """Declared emergencies and one-off bans: no outbound claim of a lead in the region from --from
    to --to, on every host from its next claim."""


def _moment(text, region, end):
    """An aware instant from `text` (YYYY-MM-DD, or with HH:MM; or ISO 8601 with an offset), a naive
    one in the region's local time (a US state's first zone; else DB_TIMEZONE). A date alone is the
    start of that day, or with `end` the start of the next: `--to 2026-09-05` bans through the 5th."""
    try:
        parsed = datetime.fromisoformat(text.strip())
    except ValueError:
        raise click.BadParameter(f"{text!r}: give YYYY-MM-DD or YYYY-MM-DD HH:MM") from None
    if parsed.tzinfo is None:
        zones = phones.local_zones(places.zones_of(region.upper()), service_tz())
        parsed = parsed.replace(tzinfo=zones[0])
    if end and len(text.strip()) == 10:
        parsed = datetime.combine(parsed.date() + timedelta(days=1), time(0), parsed.tzinfo)
    return parsed


@restrictions_group.command("add")
@click.argument("region")
@click.option("--from", "starts", required=True, help="First moment: YYYY-MM-DD [HH:MM], the region's local time.")
@click.option("--to", "ends", required=True, help="End: YYYY-MM-DD (through that day) or YYYY-MM-DD HH:MM.")
@click.option("--note", required=True, help="Why: `state of emergency (Hurricane Ida)`.")
def restrictions_add(region, starts, ends, note):
    """Ban calls to REGION (US-LA; a country: GB, US)."""
    try:
        found = get_db().run(calling_rules.add_restriction, region, _moment(starts, region, False),
                             _moment(ends, region, True), note, service_now())
    except calling_rules.InvalidRestriction as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(f"restriction {found} added: no outbound claim of a lead in {region.upper()} while it lasts")


@restrictions_group.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print them as JSON.")
def restrictions_list(as_json):
    """Every restriction, past ones too (times in UTC)."""
    rows = get_db().run(calling_rules.restrictions)
    if as_json:
        echo_json(rows)
        return
    for row in rows:
        click.echo(f"{row['id']:>5} {row['region']:<6} {row['starts_at']:%Y-%m-%d %H:%M} - "
                   f"{row['ends_at']:%Y-%m-%d %H:%M} UTC  {row['note']}")


@restrictions_group.command("remove")
@click.argument("restriction_id", type=int)
def restrictions_remove(restriction_id):
    """Remove restriction RESTRICTION_ID (`dialerapi restrictions list` shows them)."""
    if not get_db().run(calling_rules.remove_restriction, restriction_id):
        raise click.ClickException(f"no restriction {restriction_id}")
    click.echo(f"restriction {restriction_id} removed")


@leads_group.command("why")
@click.argument("oli_id")
@click.option("--json", "as_json", is_flag=True, help="Print it as JSON.")
def leads_why(oli_id, as_json):
    """Why the lead OLI_ID is not being dialed now, and when it will be."""
    try:
        lead = get_db().run(lead_read.read_lead, oli_id, None, 1, service_tz(), service_now())["lead"]
    except UnknownLead:
        raise click.ClickException(f"no lead has oli_id {oli_id!r}") from None
    answer = {name: lead[name] for name in ("oli_id", "dial_status", "place", "consent", "callable")}
    if as_json:
        echo_json(answer)
        return
    why, place = lead["callable"], lead["place"]
    click.echo(f"{oli_id}: {lead['dial_status']}, in {', '.join(place['regions']) or 'no known region'} "
               f"(by {place['source'].replace('_', ' ')})")
    if not why["now"]:
        _echo_held("not callable now", why)
        return
    click.echo("callable now")
    if not why["predictive"]["now"]:
        _echo_held("but not by a predictive claim", why["predictive"])


def _echo_held(title, why):
    click.echo(f"{title}: {why['reason']}" + (f" ({why['note']})" if why["note"] else ""))
    if why["rule"]:
        click.echo(f"  rule {why['rule']}: {why['source']}")
    click.echo(f"  callable again at {why['next_at']} (DB_TIMEZONE)" if why["next_at"]
               else "  nothing foreseen will make it callable")
