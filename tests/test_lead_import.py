"""`dialerapi leads import` (issue #39): lead lists from CSV, Excel and JSON Lines files through the
push's rules (lead-intake-api.md, POST /api/leads; decisions.md D3, D4), every row accounted for
once across an interruption."""

import csv
import io
import json
import os
import signal
import subprocess
import sys
import threading
import time
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import openpyxl
import pytest

import faketime
from conftest import DEFAULT_NOW, ROOT, SECRET, aware, cli
from dialerapi.cli import lead_import, lead_sinks

HEADER = ["oli_id", "phone_number", "client_name", "form_type", "priority_id", "callback_scheduled_at"]
# The bad rows' kinds, each with the field the push names (None: the row has no cells to push).
BAD = {
    "phone": ("phone_number", lambda n: [f"L-{n:06d}", "12", f"Client {n}", "home_loan", "2", ""]),
    "priority": ("priority_id", lambda n: [f"L-{n:06d}", f"98{n:08d}", f"Client {n}", "home_loan", "99", ""]),
    "final": ("priority_id", lambda n: [f"L-{n:06d}", f"98{n:08d}", f"Client {n}", "home_loan", "3", ""]),
    "name": ("client_name", lambda n: [f"L-{n:06d}", f"98{n:08d}", "", "home_loan", "2", ""]),
    "callback": ("callback_scheduled_at", lambda n: [f"L-{n:06d}", f"98{n:08d}", f"Client {n}", "home_loan", "2",
                                                     "2026-11-23 11:30"]),
    "cells": (None, lambda n: [f"L-{n:06d}", f"98{n:08d}", f"Client {n}"]),
}


def good_row(n):
    callback = "2026-11-23 11:30:00" if n % 7 == 0 else ""
    return [f"L-{n:06d}", f"+91 98{n:08d}", f"Client {n} शर्मा", "home_loan", "1" if callback else "2", callback]


