"""`dialerapi caller-ids ...`: the floor's caller IDs, the numbers it owns and may present
(docs/operations/caller-ids.md)."""

from pathlib import Path

import click

from dialerapi.cli import lead_files
from dialerapi.cli.base import CHANGED_BY, echo_json, main, service_now
from dialerapi.cli.lead_import import Rejects, default_rejects_path
from dialerapi.plumbing.db import get_db
from dialerapi.rules.caller_ids import numbers

# Rows an import writes in one transaction.
IMPORT_BATCH = 500
COLUMNS = ("number", "pools", "daily_cap", "note")


@main.group("caller-ids")
def caller_ids_group():
    """The floor's caller IDs: the numbers the engine may present, in pools, each active, flagged
    or retired, with a daily cap (the floor's caller_id_daily_cap unless its own)."""


def _run(work, *args):
    try:
        return get_db().run(work, *args)
    except (numbers.InvalidCallerId, numbers.UnknownCallerId) as exc:
        raise click.ClickException(str(exc)) from None


@caller_ids_group.command("add")
@click.argument("number")
@click.option("--pool", "pools", multiple=True, required=True, help="A pool it is in (again for more).")
@click.option("--daily-cap", type=int, help="Calls it may present a day (default: the floor's caller_id_daily_cap).")
@click.option("--note", default="", help="Where it came from, at most 200 characters.")
def caller_ids_add(number, pools, daily_cap, note):
    """Add NUMBER (E.164, +19195550100), active, to its pools."""
    added, created = _run(lambda conn: numbers.add(conn, number, list(pools), service_now(), CHANGED_BY,
                                                   daily_cap=daily_cap, note=note))
    echo_json(added)
    if not created:
        click.echo(f"{added['number']} was on the floor already: nothing changed (`caller-ids set` changes it)", err=True)


@caller_ids_group.command("import")
@click.argument("path", type=click.Path(exists=True, dir_okay=False))
@click.option("--format", "fmt", type=click.Choice(lead_files.FORMATS), help="Default: from the file's name.")
@click.option("--pool", "default_pool", help="The pool of a row whose pools cell is empty.")
@click.option("--rejects", "rejects_path", type=click.Path(dir_okay=False),
              help="Where refused rows go (default: NAME.rejects.csv beside the file).")
def caller_ids_import(path, fmt, default_pool, rejects_path):
    """Add the numbers of a list (CSV, .xlsx or JSON Lines) with the columns number, pools
    (';'-separated), daily_cap and note (all but number may be empty or left out), IMPORT_BATCH
    rows a transaction, one row at a time in memory. A row that cannot be added goes to the
    rejects file with its line, field and error; the others are added (a number the floor has
    already is left as it is)."""
    try:
        fmt = lead_files.list_format(path, fmt)
        reader = lead_files.open_list(path, fmt)
    except lead_files.ListFileError as exc:
        raise click.ClickException(str(exc)) from None
    rejects = Rejects(rejects_path or default_rejects_path(Path(path), fmt), fmt, reader.columns or COLUMNS)
    counts = {"rows": 0, "added": 0, "already": 0, "rejected": 0}
    batch = []
    try:
        for row in reader:
            batch.append(row)
            if len(batch) == IMPORT_BATCH:
                _import_batch(batch, default_pool, rejects, counts)
                batch = []
        _import_batch(batch, default_pool, rejects, counts)
    except lead_files.ListFileError as exc:
        raise click.ClickException(f"{exc}; the rows before it are added ({counts})") from None
    finally:
        reader.close()
        rejects.close()
    echo_json({**counts, "rejects": str(rejects.path) if counts["rejected"] else None})


def _import_batch(batch, default_pool, rejects, counts):
    refused = []

    def store(conn):
        refused.clear()
        added = already = 0
        now = service_now()
        for row in batch:
            try:
                number, pools, daily_cap, note = _cells(row, default_pool)
                created = numbers.add(conn, number, pools, now, CHANGED_BY, daily_cap=daily_cap, note=note)[1]
            except numbers.InvalidCallerId as exc:
                refused.append((row, [{"field": field, "message": " ".join(texts)}
                                      for field, texts in sorted(exc.messages.items())]))
                continue
            added, already = added + created, already + (not created)
        return added, already

    added, already = get_db().run(store)
    for row, details in refused:
        rejects.add(row, details)
    rejects.flush()
    counts.update(rows=counts["rows"] + len(batch), added=counts["added"] + added, already=counts["already"] + already,
                  rejected=counts["rejected"] + len(refused))


