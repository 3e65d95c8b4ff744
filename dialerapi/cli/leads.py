"""`dialerapi leads import FILE`: a lead list from a CSV, Excel or JSON Lines file, through the lead
push's rules (docs/operations/lead-lists.md)."""

import json
import os
import sys
from concurrent.futures.process import BrokenProcessPool

import click
import pymysql
from flask.cli import ScriptInfo

from dialerapi.cli import lead_files, lead_import, lead_mapping, lead_sinks
from dialerapi.cli.base import create_cli_app, main, service_now, service_tz
from dialerapi.plumbing.db import CommitOutcomeUnknown, DatabaseUnavailable, get_db
from dialerapi.rules.leads import catalog


class ImportFailed(click.ClickException):
    """The import could not run or stopped early: exit status 2 (1 is "some rows were refused")."""

    exit_code = 2


@main.group("leads")
def leads_group():
    """Lead lists from files, through the push's own rules."""


@leads_group.command("import", with_appcontext=False)
@click.argument("file", type=click.Path(exists=True, dir_okay=False))
@click.option("--format", "fmt", type=click.Choice(lead_files.FORMATS),
              help="csv, xlsx or jsonl (default: from the file's suffix).")
@click.option("--delimiter", help="The CSV delimiter, one character or 'tab' (default: sniffed).")
@click.option("--encoding", help="The CSV or JSON Lines encoding (default: UTF-8, with or without a BOM).")
@click.option("--sheet", help="The Excel sheet (default: the first).")
@click.option("--map", "maps", multiple=True, metavar="FIELD=COLUMN[,...]",
              help="Read FIELD from COLUMN (default: the column named as the field).")
@click.option("--set", "sets", multiple=True, metavar="FIELD=VALUE", help="Give FIELD this value on every lead.")
@click.option("--ignore", multiple=True, metavar="COLUMN", help="Leave out this column of the file.")
@click.option("--batch-size", type=click.IntRange(1, 500), default=500, show_default=True,
              help="Rows per batch, each one push in one transaction.")
@click.option("--workers", type=click.IntRange(1, 8), default=2, show_default=True,
              help="Batches pushed at once, each by a process of its own (with the database, not --url).")
@click.option("--rejects", "rejects_path", type=click.Path(dir_okay=False),
              help="The rejects file (default: NAME.rejects.csv or .jsonl beside the input).")
@click.option("--dry-run", is_flag=True, help="Validate every row and write the rejects file; write no lead.")
@click.option("--resume", is_flag=True, help="Go on after the last batch an interrupted import committed.")
@click.option("--restart", is_flag=True, help="Start over, forgetting an interrupted import of this file.")
@click.option("--url", help="Push through POST /api/leads of the service at this URL instead of the database.")
@click.option("--key-file", type=click.File("r"),
              help="With --url: a file holding the CRM's key (default: the DIALERAPI_KEY environment variable).")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
def leads_import(file, fmt, delimiter, encoding, sheet, maps, sets, ignore, batch_size, workers, rejects_path,
                 dry_run, resume, restart, url, key_file, as_json):
    """Load the leads of FILE (CSV, Excel .xlsx or JSON Lines) in batches through the lead push's
    rules: validation, upsert by oli_id, leads live on a call skipped, do-not-call flagged.

    A refused row goes to the rejects file with its line number, field and error; the others are
    written. Exit status: 0 every row was taken, 1 some were refused, 2 the import could not run or
    stopped (Ctrl-C, a lost database, a remote that does not answer: --resume goes on after the
    last committed batch).
    """
    if resume and restart:
        raise click.UsageError("--resume and --restart exclude each other")
    if dry_run and (resume or url):
        raise click.UsageError("--dry-run reads the priority catalog from the database: without --resume or --url")
    try:
        fmt = lead_files.list_format(file, fmt)
        reader = lead_files.open_list(file, fmt, _delimiter(delimiter), encoding, sheet)
        columns = reader.columns if reader.columns is not None else _first_keys(file, encoding)
        plan = lead_mapping.plan(columns, lead_mapping.pairs(maps, "--map"), lead_mapping.pairs(sets, "--set"),
                                 ignore, typed=fmt == "jsonl")
    except (lead_files.ListFileError, lead_mapping.MappingError) as exc:
        raise ImportFailed(str(exc)) from None
    options = {"format": fmt, "delimiter": getattr(reader, "delimiter", None), "encoding": encoding, "sheet": sheet,
               "map": sorted(maps), "set": sorted(sets), "ignore": sorted(ignore)}
    state = lead_import.State(file, lead_import.fingerprint(file, options))
    try:
        saved = None if dry_run else state.load(resume, restart)
    except lead_import.ImportRefused as exc:
        raise ImportFailed(str(exc)) from None
    if dry_run and state.path.exists() and not rejects_path:
        raise ImportFailed(f"an import of this file is in progress ({state.path.name}) and a dry run would "
                           "overwrite its rejects file: give the dry run --rejects FILE")
    counts = _counts(saved, dry_run)
    rejects = lead_import.Rejects(
        saved["rejects"]["path"] if saved else rejects_path or lead_import.default_rejects_path(file, fmt),
        fmt, columns or [], getattr(reader, "delimiter", ","), encoding,
        resume_bytes=saved["rejects"]["bytes"] if saved else None)
    if url:
        sink = lead_sinks.RemoteSink(url, _key(key_file))
        _import(file, fmt, reader, plan, sink, rejects, state, counts, batch_size, dry_run, as_json)
        return
    app = click.get_current_context().ensure_object(ScriptInfo).load_app()
    with app.app_context():
        db = get_db()
        if dry_run:
            sink = lead_sinks.DryRunSink(db.run(catalog.push_context)[0], service_tz())
        elif workers > 1:
            sink = lead_sinks.ProcessSink(workers, create_cli_app)
        else:
            sink = lead_sinks.LocalSink(db, service_now, service_tz())
        _import(file, fmt, reader, plan, sink, rejects, state, counts, batch_size, dry_run, as_json)