def lead_list(count, bad_every=100):
    """`count` rows, one in `bad_every` bad (cycling through BAD): (rows, {oli_id: field} of the bad)."""
    rows, bad = [], {}
    kinds = list(BAD)
    for n in range(count):
        if n % bad_every == bad_every - 1:
            field, make = BAD[kinds[(n // bad_every) % len(kinds)]]
            rows.append(make(n))
            bad[f"L-{n:06d}"] = field
        else:
            rows.append(good_row(n))
    return rows, bad


def write_csv(path, rows, delimiter=",", bom=True):
    with open(path, "w", newline="", encoding="utf-8-sig" if bom else "utf-8") as file:
        writer = csv.writer(file, delimiter=delimiter)
        writer.writerow(HEADER)
        writer.writerows(rows)
    return path


def read_rejects(path):
    """[{line, field, error, oli_id, cells}] of a CSV rejects file; `cells` the row as it was read."""
    with open(path, newline="", encoding="utf-8") as file:
        header, *rows = list(csv.reader(file))
    assert header == ["line", "field", "error", *HEADER]
    return [{"line": int(row[0]), "field": row[1] or None, "error": row[2], "oli_id": row[3], "cells": row[3:]}
            for row in rows]


def stored(sql):
    return {row["oli_id"]: row for row in sql(
        "SELECT oli_id, phone_number, client_name, form_type, priority_id, callback_scheduled_at, dial_status,"
        " data_id FROM sales_master")}


def summary(result):
    assert result.stdout.strip(), result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_a_csv_loads_its_good_rows_and_its_bad_rows_go_to_the_rejects_file_with_their_lines(database_url, sql,
                                                                                          tmp_path):
    rows, bad = lead_list(1200)
    # A quoted name over two lines: every later record starts a line further on.
    rows[10][2] = "Client 10\nsecond line"
    path = write_csv(tmp_path / "vendor.csv", rows)
    result = cli(database_url, "leads", "import", str(path), "--batch-size", "100", "--json")
    assert result.returncode == 1, result.stderr
    counts = summary(result)
    good = len(rows) - len(bad)
    assert {key: counts[key] for key in ("rows", "inserted", "updated", "skipped_in_flight", "rejected")} == {
        "rows": 1200, "inserted": good, "updated": 0, "skipped_in_flight": 0, "rejected": len(bad)}
    rejects = read_rejects(tmp_path / "vendor.rejects.csv")
    # Line numbers: the header is line 1, row n starts on line n + 2, one more after row 10's line break.
    assert [(r["oli_id"], r["line"], r["field"]) for r in rejects] == [
        (oli_id, int(oli_id[2:]) + 2 + (int(oli_id[2:]) > 10), field) for oli_id, field in bad.items()]
    by_id = {row[0]: row for row in rows}
    assert all(reject["cells"] == by_id[reject["oli_id"]] and reject["error"] for reject in rejects)
    leads = stored(sql)
    assert sorted(leads) == sorted(row[0] for row in rows if row[0] not in bad)
    assert leads["L-000010"]["client_name"] == "Client 10\nsecond line"
    assert leads["L-000007"]["callback_scheduled_at"] == datetime(2026, 11, 23, 11, 30)
    assert leads["L-000007"]["dial_status"] == "Callback" and leads["L-000001"]["dial_status"] == "Pending"
    assert leads["L-000001"]["phone_number"] == "919800000001"
    assert not (tmp_path / "vendor.csv.import-state.json").exists()


def test_every_row_good_exits_0_and_leaves_no_rejects_file(database_url, sql, tmp_path):
    path = write_csv(tmp_path / "clean.csv", [good_row(n) for n in range(20)], bom=False)
    result = cli(database_url, "leads", "import", str(path))
    assert result.returncode == 0, result.stderr
    assert "inserted" in result.stdout and len(stored(sql)) == 20
    assert not (tmp_path / "clean.rejects.csv").exists()


def write_xlsx(path, rows):
    """The rows as a spreadsheet user types them: phone numbers and priorities as numbers, the
    callback time as a date-time cell."""
    book = openpyxl.Workbook()
    sheet = book.active
    sheet.append(HEADER)
    for row in rows:
        cells = list(row)
        digits = cells[1].replace("+", "").replace(" ", "")
        if digits.isdigit():
            cells[1] = int(digits)
        if len(cells) > 4 and cells[4].isdigit():
            cells[4] = int(cells[4])
        if len(cells) > 5:
            cells[5] = datetime.strptime(cells[5][:16], "%Y-%m-%d %H:%M") if cells[5] else None
        sheet.append(cells)
    book.save(path)
    return path


def write_jsonl(path, rows):
    with open(path, "w", encoding="utf-8") as file:
        for row in rows:
            lead = dict(zip(HEADER, row))
            if "priority_id" in lead:
                lead["priority_id"] = int(lead["priority_id"])
            if lead.get("callback_scheduled_at") == "":
                del lead["callback_scheduled_at"]
            file.write(json.dumps(lead, ensure_ascii=False) + "\n")
    return path


@pytest.mark.long
def test_excel_and_json_lines_load_the_same_leads_as_the_csv(database_url, sql, tmp_path):
    rows, bad = lead_list(300, bad_every=25)
    loaded, refused = {}, {}
    for fmt, write in (("csv", write_csv), ("xlsx", write_xlsx), ("jsonl", write_jsonl)):
        sql("DELETE FROM sales_master")
        path = write(tmp_path / f"list.{fmt}", rows)
        result = cli(database_url, "leads", "import", str(path), "--json")
        assert result.returncode == 1, (fmt, result.stderr)
        assert summary(result)["rejected"] == len(bad), fmt
        loaded[fmt] = {oli_id: {k: v for k, v in lead.items() if k != "data_id"} for oli_id, lead in stored(sql).items()}
        rejects = tmp_path / f"list.rejects.{'jsonl' if fmt == 'jsonl' else 'csv'}"
        if fmt == "jsonl":
            # No header line: a lead's line is one less than in the CSV.
            lines = [json.loads(line) for line in rejects.read_text().splitlines()]
            refused[fmt] = {json.loads(r["row"])["oli_id"]: r["line"] + 1 for r in lines}
        else:
            refused[fmt] = {r["oli_id"]: r["line"] for r in read_rejects(rejects)}
    assert len(loaded["csv"]) == len(rows) - len(bad)
    assert loaded["xlsx"] == loaded["csv"] and loaded["jsonl"] == loaded["csv"]
    assert refused["csv"] == {oli_id: int(oli_id[2:]) + 2 for oli_id in bad}
    assert refused["xlsx"] == refused["csv"] and refused["jsonl"] == refused["csv"]


def test_a_lead_live_on_a_call_is_skipped_and_left_as_it_is(database_url, sql, tmp_path, new_lead, make_live):
    new_lead("L-000001")
    before = make_live("L-000001")
    path = write_csv(tmp_path / "live.csv", [good_row(n) for n in range(3)])
    result = cli(database_url, "leads", "import", str(path), "--workers", "1", "--json")
    assert result.returncode == 0, result.stderr
    counts = summary(result)
    assert (counts["inserted"], counts["updated"], counts["skipped_in_flight"]) == (2, 0, 1)
    after = sql.lead("L-000001")
    assert (after["client_name"], after["data_id"], after["dial_status"]) == \
        (before["client_name"], before["data_id"], "Calling")


def test_do_not_call_numbers_are_stored_and_counted(database_url, sql, tmp_path):
    assert cli(database_url, "dnc", "add", "+919800000001").returncode == 0
    path = write_csv(tmp_path / "dnc.csv", [good_row(n) for n in range(3)])
    counts = summary(cli(database_url, "leads", "import", str(path), "--json"))
    assert (counts["inserted"], counts["do_not_call"]) == (3, 1)


def test_columns_mapped_set_and_ignored(database_url, sql, tmp_path):
    path = tmp_path / "vendor.csv"
    path.write_text("CustomerID;Mobile;Name;City\nV-1;9876543210;Meena;Pune\nV-2;9876543211;Ravi;Agra\n",
                    encoding="utf-8")
    result = cli(database_url, "leads", "import", str(path), "--map", "oli_id=CustomerID,phone_number=Mobile",
                 "--map", "client_name=Name", "--set", "form_type=home_loan", "--set", "priority_id=2",
                 "--ignore", "City", "--json")
    assert result.returncode == 0, result.stderr
    leads = stored(sql)
    assert sorted(leads) == ["V-1", "V-2"]
    assert (leads["V-2"]["phone_number"], leads["V-2"]["client_name"], leads["V-2"]["form_type"],
            leads["V-2"]["priority_id"]) == ("9876543211", "Ravi", "home_loan", 2)


@pytest.mark.parametrize("options, named", [
    ([], "'City'"),
    (["--ignore", "City", "--map", "oli_id=CustomerID"], "'phone_number'"),
    (["--ignore", "City", "--map", "oli_id=CustomerID,phone_number=Phone"], "'Phone'"),
    (["--ignore", "City", "--map", "oli_id=CustomerID,phone_number=Mobile,client_name=Name", "--set",
      "form_type=home_loan", "--set", "priority_id=2", "--set", "agent=7"], "'agent'"),
    (["--ignore", "Town"], "'Town'"),
])
def test_an_unknown_or_missing_column_is_refused_before_any_row_is_written(database_url, sql, tmp_path, options,
                                                                           named):
    path = tmp_path / "vendor.csv"
    path.write_text("CustomerID,Mobile,Name,City\nV-1,9876543210,Meena,Pune\n", encoding="utf-8")
    result = cli(database_url, "leads", "import", str(path), *options)
    assert result.returncode == 2
    assert named in result.stderr
    assert sql("SELECT COUNT(*) AS n FROM sales_master")[0]["n"] == 0
    assert not (tmp_path / "vendor.rejects.csv").exists()


def test_a_dry_run_writes_the_rejects_file_and_no_lead(database_url, sql, tmp_path):
    rows, bad = lead_list(500, bad_every=50)
    path = write_csv(tmp_path / "try.csv", rows)
    result = cli(database_url, "leads", "import", str(path), "--dry-run", "--json")
    assert result.returncode == 1, result.stderr
    counts = summary(result)
    assert (counts["rows"], counts["valid"], counts["rejected"], counts["dry_run"]) == (500, 500 - len(bad), len(bad),
                                                                                        True)
    assert [r["oli_id"] for r in read_rejects(tmp_path / "try.rejects.csv")] == list(bad)
    assert sql("SELECT COUNT(*) AS n FROM sales_master")[0]["n"] == 0
    assert not (tmp_path / "try.csv.import-state.json").exists()


def test_other_encodings_and_delimiters(database_url, sql, tmp_path):
    path = tmp_path / "latin.txt"
    with open(path, "w", newline="", encoding="latin-1") as file:
        file.write("oli_id\tphone_number\tclient_name\tform_type\tpriority_id\nE-1\t9876543210\tJosé Müller\thome_loan\t2\n")
    result = cli(database_url, "leads", "import", str(path), "--encoding", "latin-1", "--delimiter", "tab")
    assert result.returncode == 0, result.stderr
    assert stored(sql)["E-1"]["client_name"] == "José Müller"


def test_a_row_with_bytes_that_are_not_utf8_is_refused_and_kept_as_it_was(database_url, sql, tmp_path):
    path = tmp_path / "bytes.csv"
    path.write_bytes(b"oli_id,phone_number,client_name,form_type,priority_id\n"
                     b"B-1,9876543210,Good,home_loan,2\nB-2,9876543211,Jos\xe9,home_loan,2\n")
    result = cli(database_url, "leads", "import", str(path))
    assert result.returncode == 1, result.stderr
    assert sorted(stored(sql)) == ["B-1"]
    rejects = (tmp_path / "bytes.rejects.csv").read_bytes().splitlines()
    assert rejects[1] == b"3,client_name,must be valid Unicode text,B-2,9876543211,Jos\xe9,home_loan,2"


def start_import(database_url, *args):
    environment = faketime.environment({**os.environ, "DATABASE_URL": database_url, "WS_SECRET": SECRET},
                                       at=aware(DEFAULT_NOW))
    return subprocess.Popen([str(Path(sys.executable).with_name("dialerapi")), "leads", "import", *args], cwd=ROOT,
                            env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_for_rows(state, rows, process):
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if state.exists():
            try:
                if json.loads(state.read_text())["rows"] >= rows:
                    return
            except ValueError:  # replaced as we read it
                pass
        assert process.poll() is None, process.communicate()
        time.sleep(0.02)
    pytest.fail("the import made no progress")


@pytest.mark.long
@pytest.mark.slow
@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGKILL])
def test_an_import_killed_halfway_and_resumed_stores_every_good_row_once(database_url, sql, tmp_path, stop):
    rows, bad = lead_list(20_000)
    path = write_csv(tmp_path / "big.csv", rows)
    state = tmp_path / "big.csv.import-state.json"
    process = start_import(database_url, str(path), "--batch-size", "50")
    wait_for_rows(state, 4_000, process)
    process.send_signal(stop)
    out, err = process.communicate(timeout=120)
    good = {row[0] for row in rows if row[0] not in bad}
    if stop == signal.SIGINT:
        assert process.returncode == 2, err
        assert "--resume" in err
    else:
        assert process.returncode == -signal.SIGKILL
    saved = json.loads(state.read_text())
    assert 4_000 <= saved["rows"] < len(rows)
    assert sql("SELECT COUNT(*) AS n FROM sales_master")[0]["n"] < len(good)
    # Without --resume, a second import refuses to start over by accident.
    refused = cli(database_url, "leads", "import", str(path))
    assert refused.returncode == 2 and "--resume" in refused.stderr
    result = cli(database_url, "leads", "import", str(path), "--resume", "--batch-size", "500", "--json")
    assert result.returncode == 1, result.stderr
    counts = summary(result)
    assert (counts["rows"], counts["rejected"]) == (len(rows), len(bad))
    assert counts["inserted"] + counts["updated"] == len(good)
    if stop == signal.SIGINT:
        assert counts["updated"] == 0
    assert set(stored(sql)) == good
    assert sql("SELECT COUNT(*) AS n FROM sales_master")[0]["n"] == len(good)
    assert [r["oli_id"] for r in read_rejects(tmp_path / "big.rejects.csv")] == list(bad)
    assert not state.exists()


def test_resume_refuses_a_changed_file(database_url, tmp_path):
    path = write_csv(tmp_path / "grown.csv", [good_row(n) for n in range(10)])
    Path(f"{path}.import-state.json").write_text(json.dumps({
        "version": 1, "fingerprint": {"size": 1, "mtime_ns": 1, "options": {}}, "rows": 5, "line": 6,
        "rejects": {"path": str(tmp_path / "grown.rejects.csv"), "bytes": 0}, "counts": {}}))
    result = cli(database_url, "leads", "import", str(path), "--resume")
    assert result.returncode == 2 and "--restart" in result.stderr


def test_a_remote_import_goes_through_the_http_api(database_url, sql, tmp_path, live_server):
    rows, bad = lead_list(700)
    path = write_csv(tmp_path / "remote.csv", rows)
    key = tmp_path / "crm.key"
    key.write_text(SECRET + "\n")
    result = cli(database_url, "leads", "import", str(path), "--url", live_server.base_url, "--key-file", str(key),
                 "--json", DATABASE_URL="")
    assert result.returncode == 1, result.stderr
    counts = summary(result)
    assert (counts["inserted"], counts["rejected"]) == (len(rows) - len(bad), len(bad))
    assert sorted(stored(sql)) == sorted(row[0] for row in rows if row[0] not in bad)
    assert [(r["oli_id"], r["field"]) for r in read_rejects(tmp_path / "remote.rejects.csv")] == list(bad.items())
    wrong = cli(database_url, "leads", "import", str(path), "--url", live_server.base_url, "--restart",
                DIALERAPI_KEY="wrong")
    assert wrong.returncode == 2 and "refused the key" in wrong.stderr


class Answers(BaseHTTPRequestHandler):
    """A service that answers each POST with the next of `script` [(status, headers, body)]."""

    script = []
    seen = []

    def do_POST(self):
        self.seen.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
        status, headers, body = self.script.pop(0)
        payload = json.dumps(body).encode()
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args):
        pass


@pytest.fixture
def answers():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Answers)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    Answers.script, Answers.seen = [], []
    yield f"http://127.0.0.1:{server.server_address[1]}", Answers
    server.shutdown()


