"""The current figures: bench/results.jsonl, the table atop docs/performance.md and README's measured lines.

    .venv/bin/python bench/figures.py record   # the last step of `make bench`
    .venv/bin/python bench/figures.py render   # rewrites the table and README's lines from the file

`record` reads each results file a bench wrote in the checkout (bench-results-*.json, see
bench/figure_rows.py) that is newer than that bench's last entry in bench/results.jsonl, and adds
one line per file: the bench, when its file was written (UTC), the commit checked out, the machine
(cores, CPU, the database's commit durability) and the rows of its targets. The file only grows:
the runs' history stays in it. `record --from DIR` reads a bench run made in another checkout (a
git worktree of the release measured): its results files and its commit. `render` takes each
bench's latest entry. Commit the file with the pages it renders.
"""

import json
import os
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import click
from figure_rows import BENCHES

from dialerapi.plumbing.db import connect

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results.jsonl"
PAGE = ROOT / "docs" / "performance.md"
README = ROOT / "README.md"
BEGIN = "<!-- current figures: written by bench/figures.py render from bench/results.jsonl -->"
END = "<!-- end of the current figures -->"


def entries(path=RESULTS):
    """Every recorded entry, oldest first."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def latest(recorded):
    """{results file: its latest entry}."""
    found = {}
    for entry in recorded:
        if entry["bench"] not in found or entry["at"] >= found[entry["bench"]]["at"]:
            found[entry["bench"]] = entry
    return found


def commit(root=ROOT):
    """The short commit checked out in `root`, with "+changes" when the code differs from it (the
    docs aside)."""
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True,
                          check=True).stdout.strip()
    changed = subprocess.run(["git", "status", "--porcelain", "--", "dialerapi", "bench", "deploy", "wsgi.py"],
                             cwd=root, capture_output=True, text=True, check=True).stdout.strip()
    return head + ("+changes" if changed else "")


def cpu():
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "unknown CPU"


def durability():
    """The database server's commit durability, read from DATABASE_URL's server (a note saying so without one)."""
    if not os.environ.get("DATABASE_URL"):
        return "durability not read (no DATABASE_URL)"
    conn = connect(os.environ["DATABASE_URL"])
    with conn.cursor() as cur:
        cur.execute("SELECT @@innodb_flush_log_at_trx_commit AS flush, @@sync_binlog AS sync_binlog")
        row = cur.fetchone()
    conn.close()
    return f"innodb_flush_log_at_trx_commit={row['flush']}, sync_binlog={row['sync_binlog']}"


def machine():
    return f"{os.cpu_count()} cores, {cpu()}; {durability()}"


def new_entries(recorded, root=ROOT):
    """An entry for each bench results file in `root` written after its bench's latest entry."""
    last = latest(recorded)
    made, here = [], None
    for name, (command, rows) in BENCHES.items():
        path = root / name
        if not path.exists():
            continue
        at = datetime.fromtimestamp(path.stat().st_mtime, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        if name in last and at <= last[name]["at"]:
            continue
        here = here or {"commit": commit(root), "machine": machine()}
        made.append({"bench": name, "at": at, **here, "command": command,
                     "rows": [row.as_dict() for row in rows(json.loads(path.read_text()))]})
    return made


def met_word(met):
    return "—" if met is None else ("met" if met else "**not met**")


def when(entry):
    return f"{entry['at'][:10]} {entry['at'][11:16]}"


def table(recorded):
    """The Markdown of the current figures: one row per target from each bench's latest entry."""
    last = latest(recorded)
    machines = list(dict.fromkeys(entry["machine"] for entry in last.values()))
    lines = [BEGIN, "", "| target | this release | beside it | goal | met | measured (UTC), commit | command |",
             "|---|---|---|---|---|---|---|"]
    for name, (command, _) in BENCHES.items():
        entry = last.get(name)
        if entry is None:
            lines.append(f"| `{name}` | not measured yet | | | | | `{command}` |")
            continue
        mark = f", machine {chr(65 + machines.index(entry['machine']))}" if len(machines) > 1 else ""
        for row in entry["rows"]:
            lines.append(f"| {row['target']} | {row['figure']} | {row['reference']} | {row['goal']} | "
                         f"{met_word(row['met'])} | {when(entry)}, {entry['commit']}{mark} | `{entry['command']}` |")
    lines.append("")
    if len(machines) == 1:
        lines.append(f"Every row was measured on one machine: {machines[0]}.")
    for index, described in enumerate(machines if len(machines) > 1 else []):
        lines.append(f"- Machine {chr(65 + index)}: {described}.")
    lines += ["", END]
    return "\n".join(lines)


def readme_lines(recorded):
    """README's measured lines: each bench's first row, from the same entries as the table, with
    the machine each was measured on."""
    last = latest(recorded)
    lines = [BEGIN, ""]
    for name in BENCHES:
        entry = last.get(name)
        if entry and entry["rows"]:
            row = entry["rows"][0]
            beside = f", beside {row['reference']}" if row["reference"] else ""
            lines.append(f"- {row['target']}: {row['figure']}{beside}; goal {row['goal']}: {met_word(row['met'])} "
                         f"({when(entry)} UTC, {entry['commit']}; {entry['machine']})")
    lines += ["", END]
    return "\n".join(lines)


def replaced(text, block):
    """`text` with its part from BEGIN to END replaced by `block` (which holds both)."""
    start, end = text.index(BEGIN), text.index(END) + len(END)
    return text[:start] + block + text[end:]


@click.group()
def cli():
    """The current figures of `make bench`."""


@cli.command()
@click.option("--from", "checkout", type=click.Path(exists=True, file_okay=False, path_type=Path), default=ROOT,
              help="The checkout the benches ran in (a git worktree of the release measured): its results files "
                   "and its commit. This one by default.")
def record(checkout):
    """Add each bench's new results file to bench/results.jsonl."""
    made = new_entries(entries(), root=checkout)
    with RESULTS.open("a") as out:
        for entry in made:
            out.write(json.dumps(entry) + "\n")
    click.echo(f"recorded {len(made)} bench result(s): {', '.join(entry['bench'] for entry in made) or 'none new'}")


@cli.command()
def render():
    """Rewrite the table atop docs/performance.md and README's measured lines from bench/results.jsonl."""
    recorded = entries()
    PAGE.write_text(replaced(PAGE.read_text(), table(recorded)))
    README.write_text(replaced(README.read_text(), readme_lines(recorded)))
    click.echo(f"rendered {sum(len(entry['rows']) for entry in latest(recorded).values())} rows")


if __name__ == "__main__":
    cli()
