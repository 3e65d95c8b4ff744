"""`dialerapi simulate`: a campaign played on a virtual clock in its own schema (docs/simulator.md)."""

import itertools
import json
import os

import click
from click.core import ParameterSource
from flask import current_app

from dialerapi.cli.base import main


def _json_value(ctx, param, value):
    """A JSON option's value; a plain word (`--skills all`) stays a string for ScenarioSchema to judge."""
    if value is None:
        return None
    try:
        return json.loads(value)
    except json.JSONDecodeError:
        return value


def _scenario_options(command):
    """The scenario fields as options; each overrides the --scenario file (docs/simulator.md "The floor simulator")."""
    json_options = {
        "--outcomes": "Outcome weights, JSON: {\"answered\": 35, \"no_answer\": 33, ...}.",
        "--ring-seconds": "Ring time, JSON: 20, [8, 30] or {\"exponential\": 20}.",
        "--talk-seconds": "Talk time of an answered call (same forms).",
        "--wrapup-seconds": "Wrap-up time (same forms).",
        "--patience-seconds": "Predictive: how long an answered customer waits for an agent (same forms; null: forever).",
        "--late-filing-minutes": "How long after the grace window a forgetful agent files (same forms).",
        "--callback-in-minutes": "How far ahead a filed callback is scheduled (same forms).",
        "--form-types": "Lead mix, JSON weights: {\"home_loan\": 2, \"credit_card\": 1}.",
        "--skills": "\"all\" (default) or JSON {form_type: number of agents with that skill}.",
    }
    plain = [
        ("--agents", click.IntRange(1, 1000), "Agents on the floor [50]."),
        ("--leads", click.IntRange(1, 200000), "Leads pushed before the first day [5000]."),
        ("--days", click.IntRange(1, 60), "Working days to play [1]."),
        ("--hours", click.FloatRange(0.1, 24), "Hours the floor works each day, from work_start [the work window]."),
        ("--start-date", click.DateTime(["%Y-%m-%d"]), "The first day [2026-01-05], so a run does not depend on today."),
        ("--seed", int, "Random seed of the first run [1]; replication k uses seed + k."),
        ("--replications", click.IntRange(1, 200), "Runs of the scenario, seeds seed, seed+1, ...; each figure gets "
                                                    "a 95% interval from 2 runs [3]."),
        ("--mode", click.Choice(["progressive", "predictive"]), "How the engine dials [progressive]."),
        ("--pacing", click.Choice(["ratio", "abandon", "rate"]), "Predictive pacing rule [ratio]."),
        ("--dial-ratio", float, "Pacing ratio: customers ringing or waiting per free agent [1.5]."),
        ("--target-abandon", float, "Pacing abandon: the abandon rate the ratio is steered to [0.03]."),
        ("--calls-per-hour", float, "Pacing rate: dials per hour at Poisson moments [600]."),
        ("--wrapup-after", click.Choice(["answered", "every"]), "Wrap-up after answered calls only, or every call."),
        ("--files-outcome", float, "Share of connected calls whose outcome is filed within the grace window [0.85]."),
        ("--during-call", float, "Share of connected calls filed while still live (part of --files-outcome) [0.2]."),
        ("--callback-share", float, "Share of filed outcomes that are callbacks, else dispositions [0.45]."),
        ("--pushed-callbacks", float, "Share of pushed leads that arrive as callbacks due in the first 4 h [0.05]."),
        ("--grace-minutes", click.IntRange(0, 1440), "MISSED_ACTIVITY_GRACE_MINUTES of the run [10]."),
        ("--claim-retry-seconds", click.IntRange(1, 3600), "An idle agent with nothing due claims again after [30]."),
        ("--retry-pattern", str, "Run's retry_pattern, attempts per working day [4,4,3,2,1,1,1,1,1,1,1]."),
        ("--retry-seconds", click.IntRange(0, 86400), "Run's retry_seconds [3600]."),
        ("--max-tries", click.IntRange(1, 100), "Run's max_tries [20]."),
        ("--work-start", str, "Run's work_start, HH:MM [09:00]."),
        ("--work-end", str, "Run's work_end, HH:MM [18:00]."),
        ("--engine", click.Choice(["library", "http"]), "The engine calls the Python library or POSTs to /engine/."),
    ]
    for name, help_text in reversed(json_options.items()):
        command = click.option(name, callback=_json_value, help=help_text)(command)
    command = click.option("--obey-work-hours/--ignore-work-hours", "outbound_obey_work_hours", default=None,
                           help="Run's outbound_obey_work_hours [obey].")(command)
    for name, kind, help_text in reversed(plain):
        command = click.option(name, type=kind, help=help_text)(command)
    return command