def test_a_remote_push_waits_out_429_and_503_and_resends_after_refused_leads(answers):
    url, service = answers
    result = [{"oli_id": "A", "status": "inserted"}]
    service.script = [
        (429, {"Retry-After": "3"}, {"ok": False, "error": "rate_limited"}),
        (503, {"Retry-After": "5"}, {"ok": False, "error": "database_unavailable"}),
        (400, {}, {"ok": False, "error": "validation_failed",
                   "details": [{"field": "leads[1].phone_number", "message": "must be 10-15 digits"}]}),
        (201, {}, {"ok": True, "leads": result}),
    ]
    pauses = []
    sink = lead_sinks.RemoteSink(url, "key", sleep=pauses.append)
    assert sink.push([{"oli_id": "A"}, {"oli_id": "B"}]) == (
        result, {1: [{"field": "phone_number", "message": "must be 10-15 digits"}]})
    assert pauses == [3, 5]
    assert [body["leads"] for body in service.seen] == [[{"oli_id": "A"}, {"oli_id": "B"}]] * 3 + [[{"oli_id": "A"}]]


def test_a_remote_that_does_not_answer_stops_the_import(answers):
    url, service = answers
    service.script = [(503, {"Retry-After": "20"}, {"ok": False, "error": "database_unavailable"})] * 10
    pauses = []
    sink = lead_sinks.RemoteSink(url, "key", patience=50, sleep=pauses.append)
    with pytest.raises(lead_sinks.ImportStopped):
        sink.push([{"oli_id": "A"}])
    assert pauses == [20, 20]
    closed = lead_sinks.RemoteSink("http://127.0.0.1:9", "key", patience=10, sleep=pauses.append)
    with pytest.raises(lead_sinks.ImportStopped):
        closed.push([{"oli_id": "A"}])


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_progress_is_a_bar_on_a_terminal_and_plain_lines_elsewhere():
    moments = iter([0, 5, 12, 30])
    plain = io.StringIO()
    progress = lead_import.Progress(plain, 10_000, 0, monotonic=lambda: next(moments))
    progress.update(500)  # 5 s: no line yet
    progress.update(700)  # 12 s
    progress.update(1800)  # 30 s
    lines = plain.getvalue().splitlines()
    assert len(lines) == 2 and "\r" not in plain.getvalue()
    assert lines[1].startswith("3000/10000 rows, 100.00rows/s") and "elapsed" in lines[1] and "01:10 left" in lines[1]
    terminal = Terminal()
    bar = lead_import.Progress(terminal, 10_000, 0)
    bar.update(500)
    bar.close()
    assert "500/10.0k" in terminal.getvalue()


