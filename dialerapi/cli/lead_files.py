"""Lead list files for `dialerapi leads import`: CSV, Excel .xlsx and JSON Lines, read
one row at a time so a list of any length costs the same memory.

Every reader yields `Row`s in file order: the row's line number (CSV: the line its record starts
on, the header being line 1; Excel: the sheet's row number; JSON Lines: the line), its cells by
column name, and the row as it was read (for the rejects file). A row that cannot be read as cells
(a CSV record with more or fewer cells than the header, a JSON line that is not an object) carries
`problem` instead of cells and is refused on its own. A file that cannot be read at all raises
ListFileError.
"""

import csv
import json
from dataclasses import dataclass
from datetime import date, datetime, time
from pathlib import Path

import openpyxl

FORMATS = ("csv", "xlsx", "jsonl")
SUFFIXES = {".csv": "csv", ".txt": "csv", ".tsv": "csv", ".xlsx": "xlsx", ".jsonl": "jsonl", ".ndjson": "jsonl"}
DELIMITERS = ",;\t|"
# A line longer than this is no lead (the push's longest field is 150 characters); reading stops
# there instead of holding a file without line breaks in memory.
MAX_LINE_CHARS = 65_536
SNIFF_LINES = 20


class ListFileError(Exception):
    """The file cannot be read as a lead list; the message names the file's line where there is one."""


@dataclass
class Row:
    line: int
    cells: dict | None  # column -> value; None when `problem` says why the row has none
    raw: list | str  # as read: a CSV or sheet row's cells, a JSON line's text
    problem: str | None = None


def list_format(path, given=None):
    """The format of `path`: `given` (one of FORMATS), else its suffix's. Raises ListFileError."""
    if given:
        return given
    found = SUFFIXES.get(Path(path).suffix.lower())
    if found is None:
        raise ListFileError(f"{path}: cannot tell the format from the name; give --format {'|'.join(FORMATS)}")
    return found


def open_list(path, fmt, delimiter=None, encoding=None, sheet=None):
    """A reader of `path` in format `fmt`: `.columns` (the header's names; None for JSON Lines,
    whose objects name their own), iteration over Rows, `.close()`. `encoding` (CSV and JSON Lines):
    a Python codec, by default UTF-8 with or without a BOM; bytes it cannot decode are kept
    (surrogateescape) and the push refuses the row they are in. Raises ListFileError."""
    try:
        if fmt == "csv":
            return CsvList(path, delimiter, encoding)
        if fmt == "xlsx":
            return XlsxList(path, sheet)
        return JsonLinesList(path, encoding)
    except (OSError, LookupError) as exc:
        raise ListFileError(f"{path}: {exc}") from None


def _text_file(path, encoding):
    return open(path, newline="", encoding=encoding or "utf-8-sig", errors="surrogateescape")


def _bounded_lines(file, first_line=1):
    """The lines of `file`, each at most MAX_LINE_CHARS, else ListFileError naming its line."""
    number = first_line
    while True:
        line = file.readline(MAX_LINE_CHARS + 1)
        if not line:
            return
        if len(line) > MAX_LINE_CHARS:
            raise ListFileError(f"line {number} is longer than {MAX_LINE_CHARS} characters")
        yield line
        number += 1


