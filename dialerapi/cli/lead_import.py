"""The work of `dialerapi leads import`: a list file's rows, in batches, through the
lead push's own rules, every row accounted for once across interruptions.

A batch is the next `batch_size` rows of the file. Its readable rows go through the push (a
`Sink`, lead_sinks): in one transaction of rules.leads.push, the code and transaction of POST
/api/leads, or through that endpoint of a remote service. The push refuses a row the way it would refuse that
lead in a batch (sides.crm.schemas.load_each), and the row goes to the rejects file with its line,
field and error; the others are written. Then the rejects are flushed and the state file records
the rows done, the rejects file's length and the counts, so `--resume` starts after the last
committed batch and the summary counts each row once. A stop (Ctrl-C, SIGTERM) is taken at the next
batch boundary; a second one, a lost database or a dead remote ends the batch in flight, which
rolls back. One window is left: a batch committed and the process killed before its state was
written is pushed again on resume (its leads then count as updated; each is still stored once).
"""

import collections
import csv
import json
import os
import signal
import threading
import time
from contextlib import contextmanager
from pathlib import Path

from tqdm import tqdm

from dialerapi.cli.lead_mapping import to_lead

COUNTS = ("rows", "inserted", "updated", "skipped_in_flight", "do_not_call", "rejected")
DRY_RUN_COUNTS = ("rows", "valid", "rejected")
STATE_VERSION = 1
PLAIN_PROGRESS_SECONDS = 10


class ImportStopped(Exception):
    """The import stopped before the end of the file; committed batches stay and --resume goes on."""


class ImportRefused(Exception):
    """The import cannot run (a remote refused the key, a state file of another import, ...)."""


class Sink:
    """Where a batch's lead bodies go (lead_sinks). `width`: how many batches may be in flight at
    once. `submit(bodies)` starts one and returns a callable that waits for its (results, {index in
    bodies: details}), raising what the push raised."""

    width = 1

    def submit(self, bodies):
        outcome = self.push(bodies)
        return lambda: outcome

    def close(self, hard=False):
        """Let go of what the sink holds; `hard`: the import was cut short (a second Ctrl-C)."""


def state_path(path):
    return Path(f"{path}.import-state.json")


def default_rejects_path(path, fmt):
    """Beside the input: NAME.rejects.csv (CSV and Excel input) or NAME.rejects.jsonl."""
    path = Path(path)
    return path.with_name(f"{path.stem}.rejects.{'jsonl' if fmt == 'jsonl' else 'csv'}")


class State:
    """The state file of an import in progress (`FILE.import-state.json`, beside the input).

    {version, fingerprint: {size, mtime_ns, options}, rows (rows done), line (the last of them),
    rejects (the rejects file's path and its length in bytes then), counts}. Written after each
    committed batch, by rename, so a kill leaves the old one or the new one; removed at the end."""

    def __init__(self, path, fingerprint):
        self.path = state_path(path)
        self.fingerprint = fingerprint
        self.data = None

    def load(self, resume, restart):
        """The saved state for --resume (None for a fresh import). Raises ImportRefused when a state
        file exists without --resume or --restart, or --resume finds none or one of another file."""
        exists = self.path.exists()
        if restart or (not resume and not exists):
            return None
        if not exists:
            raise ImportRefused(f"nothing to resume: no {self.path.name} beside the file")
        data = json.loads(self.path.read_text())
        if not resume:
            where = f"after line {data['line']}" if data["line"] else "before its first batch"
            raise ImportRefused(f"an import of this file stopped {where} ({self.path.name}): "
                                "continue it with --resume, or start over with --restart")
        if data.get("version") != STATE_VERSION or data["fingerprint"] != self.fingerprint:
            raise ImportRefused(f"the file or the options changed since the import recorded in {self.path.name}: "
                                "start over with --restart")
        self.data = data
        return data

    def save(self, rows, line, rejects_path, rejects_bytes, counts):
        data = {"version": STATE_VERSION, "fingerprint": self.fingerprint, "rows": rows, "line": line,
                "rejects": {"path": str(rejects_path), "bytes": rejects_bytes}, "counts": counts}
        temporary = self.path.with_name(self.path.name + ".tmp")
        temporary.write_text(json.dumps(data))
        os.replace(temporary, self.path)

    def remove(self):
        self.path.unlink(missing_ok=True)