def _import(file, fmt, reader, plan, sink, rejects, state, counts, batch_size, dry_run, as_json):
    if not dry_run and not counts["rows"]:
        # From the start, so that an import stopped before its first batch is resumed like any other
        # and not started again by accident.
        state.save(0, 0, rejects.path, rejects.flush(), {key: counts[key] for key in lead_import.COUNTS})
    progress = lead_import.Progress(sys.stderr, lead_import.count_lines(file, fmt, reader), counts["rows"])
    stopped, hard = None, False
    try:
        with lead_import.stop_signals(sys.stderr) as stop:
            lead_import.run(reader, plan, sink, rejects, state, counts, batch_size, progress, stop, dry_run)
    except lead_import.ImportStopped as exc:
        stopped = str(exc)
    except KeyboardInterrupt:
        stopped, hard = "interrupted; the batches in flight were rolled back", True
    except lead_files.ListFileError as exc:
        stopped = f"{file}: {exc}"
    except lead_import.ImportRefused as exc:
        stopped = str(exc)
    except DatabaseUnavailable as exc:
        stopped = f"the database is unavailable ({exc}); the batch in flight was rolled back"
    except CommitOutcomeUnknown:
        stopped = "the database connection was lost during a COMMIT: that batch may or may not be stored"
    except BrokenProcessPool:
        stopped = "a process pushing batches ended unexpectedly; its batch was rolled back"
    except pymysql.MySQLError as exc:
        stopped = f"the database refused a batch ({exc}); it was rolled back"
    finally:
        sink.close(hard)
        progress.close()
        reader.close()
        rejects.close()
    if stopped is None and not dry_run:
        state.remove()
    if counts["rejected"] == 0 and stopped is None:
        rejects.path.unlink(missing_ok=True)
    _summary(file, counts, rejects, dry_run, stopped, as_json)
    if stopped is not None:
        where = f"after line {counts['line']}" if counts.get("line") else "before its first batch"
        raise ImportFailed(f"{stopped}. The import stopped {where}; "
                           f"`dialerapi leads import {file} --resume` (same options) goes on from there")
    click.get_current_context().exit(1 if counts["rejected"] else 0)


def _counts(saved, dry_run):
    names = lead_import.DRY_RUN_COUNTS if dry_run else lead_import.COUNTS
    counts = {name: 0 for name in names}
    if saved:
        counts.update(saved["counts"])
        counts["line"] = saved["line"]
    return counts


def _summary(file, counts, rejects, dry_run, stopped, as_json):
    names = lead_import.DRY_RUN_COUNTS if dry_run else lead_import.COUNTS
    rejects_file = str(rejects.path) if counts["rejected"] or stopped else None
    if as_json:
        click.echo(json.dumps({"ok": stopped is None, "file": file, "dry_run": dry_run,
                               **{name: counts[name] for name in names}, "rejects_file": rejects_file,
                               "stopped": stopped}))
        return
    click.echo(f"{file}: {counts['rows']:,} rows{' (dry run: nothing written)' if dry_run else ''}"
               f"{'' if stopped is None else ', stopped'}")
    for name in names[1:]:
        note = ""
        if name == "do_not_call":
            note = "  (of those stored, on the do-not-call list: never claimed)"
        elif name == "rejected" and rejects_file:
            note = f"  -> {rejects_file}"
        click.echo(f"  {name:<18}{counts[name]:>12,}{note}")


def _delimiter(text):
    if text is None:
        return None
    text = {"tab": "\t", "\\t": "\t"}.get(text.lower(), text)
    if len(text) != 1:
        raise click.BadParameter("one character, or 'tab'", param_hint="--delimiter")
    return text


def _first_keys(file, encoding):
    """The keys of a JSON Lines file's first object, which stands for a header."""
    peek = lead_files.JsonLinesList(file, encoding)
    try:
        for row in peek:
            if row.cells is not None:
                return list(row.cells)
        raise lead_files.ListFileError(f"{file}: no JSON object in the file")
    finally:
        peek.close()


def _key(key_file):
    key = key_file.read().strip() if key_file else os.environ.get("DIALERAPI_KEY", "").strip()
    if not key:
        raise click.UsageError("--url needs the CRM's key: --key-file FILE or the DIALERAPI_KEY environment variable")
    return key