class CsvList:
    """A CSV list with a header row; the delimiter is `delimiter` or sniffed from the first lines."""

    def __init__(self, path, delimiter=None, encoding=None):
        self.file = _text_file(path, encoding)
        if delimiter is None:
            sample = "".join(line for _, line in zip(range(SNIFF_LINES), _bounded_lines(self.file)))
            self.file.seek(0)
            delimiter = sniff_delimiter(sample)
        self.delimiter = delimiter
        self.reader = csv.reader(_bounded_lines(self.file), delimiter=delimiter)
        try:
            header = next(self.reader, None)
        except csv.Error as exc:
            raise ListFileError(f"line 1: {exc}") from None
        if not header or not any(name.strip() for name in header):
            raise ListFileError(f"{path}: no header row (line 1 names the columns)")
        self.columns = check_header([name.strip() for name in header])

    def __iter__(self):
        width = len(self.columns)
        start = self.reader.line_num + 1
        try:
            for cells in self.reader:
                if cells and any(cells):
                    if len(cells) != width:
                        yield Row(start, None, cells, f"{len(cells)} cells where the header has {width}")
                    else:
                        yield Row(start, dict(zip(self.columns, cells)), cells)
                start = self.reader.line_num + 1
        except csv.Error as exc:
            raise ListFileError(f"line {start}: {exc}") from None

    def close(self):
        self.file.close()


def sniff_delimiter(sample):
    """The delimiter of a CSV `sample` among DELIMITERS (csv.Sniffer), "," when it cannot tell."""
    try:
        return csv.Sniffer().sniff(sample, delimiters=DELIMITERS).delimiter
    except csv.Error:
        return ","


def check_header(columns):
    """`columns` when every name is present once; else ListFileError naming the fault."""
    if "" in columns:
        raise ListFileError(f"the header's column {columns.index('') + 1} has no name")
    seen = set()
    for name in columns:
        if name in seen:
            raise ListFileError(f"the header names column {name!r} twice")
        seen.add(name)
    return columns


class XlsxList:
    """The first sheet (or `sheet`) of an Excel workbook, read with openpyxl's read-only mode
    (streamed, values as last saved, not formulas); row 1 is the header."""

    def __init__(self, path, sheet=None):
        try:
            self.book = openpyxl.load_workbook(path, read_only=True, data_only=True)
        except Exception as exc:  # openpyxl raises zipfile, KeyError and its own errors for a file it cannot read
            raise ListFileError(f"{path}: not an Excel .xlsx workbook ({exc})") from None
        if sheet is not None and sheet not in self.book.sheetnames:
            raise ListFileError(f"{path}: no sheet {sheet!r} (sheets: {', '.join(self.book.sheetnames)})")
        self.sheet = self.book[sheet] if sheet is not None else self.book.worksheets[0]
        self.rows = self.sheet.iter_rows(values_only=True)
        header = list(next(self.rows, None) or ())
        while header and header[-1] is None:
            header.pop()
        if not header:
            raise ListFileError(f"{path}: no header row (row 1 names the columns)")
        self.columns = check_header([sheet_text(name).strip() for name in header])

    def __iter__(self):
        width = len(self.columns)
        for number, values in enumerate(self.rows, start=2):
            values = list(values)
            while values and values[-1] is None:
                values.pop()
            if not values:
                continue
            raw = [sheet_text(value) for value in values]
            if len(values) > width:
                yield Row(number, None, raw, f"{len(values)} cells where the header has {width}")
            else:
                yield Row(number, dict(zip(self.columns, values + [None] * (width - len(values)))), raw)

    def close(self):
        self.book.close()


def sheet_text(value):
    """A sheet cell as text: "" for empty, whole numbers without ".0", times as YYYY-MM-DD HH:MM:SS."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S")
    if isinstance(value, (date, time)):
        return value.isoformat()
    return str(value)


class JsonLinesList:
    """One JSON object per line, its keys the columns; blank lines are passed over."""

    columns = None

    def __init__(self, path, encoding=None):
        self.file = _text_file(path, encoding)

    def __iter__(self):
        for number, line in enumerate(_bounded_lines(self.file), start=1):
            text = line.rstrip("\r\n")
            if not text.strip():
                continue
            try:
                value = json.loads(text)
            except ValueError as exc:
                yield Row(number, None, text, f"not JSON: {exc}")
                continue
            if not isinstance(value, dict):
                yield Row(number, None, text, "not a JSON object")
                continue
            yield Row(number, value, text)

    def close(self):
        self.file.close()