def fingerprint(path, options):
    """What must not change between an import and its --resume: the file's size and modification
    time and the options that decide which lead each row becomes."""
    stat = os.stat(path)
    return {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "options": options}


class Rejects:
    """The rejects file: each refused row as read, with its line and the push's field and error.

    CSV (for CSV and Excel input): the columns `line`, `field`, `error`, then the file's own; JSON
    Lines: {"line", "field", "error", "row": the line's text}. A row with several errors has its
    fields and their errors each joined with "; ", in the same order."""

    def __init__(self, path, fmt, columns, delimiter=",", encoding=None, resume_bytes=None):
        self.path = Path(path)
        self.fmt = fmt
        self.count = 0
        encoding = "utf-8" if encoding in (None, "utf-8-sig") else encoding
        if resume_bytes is not None and not self.path.exists():
            resume_bytes = None  # removed meanwhile: start it again, header and all
        if resume_bytes is None:
            self.file = open(self.path, "w", newline="", encoding=encoding, errors="surrogateescape")
        else:
            self.file = open(self.path, "r+", newline="", encoding=encoding, errors="surrogateescape")
            self.file.truncate(resume_bytes)
            self.file.seek(0, os.SEEK_END)
        if fmt != "jsonl":
            self.writer = csv.writer(self.file, delimiter=delimiter)
            if resume_bytes is None:
                self.writer.writerow(["line", "field", "error", *columns])

    def add(self, row, details):
        fields = "; ".join(detail["field"] or "" for detail in details)
        errors = "; ".join(detail["message"] for detail in details)
        if self.fmt == "jsonl":
            self.file.write(json.dumps({"line": row.line, "field": fields or None, "error": errors, "row": row.raw},
                                       ensure_ascii=False) + "\n")
        else:
            self.writer.writerow([row.line, fields, errors, *row.raw])
        self.count += 1

    def flush(self):
        """Flush to the file; its length in bytes."""
        self.file.flush()
        os.fsync(self.file.fileno())
        return os.fstat(self.file.fileno()).st_size

    def close(self):
        self.file.close()


class Progress:
    """Rows done, rows/s, elapsed and time left: a tqdm bar on a terminal, a plain line every
    PLAIN_PROGRESS_SECONDS otherwise (cron, CI). `total` is an estimate (the file's lines) or None."""

    FORMAT = "{n_fmt}/{total_fmt} rows, {rate_fmt}, {elapsed} elapsed, {remaining} left"

    def __init__(self, stream, total, done, monotonic=time.monotonic):
        self.stream, self.total, self.done, self.monotonic = stream, total, done, monotonic
        self.bar = None
        if stream.isatty():
            self.bar = tqdm(total=total, initial=done, unit="rows", unit_scale=True, file=stream, smoothing=0.1)
        self.started = self.last = monotonic()
        self.start_done = done

    def update(self, rows):
        self.done += rows
        if self.bar is not None:
            self.bar.update(rows)
            return
        now = self.monotonic()
        if now - self.last >= PLAIN_PROGRESS_SECONDS:
            self.last = now
            self.stream.write(self.line(now) + "\n")
            self.stream.flush()

    def line(self, now):
        elapsed = now - self.started
        rate = (self.done - self.start_done) / elapsed if elapsed > 0 else None
        total = self.total if self.total and self.total >= self.done else None
        return tqdm.format_meter(self.done, total, elapsed, unit="rows", rate=rate, bar_format=self.FORMAT)

    def close(self):
        if self.bar is not None:
            self.bar.close()


