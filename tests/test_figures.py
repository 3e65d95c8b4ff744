"""The table of current figures atop docs/performance.md and README's measured lines are what
bench/results.jsonl renders (bench/figures.py), and `make bench` records every bench it runs."""

import json
import os
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

import figure_rows
import figures

# A figure with its unit, as the README and the table write them: "7.6 ms", "6,788 leads/s", "85 MB".
FIGURE = re.compile(r"\b\d[\d,.]*\s?(?:ms|leads/s|MB|min \d+ s)\b")


def block(text):
    return text[text.index(figures.BEGIN):text.index(figures.END) + len(figures.END)]


def test_the_performance_page_opens_with_the_table_the_results_render():
    page = figures.PAGE.read_text()
    assert block(page) == figures.table(figures.entries()), "run: .venv/bin/python bench/figures.py render"
    assert page.index(figures.BEGIN) < page.index("\n## "), "the table comes before any section of the page"


def test_the_readme_lines_are_the_ones_the_results_render():
    assert block(figures.README.read_text()) == figures.readme_lines(figures.entries()), \
        "run: .venv/bin/python bench/figures.py render"


def test_every_figure_the_readme_gives_is_in_the_table():
    readme = figures.README.read_text()
    outside = readme.replace(block(readme), "")
    table = figures.table(figures.entries())
    strays = [figure for figure in FIGURE.findall(outside) if figure not in table]
    assert not strays, f"README figures not in docs/performance.md's table: {strays}"


def test_every_bench_make_bench_runs_has_its_rows_and_writes_the_file_they_read():
    recipe = re.search(r"^bench:.*?(?=^\S|\Z)", (ROOT / "Makefile").read_text(), re.MULTILINE | re.DOTALL).group(0)
    run = set(re.findall(r"bench/\w+_bench\.py", recipe))
    read = {script for command, _ in figure_rows.BENCHES.values() for script in re.findall(r"bench/\w+\.py", command)}
    assert run == read
    assert "bench/figures.py record" in recipe and "bench/figures.py render" in recipe
    for name, (command, _) in figure_rows.BENCHES.items():
        script = re.search(r"bench/\w+\.py", command)
        if script:
            assert f'"{name}"' in (ROOT / script.group(0)).read_text(), f"{script.group(0)} does not write {name}"


def test_make_test_of_the_whole_suite_writes_the_file_its_row_reads():
    recipe = re.search(r"^test:.*?(?=^\S|\Z)", (ROOT / "Makefile").read_text(), re.MULTILINE | re.DOTALL).group(0)
    assert "TEST_RESULTS_FILE=bench-results-make-test.json" in recipe
    assert "bench-results-make-test.json" in figure_rows.BENCHES


def claim_results(p99, met):
    """bench/claim_bench.py's results file, with the fields its rows read."""
    http = {"rate_per_s": 49.5, "p50_ms": 4.1, "p99_ms": 8.0, "target_p99_ms": 10, "target_met": True}
    return {"leads": 1_000_000, "claim_ms": {"p50": 5.2, "p99": p99}, "target_p99_ms": 10, "target_met": met,
            "reference_round_trip_ms": {"p50": 0.2, "p99": 0.5},
            "busy_floor": {"agents": 200, "claims_per_s": 130.5, "p50_ms": 100.0, "p99_ms": 220.0,
                           "empty_answers_while_leads_were_due": 0},
            "http": {"claim": http, "settle": http, "floor": {**http, "target_p99_ms": 20}}}


def write(root, name, body, mtime):
    path = root / name
    path.write_text(json.dumps(body))
    os.utime(path, (mtime, mtime))


@pytest.fixture
def durable(monkeypatch):
    monkeypatch.setattr(figures, "machine", lambda: "2 cores, a CPU; innodb_flush_log_at_trx_commit=1, sync_binlog=0")
    monkeypatch.setattr(figures, "commit", lambda root: "abc1234")


def test_record_adds_a_results_file_once_and_render_takes_the_latest(tmp_path, durable):
    # 2026-12-01 10:00:00 and 11:00:00 UTC as the files' times.
    write(tmp_path, "bench-results-claim.json", claim_results(11.4, False), 1796119200)
    first = figures.new_entries([], root=tmp_path)
    assert [entry["bench"] for entry in first] == ["bench-results-claim.json"]
    assert first[0]["at"] == "2026-12-01T10:00:00Z" and first[0]["commit"] == "abc1234"
    assert figures.new_entries(first, root=tmp_path) == [], "a file already recorded is not recorded again"

    write(tmp_path, "bench-results-claim.json", claim_results(7.6, True), 1796122800)
    second = figures.new_entries(first, root=tmp_path)
    assert len(second) == 1
    table = figures.table(first + second)
    claim_row = next(line for line in table.splitlines() if line.startswith("| progressive claim in process"))
    assert "p99 7.6 ms" in claim_row and "| met |" in claim_row and "2026-12-01 11:00, abc1234" in claim_row
    assert "p99 11.4 ms" not in table
    assert "| `bench-results-intake.json` | not measured yet |" in table
    assert "innodb_flush_log_at_trx_commit=1" in table
    readme = figures.readme_lines(first + second)
    assert "p99 7.6 ms" in readme and "2026-12-01 11:00 UTC, abc1234; 2 cores, a CPU" in readme


def test_a_target_missed_says_so(tmp_path, durable):
    write(tmp_path, "bench-results-claim.json", claim_results(11.4, False), 1796119200)
    table = figures.table(figures.new_entries([], root=tmp_path))
    claim_row = next(line for line in table.splitlines() if line.startswith("| progressive claim in process"))
    assert "| **not met** |" in claim_row and "p99 < 10 ms" in claim_row
