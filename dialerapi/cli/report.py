"""`dialerapi report abandons`: the abandon rate's compliance record over a range of days (issue #37)."""

import csv

import click

from dialerapi.cli.base import echo_json, main
from dialerapi.plumbing.db import get_db
from dialerapi.rules import abandons, dialstate

COLUMNS = ("day", "form_type", "calls", "answered", "abandoned", "late_connects", "rate")


@main.group("report")
def report_group():
    """Reports for supervisors and compliance officers."""


@report_group.command("abandons")
@click.option("--from", "first_day", type=click.DateTime(["%Y-%m-%d"]), required=True,
              help="First floor day (YYYY-MM-DD, DB_TIMEZONE).")
@click.option("--to", "last_day", type=click.DateTime(["%Y-%m-%d"]), required=True,
              help="Last floor day, included.")
@click.option("--form-type", help="One form_type (campaign) only.")
@click.option("--csv", "csv_file", type=click.File("w", encoding="utf-8"),
              help="Also write the days as CSV to this file ('-': standard output).")
@click.option("--json", "as_json", is_flag=True, help="Print the whole report as JSON.")
def report_abandons(first_day, last_day, form_type, csv_file, as_json):
    """Per floor day and form_type: calls, answered, abandoned, late connects and rate; then per
    form_type the highest rate over any legal period (abandon_period) ending inside the range, with
    its end. form_type "*" is the whole floor. docs/compliance/abandon-rate.md "Abandon rate"."""
    if last_day < first_day:
        raise click.BadParameter("--to is before --from", param_hint="--to")
    if (last_day - first_day).days > 3660:
        raise click.BadParameter("the range is over ten years", param_hint="--to")

    def read(conn):
        return abandons.report(conn, first_day, last_day, dialstate.load_config(conn), form_type)

    report = get_db().run(read)
    if csv_file is not None:
        writer = csv.DictWriter(csv_file, COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(report["days"])
    if as_json:
        echo_json(report)
        return
    if csv_file is not None and csv_file.name == "<stdout>":
        return
    click.echo(f"abandon rate {report['from']} .. {report['to']}, limit {report['limit']:.2%} per {report['period']}")
    click.echo(f"{'day':<10}  {'form_type':<24} {'calls':>8} {'answered':>9} {'abandoned':>9} {'late':>6} {'rate':>7}")
    for row in report["days"]:
        click.echo(f"{row['day']:<10}  {row['form_type']:<24} {row['calls']:>8} {row['answered']:>9} "
                   f"{row['abandoned']:>9} {row['late_connects']:>6} {row['rate']:>7.2%}")
    for row in report["highest"]:
        flag = "  OVER THE LIMIT" if row["over_limit"] else ""
        click.echo(f"highest {report['period']} rate of {row['form_type']}: {row['rate']:.2%} "
                   f"({row['abandoned']}/{row['answered']}) in the period ending {row['ends']}{flag}")