def count_lines(path, fmt, reader):
    """An estimate of the rows of a list for the progress: its line count (less the header for
    CSV), an Excel sheet's last row less one, None when the sheet does not say."""
    if fmt == "xlsx":
        last = reader.sheet.max_row
        return last - 1 if last else None
    lines = 0
    with open(path, "rb") as file:
        for chunk in iter(lambda: file.read(1 << 20), b""):
            lines += chunk.count(b"\n")
    return max(0, lines - (1 if fmt == "csv" else 0))


@contextmanager
def stop_signals(stream):
    """A threading.Event set by the first Ctrl-C or SIGTERM (stop at the next batch boundary); a
    second one raises KeyboardInterrupt there and then (the batch in flight rolls back)."""
    stop = threading.Event()

    def handler(signum, frame):
        if stop.is_set():
            raise KeyboardInterrupt
        stop.set()
        stream.write("\nstopping after this batch (again to stop now; --resume goes on later)\n")
        stream.flush()

    previous = {number: signal.signal(number, handler) for number in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield stop
    finally:
        for number, old in previous.items():
            signal.signal(number, old)


# A batch on its way: its rows, those of them pushed, the callable that waits for its outcome, and
# the oli_ids it names.
Flight = collections.namedtuple("Flight", "batch readable outcome oli_ids")


def run(reader, plan, sink, rejects, state, counts, batch_size, progress, stop, dry_run=False):
    """Import the rows of `reader` after the first counts["rows"] (those a resumed import did),
    batch by batch, up to sink.width batches in flight, each recorded (rejects, counts, state) in
    file order once its push returned; returns `counts`, updated in place. A batch that names an
    oli_id of a batch in flight waits for it, so the file's later row is the one stored (D4).
    Raises ImportStopped at a batch boundary when `stop` is set, after the batches in flight; the
    sink's exceptions end the import there."""
    in_flight = collections.deque()
    for batch in batches(reader, counts["rows"], batch_size):
        readable = [row for row in batch if row.problem is None]
        bodies = [to_lead(row.cells, plan) for row in readable]
        oli_ids = {body.get("oli_id") for body in bodies if isinstance(body.get("oli_id"), str)}
        while in_flight and (len(in_flight) >= sink.width or any(oli_ids & other.oli_ids for other in in_flight)):
            _record(in_flight.popleft(), rejects, state, counts, progress, dry_run)
        outcome = sink.submit(bodies) if bodies else (lambda: ([], {}))
        in_flight.append(Flight(batch, readable, outcome, oli_ids))
        if stop.is_set():
            break
    while in_flight:
        _record(in_flight.popleft(), rejects, state, counts, progress, dry_run)
    if stop.is_set():
        raise ImportStopped("stopped on request")
    return counts


def batches(reader, skip, size):
    """The rows of `reader` after the first `skip`, in lists of `size` (the last may be shorter)."""
    batch = []
    for index, row in enumerate(reader):
        if index < skip:
            continue
        batch.append(row)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def _record(flight, rejects, state, counts, progress, dry_run):
    batch, readable = flight.batch, flight.readable
    results, errors = flight.outcome()
    refused = {row.line: [{"field": None, "message": row.problem}] for row in batch if row.problem is not None}
    for index, details in errors.items():
        refused[readable[index].line] = details
    for result in results:
        counts[result["status"]] += 1
        if result.get("do_not_call"):
            counts["do_not_call"] += 1
    for row in batch:
        if row.line in refused:
            rejects.add(row, refused[row.line])
    counts["rows"] += len(batch)
    counts["rejected"] += len(refused)
    counts["line"] = batch[-1].line
    rejects_bytes = rejects.flush()
    if not dry_run:
        state.save(counts["rows"], counts["line"], rejects.path, rejects_bytes,
                   {key: counts[key] for key in COUNTS})
    progress.update(len(batch))