def _cells(row, default_pool):
    """(number, pools, daily_cap, note) of a list's row; InvalidCallerId names the wrong cell."""
    if row.cells is None:
        raise numbers.InvalidCallerId({"row": [row.problem]})
    cells = {name: "" if value is None else str(value).strip() for name, value in row.cells.items()}
    pools = [name.strip() for name in cells.get("pools", "").split(";") if name.strip()]
    if not pools and default_pool:
        pools = [default_pool]
    daily_cap = cells.get("daily_cap", "")
    if daily_cap and not daily_cap.isdigit():
        raise numbers.InvalidCallerId({"daily_cap": ["must be a whole number of calls"]})
    return cells.get("number", ""), pools, int(daily_cap) if daily_cap else None, cells.get("note", "")


@caller_ids_group.command("list")
@click.option("--pool", help="Only the numbers of this pool.")
@click.option("--state", type=click.Choice([state.value for state in numbers.State]), help="Only the numbers in this state.")
@click.option("--json", "as_json", is_flag=True, help="Print them as JSON.")
def caller_ids_list(pool, state, as_json):
    """The floor's numbers in number order: pools, state, today's calls and cap."""
    def read(conn):
        found, after = numbers.page(conn, pool=pool, state=state)
        while after is not None:
            more, after = numbers.page(conn, pool=pool, state=state, after=after)
            found += more
        return found

    found = _run(read)
    if as_json:
        echo_json(found)
        return
    click.echo(f"{'number':<17} {'state':<8} {'today':>6} {'cap':>6}  {'regions':<12} pools")
    for item in found:
        cap = "floor" if item["daily_cap"] is None else item["daily_cap"]
        click.echo(f"{item['number']:<17} {item['state']:<8} {item['presented_today']:>6} {cap:>6}  "
                   f"{';'.join(item['regions']):<12} {';'.join(item['pools'])}")


@caller_ids_group.command("show")
@click.argument("number")
def caller_ids_show(number):
    """NUMBER as the API answers it, with its history (newest first)."""
    echo_json(_run(numbers.show, number))


@caller_ids_group.command("set")
@click.argument("number")
@click.option("--pool", "pools", multiple=True, help="Its pools (all of them; again for more).")
@click.option("--daily-cap", help="Calls it may present a day, or `floor` for the floor's caller_id_daily_cap.")
@click.option("--note", help="A note, at most 200 characters.")
@click.option("--active", is_flag=True, help="Set a flagged number active again.")
def caller_ids_set(number, pools, daily_cap, note, active):
    """Change NUMBER's pools, daily cap or note, or set it active again."""
    patch = {name: value for name, value in (("note", note), ("pools", list(pools) or None)) if value is not None}
    if daily_cap is not None:
        if daily_cap != "floor" and not daily_cap.isdigit():
            raise click.BadParameter("a whole number of calls, or `floor`", param_hint="--daily-cap")
        patch["daily_cap"] = None if daily_cap == "floor" else int(daily_cap)
    if active:
        patch["state"] = numbers.State.ACTIVE.value
    echo_json(_run(lambda conn: numbers.change(conn, number, patch, service_now(), CHANGED_BY)))


def _switch(number, state, note):
    patch = {"state": state.value, **({"note": note} if note is not None else {})}
    echo_json(_run(lambda conn: numbers.change(conn, number, patch, service_now(), CHANGED_BY)))


@caller_ids_group.command("flag")
@click.argument("number")
@click.option("--note", help="Why (a carrier's label, a complaint).")
def caller_ids_flag(number, note):
    """Stop presenting NUMBER until it is set active again (`caller-ids set NUMBER --active`)."""
    _switch(number, numbers.State.FLAGGED, note)


@caller_ids_group.command("retire")
@click.argument("number")
@click.option("--note", help="Why.")
def caller_ids_retire(number, note):
    """Never present NUMBER again; it shows release_after (its last use + 30 days)."""
    _switch(number, numbers.State.RETIRED, note)
