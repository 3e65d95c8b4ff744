"""`dialerapi dnc ...`: the do-not-call list."""

import sys

import click

from dialerapi.cli.base import main, service_now
from dialerapi.plumbing.clock import format_wall_clock
from dialerapi.plumbing.db import get_db
from dialerapi.rules.compliance import claim_checks, do_not_call, phones
from dialerapi.rules.config import dialer as dialer_config


@main.group("dnc")
def dnc_group():
    """The do-not-call list: numbers no claim hands out, in any mode, under any oli_id.

    Numbers are stored in E.164 (+919876543210); a national number is read with --region, by
    default sales_dialer_config.phone_default_region.
    """


def _region(region):
    return (region or get_db().run(dialer_config.load_config).phone_default_region).upper()


def _parse(texts, region):
    try:
        return do_not_call.parse_numbers(texts, region)
    except phones.InvalidNumber as exc:
        raise click.ClickException(f"{exc} is not a phone number (region {region})") from None


_REGION = click.option("--region", help="ISO 3166 code that reads national numbers (default: the floor's).")


@dnc_group.command("add")
@click.argument("numbers", nargs=-1, required=True)
@_REGION
@click.option("--source", default="cli", show_default=True, help="Who listed them (32 characters).")
def dnc_add(numbers, region, source):
    """List NUMBERS; every lead with one of them is never claimed again."""
    listed = _parse(numbers, _region(region))
    added = get_db().run(do_not_call.add, listed, source, service_now())
    click.echo(f"listed {added} new of {len(set(listed))}")


@dnc_group.command("remove")
@click.argument("numbers", nargs=-1, required=True)
@_REGION
def dnc_remove(numbers, region):
    """Take NUMBERS off the list; their leads may be claimed again."""
    removed = get_db().run(do_not_call.remove, _parse(numbers, _region(region)), service_now())
    click.echo(f"removed {removed}")


@dnc_group.command("import")
@click.argument("file", type=click.File("r", encoding="utf-8", errors="strict"))
@_REGION
@click.option("--source", default="registry", show_default=True, help="Who listed them (32 characters).")
def dnc_import(file, region, source):
    """List every number of FILE (one a line; '-' for standard input), all or nothing.

    A registry's file of tens of millions of numbers is read a batch at a time (memory stays
    flat) with progress on standard error; a line that is no number stops the import with its line
    number and lists nothing. Blank lines and lines starting with '#' are passed over; a line's
    digits are the number (`212,5550100` is 2125550100), a line starting with '+' is read as it is.
    """
    region = _region(region)

    def progress(lines):
        click.echo(f"read {lines:,} lines", err=True)

    def work(conn):
        # Database.run runs the work again after a deadlock: the file is read again from its start.
        if file.seekable():
            file.seek(0)
        elif getattr(work, "started", False):
            raise click.ClickException("the import met a conflict and standard input cannot be read twice: "
                                       "import from a file")
        work.started = True
        return do_not_call.import_lines(conn, do_not_call.bounded_lines(file), region, source, service_now(), progress)

    try:
        result = get_db().run(work)
    except do_not_call.InvalidLine as exc:
        raise click.ClickException(f"{file.name}: {exc}; nothing was listed") from None
    click.echo(f"{file.name}: {result['lines']:,} lines, {result['numbers']:,} numbers, {result['added']:,} newly listed")


@dnc_group.command("export")
@click.option("--with-source", is_flag=True, help="Also the source, oli_id and added_at (tab-separated).")
def dnc_export(with_source):
    """Write the list to standard output, one E.164 number a line, in number order."""
    def rows(conn):
        for row in do_not_call.pages(conn):
            line = phones.format_e164(row["phone"])
            if with_source:
                line += f"\t{row['source']}\t{row['oli_id'] or ''}\t{format_wall_clock(row['added_at'])}"
            sys.stdout.write(line + "\n")

    get_db().run(rows)


@dnc_group.command("count")
def dnc_count():
    """How many numbers are listed."""
    click.echo(get_db().run(do_not_call.count))


@dnc_group.command("backfill")
def dnc_backfill():
    """Work out the phone facts of every lead no push worked them out for.

    Leads written before migration 0012 (the upgrade) or by an engine's own SQL carry no E.164
    number, mark or call zone: every claim checks such a lead itself, but the claim indexes cannot
    leave it out while it is listed or asleep. The service's job does a batch every 10 s; this does
    them all now, a batch per transaction, with progress on standard error. Live leads wait.
    """
    def batch(conn):
        return claim_checks.work_out_leads(conn, dialer_config.load_config(conn))

    total = 0
    while done := get_db().run(batch):
        total += done
        click.echo(f"worked out {total:,} leads", err=True)
    click.echo(f"{total:,} leads worked out")
