"""Reading the docs' examples for the tests that hold them (issue #41, item 4).

A block marked `<!-- example: NAME -->` in docs/ is read with `example(NAME)` by the test its
caption names (`Checked by `tests/FILE::TEST``), which sends the same request now and holds the
answer to it: its shape (`assert_shape`: the keys at every depth, the kind of each value) and the
values that carry meaning (`picked`: codes, statuses, reasons, the fields the request set); values
that differ on every run (data_id, tokens, ids, times) are held to their kind only. A renamed,
added or dropped field, a changed code or a changed message fails that test, so an example cannot
go stale silently. tests/test_docs_examples.py checks that every example has such a caption.
"""

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

DOCS = ROOT / "docs"
CAPTION = re.compile(r"Checked by `tests/([a-z_/]+\.py)::(test_[a-z0-9_]+)`")
MARKER = re.compile(r"<!-- example: ([a-z0-9-]+) -->\n```[a-z]*\n(.*?)\n```\n", re.S)


def examples():
    """{name: (page, text of its block)} of every marked example in docs/."""
    found = {}
    for page in sorted(DOCS.rglob("*.md")):
        for name, block in MARKER.findall(page.read_text(encoding="utf-8")):
            assert name not in found, f"example {name} twice"
            found[name] = (page, block)
    return found


def example(name):
    return examples()[name][1]


def answers(block):
    """The JSON values of a block, in order: whole lines (or runs of lines) that parse, after a
    transcript's `<- ` or `-> ` prefix; command lines (`$ ...`) and other text are skipped."""
    values = []
    lines = [re.sub(r"^(<-|->) ", "", line) for line in block.splitlines()]
    i = 0
    while i < len(lines):
        if lines[i].lstrip().startswith(("{", "[")):
            for j in range(i, len(lines)):
                try:
                    values.append(json.loads("\n".join(lines[i:j + 1])))
                except json.JSONDecodeError:
                    continue
                i = j
                break
        i += 1
    return values


def kind(value):
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    return {str: "string", dict: "object", list: "array", type(None): "null"}[type(value)]


def assert_shape(shown, real, path="answer", cut=False, counts=()):
    """`shown` (the example) has `real`'s shape: the same keys at every depth, the same kind of value
    (null in either matches any kind: a nullable field); an array's items are held to the real
    array's first item. `cut`: the example says it shows some fields only, so its keys need only
    be among the answer's. `counts`: paths (from "answer") of objects whose keys are data, such as
    counts by status class, held to being objects only."""
    if shown is None or real is None:
        return
    assert kind(shown) == kind(real), f"{path}: the example shows {kind(shown)}, the service answers {kind(real)}"
    if isinstance(shown, dict) and path not in counts:
        extra, missing = sorted(set(shown) - set(real)), sorted(set(real) - set(shown))
        assert not extra and (cut or not missing), (
            f"{path}: keys differ; only in the example: {extra}, only in the answer: {missing}")
        for key in shown:
            assert_shape(shown[key], real[key], f"{path}.{key}", cut, counts)
    elif isinstance(shown, list) and shown and real:
        for n, item in enumerate(shown):
            assert_shape(item, real[0], f"{path}[{n}]", cut, counts)


def picked(value, keys):
    """The values at `keys` (dotted paths) of a JSON value, to compare an example's meaning."""
    out = {}
    for key in keys:
        node = value
        for part in key.split("."):
            node = node[int(part)] if isinstance(node, list) else node[part]
        out[key] = node
    return out


def present(value, key):
    """Whether the dotted path `key` is in the JSON value."""
    for part in key.split("."):
        if not isinstance(value, dict) or part not in value:
            return False
        value = value[part]
    return True


def text_table(block):
    """The rows of a text table (a header line, columns apart by two or more spaces) as dicts."""
    lines = [line for line in block.splitlines() if line.strip()]
    header = re.split(r"\s{2,}", lines[0].strip())
    return [dict(zip(header, re.split(r"\s{2,}", line.strip()), strict=True)) for line in lines[1:]]
