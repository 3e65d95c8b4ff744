"""From a list file's columns to the push's fields: which column feeds each field
of a lead (`--map FIELD=COLUMN`, else the column named as the field), which fields are constants
(`--set FIELD=VALUE`), and which columns are left out (`--ignore COLUMN`).

The plan is checked against the file's header before any row is read: a field the push does not
know, a required field with no column and no constant, or a column of the file that feeds nothing
is refused, naming it. JSON Lines has no header, so its first object stands for one.
"""

import re
from dataclasses import dataclass
from datetime import datetime

from dialerapi.sides.crm.schemas import LEAD_FIELDS, LEAD_REQUIRED

# The push's field names in the order of the specification's "Lead (master row)".
FIELD_ORDER = ("oli_id", "phone_number", "client_name", "form_type", "priority_id", "callback_scheduled_at")
WHOLE_NUMBER = re.compile(r"\s*[+-]?\d{1,19}\s*")


class MappingError(Exception):
    """The mapping cannot load this file; the message names the field or column and what to do."""


@dataclass
class Plan:
    columns: dict  # field -> column of the file
    constants: dict  # field -> value (--set), as converted by `cell_value`
    typed: bool  # JSON Lines: values are JSON's own types and go to the push as they are
    ignored: frozenset  # columns left out (--ignore)


def pairs(texts, option):
    """{"FIELD": "VALUE"} of `--map`/`--set` texts, each "A=B" or several "A=B,C=D". Raises MappingError."""
    found = {}
    for text in texts:
        for part in text.split(",") if option == "--map" else [text]:
            name, sep, value = part.partition("=")
            name = name.strip()
            if not sep or not name:
                raise MappingError(f"{option} {part!r}: write FIELD=VALUE")
            if name in found:
                raise MappingError(f"{option} names {name!r} twice")
            found[name] = value.strip() if option == "--map" else value
    return found


def plan(columns, maps, sets, ignored, typed=False):
    """The Plan for a file whose header is `columns` (for JSON Lines, the first object's keys),
    given `maps` {field: column}, `sets` {field: text} and `ignored` columns. Raises MappingError
    naming every problem found, one per line."""
    known = ", ".join(FIELD_ORDER)
    problems = []
    for option, names in (("--map", maps), ("--set", sets)):
        problems += [f"{option} {name}: the push has no field {name!r} (fields: {known})"
                     for name in names if name not in LEAD_FIELDS]
    problems += [f"{name} is given by both --map and --set" for name in sorted(maps.keys() & sets.keys())]
    problems += [f"--map {field}={column}: the file has no column {column!r} (columns: {', '.join(columns)})"
                 for field, column in maps.items() if column not in columns]
    problems += [f"--ignore {column}: the file has no column {column!r}" for column in ignored if column not in columns]
    chosen = dict(maps)
    for field in FIELD_ORDER:
        if field not in chosen and field not in sets and field in columns and field not in ignored:
            chosen[field] = field
    problems += [f"no column for the required field {field!r}: map one with --map {field}=COLUMN "
                 f"or give it with --set {field}=VALUE"
                 for field in FIELD_ORDER if field in LEAD_REQUIRED and field not in chosen and field not in sets]
    used = set(chosen.values()) | set(ignored)
    problems += [f"the file's column {column!r} feeds no field: map it with --map FIELD={column} "
                 f"or leave it out with --ignore {column}" for column in columns if column not in used]
    if problems:
        raise MappingError("\n".join(problems))
    return Plan(chosen, {field: cell_value(field, text) for field, text in sets.items()}, typed, frozenset(ignored))


def to_lead(cells, plan):
    """The push body of one row: {field: value} from its cells and the constants. An empty CSV or
    sheet cell is left out, as a field the CRM did not send (the push then says what it misses); a
    JSON object's keys that no field takes go through as they are (the push refuses them)."""
    if plan.typed:
        lead = {field: cells[column] for field, column in plan.columns.items() if column in cells}
        taken = set(plan.columns.values()) | plan.ignored
        lead.update((key, value) for key, value in cells.items() if key not in taken)
    else:
        lead = {}
        for field, column in plan.columns.items():
            value = cell_value(field, cells.get(column))
            if value is not None:
                lead[field] = value
    lead.update(plan.constants)
    return lead


def cell_value(field, value):
    """A CSV or sheet cell as the push takes it for `field`: None for an empty cell; priority_id a
    whole number written as text (or a sheet's 2.0) as an integer; a sheet's date-time as
    YYYY-MM-DD HH:MM:SS; a sheet's number for a text field as its digits. Anything else stays as
    read, so the push's own message says what is wrong with it."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, bool):
        return value
    if field == "priority_id":
        if isinstance(value, str) and WHOLE_NUMBER.fullmatch(value):
            return int(value)
        if isinstance(value, float) and value.is_integer():
            return int(value)
        return value
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S")
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, (int, float)):
        return str(value)
    return value