@main.command()
@click.option("--scenario", "scenario_file", type=click.Path(exists=True, dir_okay=False),
              help="A TOML or JSON file of scenario fields; options given here override it.")
@_scenario_options
@click.option("--json", "json_path", type=click.Path(dir_okay=False, allow_dash=True),
              help="Write the full report as JSON to this file ('-': standard output, instead of the summary).")
@click.option("--csv", "csv_dir", type=click.Path(file_okay=False), help="Write abandons.csv (predictive), kpis.csv, hours.csv and agents.csv here.")
@click.option("--chart", type=click.Path(dir_okay=False), help="Write a PNG of the law's abandon rate per day (predictive), calls, contacts and agent states per hour.")
@click.option("--keep", is_flag=True, help="Keep each run's schema (named on standard error) for inspection.")
@click.option("--jobs", type=click.IntRange(1, 64), default=os.cpu_count() or 1, show_default="one per core",
              help="Runs played at once, each in a process and a schema of its own; the same figures as one "
                   "after another.")
def simulate(scenario_file, json_path, csv_dir, chart, keep, jobs, **options):
    """Play a campaign on a virtual clock against the real rules, each run in its own schema.

    Each run creates a schema beside the service's database (<database>_sim_<random>), writes the
    scenario's dialer config there, pushes the leads through POST /api/leads, adds the agents, plays
    the days and drops the schema: the live floor and later runs never see it. Prints a summary
    (or JSON with --json -). docs/simulator.md "The floor simulator" defines every option and figure.
    """
    from marshmallow import ValidationError

    from dialerapi import simulate as sim
    from dialerapi.simulate import report as sim_report

    context = click.get_current_context()
    # Only the options given count: null is a value of its own (--patience-seconds null: forever).
    options = {name: value for name, value in options.items()
               if context.get_parameter_source(name) is not ParameterSource.DEFAULT}
    if "start_date" in options:
        options["start_date"] = options["start_date"].date().isoformat()
    try:
        scenario = sim.load_scenario(sim.read_file(scenario_file) if scenario_file else None, **options)
    except (ValueError, ValidationError) as exc:
        messages = exc.messages if isinstance(exc, ValidationError) else str(exc)
        raise click.UsageError(f"scenario: {json.dumps(messages, default=str)}") from None
    if scenario.replications == 1:
        click.echo("one run: the figures get no 95% interval (--replications 2 or more)", err=True)
    stderr = click.get_text_stream("stderr")
    with click.progressbar(length=scenario.replications, label="simulating", file=stderr) as bar:
        ended = itertools.count(1)

        def done(run):
            # A bar only draws on a terminal; a log or a CI job gets a line per run instead.
            number = next(ended)
            if stderr.isatty():
                bar.update(1)
            else:
                click.echo(f"simulating: run {number} of {scenario.replications} done (seed {run['seed']})", err=True)

        try:
            report = sim.replicate(current_app.config["DATABASE_URL"], scenario, keep=keep, done=done,
                                   jobs=jobs)
        except sim.SandboxError as exc:
            raise click.ClickException(str(exc)) from None
    if json_path:
        with click.open_file(json_path, "w") as handle:
            json.dump(report, handle, indent=1, default=str)
            handle.write("\n")
    if csv_dir:
        sim_report.write_csv(report, csv_dir)
    if chart:
        sim_report.draw_chart(report, chart)
    if json_path != "-":
        click.echo(sim_report.summary(report))
