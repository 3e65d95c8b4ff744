"""`dialerapi report abandons`: the abandon rate's compliance record over a range of days;
`dialerapi report agents`: the agent time report; `dialerapi report board-token`: a
supervisor token for the board."""

import csv

import click
from flask import current_app

from dialerapi.cli.base import echo_json, main, service_now
from dialerapi.plumbing import clock
from dialerapi.plumbing.db import get_db
from dialerapi.rules.agents import state_history
from dialerapi.rules.compliance import abandons, contact_caps
from dialerapi.rules.config import dialer as dialer_config
from dialerapi.web import agent_tokens

COLUMNS = ("day", "form_type", "calls", "answered", "abandoned", "late_connects", "machines", "rate")


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
    form_type the highest rate over any legal period of its campaign's rule (abandon_period, its
    limit) ending inside the range, with its end. form_type "*" is the whole floor, under the floor's
    rule. docs/compliance/abandon-rate.md "Abandon rate"; docs/operations/campaigns.md."""
    if last_day < first_day:
        raise click.BadParameter("--to is before --from", param_hint="--to")
    if (last_day - first_day).days > 3660:
        raise click.BadParameter("the range is over ten years", param_hint="--to")

    def read(conn):
        return abandons.report(conn, first_day, last_day, dialer_config.load_config(conn), form_type)

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
        click.echo(f"highest {row['period']} rate of {row['form_type']}: {row['rate']:.2%} "
                   f"({row['abandoned']}/{row['answered']}, limit {row['limit']:.2%}) in the period ending {row['ends']}{flag}")


def _hms(seconds):
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


@report_group.command("agents")
@click.option("--from", "first_day", type=click.DateTime(["%Y-%m-%d"]), required=True,
              help="First day (YYYY-MM-DD, DB_TIMEZONE).")
@click.option("--to", "last_day", type=click.DateTime(["%Y-%m-%d"]), required=True,
              help="Last day, included (at most 92 days after --from).")
@click.option("--agent-id", type=int, help="One agent only.")
@click.option("--csv", "csv_file", type=click.File("w", encoding="utf-8"),
              help="Also write the rows per agent and day as CSV to this file ('-': standard output); "
                   "`pause` is code=seconds pairs joined by ';'.")
@click.option("--json", "as_json", is_flag=True, help="Print the whole report as JSON.")
def report_agents(first_day, last_day, agent_id, csv_file, as_json):
    """Per agent and day: login (panel open) time, free, talk, wrap-up, blocked and pause time (by
    code), calls and answered calls, from the agent state history; then the totals per agent. Login
    time is the sum of the others. Seconds in --json and --csv, H:MM:SS here. docs/supervisors/reports.md."""
    tz = current_app.config["DB_TIMEZONE"]
    try:
        report = get_db().run(state_history.report, first_day.date(), last_day.date(), service_now(), tz,
                              None if agent_id is None else [agent_id])
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--to") from None
    if csv_file is not None:
        writer = csv.DictWriter(csv_file, state_history.REPORT_COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows({**row, "pause": ";".join(f"{code}={seconds}" for code, seconds in sorted(row["pause"].items()))}
                         for row in report["days"])
    if as_json:
        echo_json(report)
        return
    if csv_file is not None and csv_file.name == "<stdout>":
        return
    click.echo(f"agent time {report['from']} .. {report['to']} ({report['timezone']})")
    click.echo(f"{'agent':>8} {'day':<10}  {'login':>9} {'free':>9} {'talk':>9} {'wrap-up':>9} {'blocked':>9} "
               f"{'paused':>9} {'calls':>6} {'answered':>8}  pause by code")
    for row in report["days"] + [{**row, "day": "total"} for row in report["agents"]]:
        pauses = ", ".join(f"{code} {_hms(seconds)}" for code, seconds in sorted(row["pause"].items()))
        click.echo(f"{row['agent_id']:>8} {row['day']:<10}  {_hms(row['login_seconds']):>9} {_hms(row['free_seconds']):>9} "
                   f"{_hms(row['talk_seconds']):>9} {_hms(row['wrap_up_seconds']):>9} {_hms(row['blocked_seconds']):>9} "
                   f"{_hms(row['pause_seconds']):>9} {row['calls']:>6} {row['answered_calls']:>8}  {pauses}")


@report_group.command("board-token")
@click.argument("name")
@click.option("--lifetime", type=click.IntRange(min=1), default=None,
              help="Seconds the token is valid (default AGENT_TOKEN_SECONDS, at most AGENT_TOKEN_MAX_SECONDS).")
@click.option("--json", "as_json", is_flag=True, help="Print {supervisor, token, expires_at} as JSON.")
def report_board_token(name, lifetime, as_json):
    """Mint a supervisor token for NAME: it opens the board (/board/#token=...), its socket
    and the agent report, nothing that writes. Prints the token (and its expiry, UTC, on stderr)."""
    config = current_app.config
    if lifetime is not None and lifetime > config["AGENT_TOKEN_MAX_SECONDS"]:
        raise click.BadParameter(f"at most {config['AGENT_TOKEN_MAX_SECONDS']} seconds (AGENT_TOKEN_MAX_SECONDS)",
                                 param_hint="--lifetime")
    if not 1 <= len(name) <= 64 or not name.isprintable():
        raise click.BadParameter("1 to 64 printable characters", param_hint="NAME")
    token, expires_at = agent_tokens.mint_supervisor(config, name, lifetime)
    if as_json:
        echo_json({"supervisor": name, "token": token, "expires_at": clock.format_utc(expires_at)})
        return
    click.echo(token)
    click.echo(f"expires {clock.format_utc(expires_at)}", err=True)


CAP_COLUMNS = ("day", "cap", "form_type", "numbers", "leads_held")


@report_group.command("caps")
@click.option("--from", "first_day", type=click.DateTime(["%Y-%m-%d"]), required=True,
              help="First floor day (YYYY-MM-DD, DB_TIMEZONE).")
@click.option("--to", "last_day", type=click.DateTime(["%Y-%m-%d"]), required=True,
              help="Last floor day, included.")
@click.option("--csv", "as_csv", is_flag=True, help="Print CSV.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def report_caps(first_day, last_day, as_csv, as_json):
    """Per floor day, contact cap and form_type: the phone numbers that reached the cap, and how
    many times a claim held one of their leads for it (docs/compliance/contact-caps.md)."""
    if last_day < first_day:
        raise click.BadParameter("--to is before --from", param_hint="--to")
    rows = [{**row, "day": f"{row['day']:%Y-%m-%d}"}
            for row in get_db().run(contact_caps.report, first_day.date(), last_day.date())]
    if as_json:
        echo_json(rows)
    elif as_csv:
        writer = csv.DictWriter(click.get_text_stream("stdout"), CAP_COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    else:
        click.echo(f"{'day':<10}  {'cap':<30} {'form_type':<24} {'numbers':>8} {'held':>8}")
        for row in rows:
            click.echo(f"{row['day']:<10}  {row['cap']:<30} {row['form_type']:<24} {row['numbers']:>8} "
                       f"{row['leads_held']:>8}")