@pytest.mark.long
def test_the_documented_example(database_url, sql, tmp_path, new_lead, make_live):
    """docs/operations/lead-lists.md: the vendor's file, the command, its summary (text and --json)
    and its rejects file, as shown."""
    from docs_examples import answers, example

    path = tmp_path / "vendor.csv"
    path.write_text(example("lead-list-file") + "\n", encoding="utf-8")
    new_lead("CRM-2026-000102")
    make_live("CRM-2026-000102")
    new_lead("CRM-2026-000104")
    command, *shown = example("lead-list-import").splitlines()
    args = command.split()[2:]
    assert args[:3] == ["leads", "import", "vendor.csv"]
    result = cli(database_url, *args[:2], str(path), *args[3:])
    assert result.returncode == 1, result.stderr
    assert result.stdout.replace(f"{tmp_path}/", "").splitlines() == shown
    assert (tmp_path / "vendor.rejects.csv").read_text(encoding="utf-8").splitlines() == \
        example("lead-list-rejects").splitlines()
    assert sorted(stored(sql)) == ["CRM-2026-000101", "CRM-2026-000102", "CRM-2026-000104"]
    assert stored(sql)["CRM-2026-000104"]["client_name"] == "मीना शर्मा"
    sql("DELETE FROM sales_master WHERE oli_id IN ('CRM-2026-000101', 'CRM-2026-000104')")
    again = cli(database_url, *args[:2], str(path), *args[3:], "--json")
    real = json.loads(again.stdout)
    assert {**real, "file": "vendor.csv", "rejects_file": Path(real["rejects_file"]).name,
            "inserted": real["inserted"] - 1, "updated": real["updated"] + 1} == answers(example("lead-list-json"))[0]
