"""docs/compliance/state-rules.md says what the floor and the board count of the leads the calling
rules hold, as they answer it: a page that says a reader does not count what it answers (or the
other way round) fails here."""

import re

import pytest

from conftest import ROOT, SUPERVISOR_SECRET

PAGE = ROOT / "docs" / "compliance" / "state-rules.md"
READERS = {"POST /engine/floor": ("post", "/engine/floor"), "board": ("get", "/api/board")}
NEGATION = re.compile(r"\b(?:not|no longer|yet|never)\b")


def sentences_naming(text, name):
    flat = " ".join(text.split())
    return [sentence for sentence in re.split(r"(?<=[.;])\s+(?=[A-Z`])", flat) if name in sentence]


@pytest.fixture
def answers(client, engine_auth, floor_agent):
    floor_agent(501)
    headers = {"post": engine_auth, "get": {"X-API-Key": SUPERVISOR_SECRET}}

    def read(method, path):
        response = getattr(client, method)(path, json={} if method == "post" else None, headers=headers[method])
        assert response.status_code == 200, response.get_json()
        body = response.get_json()
        return (body.get("floor") or body)["form_types"]

    return read


@pytest.mark.parametrize("reader", sorted(READERS))
def test_the_page_says_what_each_reader_counts_of_the_held_leads(answers, reader):
    form_types = answers(*READERS[reader])
    assert form_types, "agent 501's skill makes a form_type"
    counts = all("leads_held" in entry for entry in form_types)
    watching = PAGE.read_text(encoding="utf-8").split("## Watching it", 1)[1].split("\n## ", 1)[0]
    said = sentences_naming(watching, "`POST /engine/floor`" if reader.startswith("POST") else "board")
    assert said, f"the page's 'Watching it' names {reader}"
    for sentence in said:
        if counts:
            assert "leads_held" in sentence and not NEGATION.search(sentence), sentence
        else:
            assert NEGATION.search(sentence), sentence
