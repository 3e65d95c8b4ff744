"""The examples of the docs site, each held by a test that sends its request now (issue #41, item
4; tests/docs_examples.py says how). Most are here; a few are held by the test of their feature,
which reads the example the same way (the caption under each example names its test)."""

import json
import re
from pathlib import Path

import pytest

from docs_examples import CAPTION, DOCS, ROOT, answers, assert_shape, example, examples, picked, present, text_table


# --- the meta-test ---------------------------------------------------------------------------------------

def test_every_example_names_the_test_that_holds_it():
    """Under each example, `Checked by `tests/FILE::TEST``; TEST is in FILE and reads the example."""
    names = examples()
    assert len(names) >= 12
    for name, (page, _) in names.items():
        text = page.read_text(encoding="utf-8")
        after = text[text.index(f"<!-- example: {name} -->"):].split("```", 2)[2]
        found = CAPTION.search(after.split("\n\n", 2)[1])
        assert found, f"{page.name}: example {name} does not say which test holds it"
        source = (ROOT / "tests" / found.group(1)).read_text(encoding="utf-8")
        test = re.search(rf"\ndef {found.group(2)}\(.*?(?=\n(?:def |@|# ---)|\Z)", source, re.S)
        assert test, f"{page.name}: example {name} names {found.group(0)}, which is not there"
        assert f'example("{name}")' in test.group(0), f"{found.group(0)} does not read example {name}"


# --- CRM integration: Push leads ----------------------------------------------------------------------------

EXAMPLE_BATCH = ROOT / "examples" / "crm-batch.json"


def test_push_answer(client, auth):
    shown = answers(example("push-answer"))[0]
    response = client.post("/api/leads", data=EXAMPLE_BATCH.read_bytes(), headers=auth, content_type="application/json")
    assert response.status_code == 201
    real = response.get_json()
    by_oli_id = {entry["oli_id"]: entry for entry in real["leads"]}
    assert_shape(shown, {**real, "leads": [by_oli_id[entry["oli_id"]] for entry in shown["leads"]]})
    for entry in shown["leads"]:
        assert picked(entry, ["status", "callback_scheduled_at"]) == picked(by_oli_id[entry["oli_id"]],
                                                                            ["status", "callback_scheduled_at"])


def test_push_rows(client, auth, sql):
    client.post("/api/leads", data=EXAMPLE_BATCH.read_bytes(), headers=auth, content_type="application/json")
    for row in text_table(example("push-rows")):
        stored = sql.one("SELECT phone_number, client_name, dial_status, callback_scheduled_at FROM sales_master "
                         "WHERE oli_id = %s", (row["oli_id"],))
        shown = {key: None if value == "NULL" else value for key, value in row.items() if key != "oli_id"}
        assert {key: None if value is None else str(value) for key, value in stored.items()} == shown


def test_push_refused(client, auth, sql):
    shown = answers(example("push-refused"))[0]
    disposed = sql.one("SELECT disposed_priority_id AS id FROM sales_dialer_config")["id"]
    lead = {"oli_id": "CRM-2026-000001", "phone_number": "+91 98765 43210", "client_name": "Meena Sundaram",
            "form_type": "home_loan", "priority_id": 2}
    bad = {**lead, "oli_id": "CRM-2026-000002", "phone_number": "12-34", "data_id": "mine", "priority_id": disposed}
    response = client.post("/api/leads", json={"leads": [lead, bad]}, headers=auth)
    assert response.status_code == 400
    assert sorted(response.get_json()["details"], key=json.dumps) == sorted(shown["details"], key=json.dumps)
    assert {**response.get_json(), "details": None} == {**shown, "details": None}
    assert sql("SELECT oli_id FROM sales_master") == []


# --- CRM integration: after-call actions ----------------------------------------------------------------------

def test_held_callback(client, auth, new_lead, sql, database_url):
    from conftest import cli

    block = example("held-callback")
    pending, settled = answers(block)
    sql("INSERT INTO sales_agents (id, extension, name) VALUES (501, '4501', 'Kavya Iyer')")
    new_lead("CRM-2026-000042")
    sql("UPDATE sales_master SET previous_dial_status = dial_status, dial_status = 'Calling', isReserved = 1 "
        "WHERE oli_id = 'CRM-2026-000042'")
    body = {"oliId": "CRM-2026-000042", "scheduledAt": "2026-11-23 11:30", "agentId": 501,
            "callbackType": "future_day", "remarks": "call after salary credit"}
    response = client.post("/api/pending-callbacks", json=body, headers=auth)
    assert f"HTTP/1.1 {response.status_code} {response.status.split(' ', 1)[1]}" in block
    assert_shape(pending, response.get_json())
    assert picked(pending, ["pending.scheduled_at", "pending.status"]) == picked(
        response.get_json(), ["pending.scheduled_at", "pending.status"])
    result = cli(database_url, "settle", "CRM-2026-000042", "no_answer", "--agent-id", "501", "--hangup-by", "customer")
    assert result.returncode == 0, result.stderr
    real = json.loads(result.stdout)
    assert_shape(settled, real)
    meaning = ["lead.dial_status", "lead.priority_id", "lead.callback_scheduled_at", "lead.call_count",
               "applied.action", "applied.scheduled_at"]
    assert picked(settled, meaning) == picked(real, meaning)
    row = text_table(block.split('WHERE oli_id = \'CRM-2026-000042\'"\n')[1])[0]
    stored = sql.one("SELECT oli_id, dial_status, priority_id, callback_scheduled_at, isReserved FROM sales_master "
                     "WHERE oli_id = 'CRM-2026-000042'")
    assert {key: str(value) for key, value in stored.items()} == row


# --- CRM integration: personal callbacks --------------------------------------------------------------------

def personal_floor(sql, new_lead):
    sql("INSERT INTO sales_agents (id, extension, name, panel_active, ami_idle) VALUES (501, '4501', 'Kavya Iyer', 1, 1)")
    sql("INSERT INTO sales_agent_skills (agent_id, form_type) VALUES (501, 'home_loan')")
    new_lead("CRM-2026-000042", client_name="मीना शर्मा")


def test_personal_callback_filed(client, auth, sql, new_lead, database_url):
    from conftest import cli

    shown = answers(example("personal-callback-filed"))[0]
    personal_floor(sql, new_lead)
    body = {"oliId": "CRM-2026-000042", "scheduledAt": "2026-11-27 11:00", "agentId": 501, "callbackAgentId": 501}
    response = client.post("/api/pending-callbacks", json=body, headers=auth)
    assert response.status_code == 200
    assert_shape(shown, response.get_json())
    meaning = ["ok", "pending.oli_id", "pending.scheduled_at", "pending.status"]
    assert picked(shown, meaning) == picked(response.get_json(), meaning)
    assert cli(database_url, "config", "set", "personal_callback_fallback_minutes=30").returncode == 0


def test_personal_callbacks_event(client, auth, sql, new_lead, frozen_clock):
    """The frame's data is what GET /api/callbacks answers (docs/crm/personal-callbacks.md), one hour
    before the callback falls due."""
    from datetime import datetime

    shown = answers(example("personal-callbacks-event"))[0]
    assert shown["event"] == "dialer.callbacks"
    personal_floor(sql, new_lead)
    client.post("/api/pending-callbacks", json={"oliId": "CRM-2026-000042", "scheduledAt": "2026-11-27 11:00",
                                                "agentId": 501, "callbackAgentId": 501}, headers=auth)
    frozen_clock(datetime(2026, 11, 27, 10, 0))
    real = client.get("/api/callbacks?agentId=501", headers=auth).get_json()
    real.pop("ok")
    assert_shape(shown["data"], real)
    item = shown["data"]["items"][0]
    assert {**real["items"][0], "data_id": item["data_id"]} == item
    assert picked(shown["data"], ["agent_id", "fallback_minutes"]) == picked(real, ["agent_id", "fallback_minutes"])


# --- Agent desktops ------------------------------------------------------------------------------------------

@pytest.mark.long
def test_roster_commands(sql, database_url, tmp_path):
    """Each command of the roster example runs, and `agents list` prints the columns and the row shown."""
    from conftest import cli

    block = example("roster-commands")
    commands = [line[2:].split("  #")[0].strip() for line in block.splitlines() if line.startswith("$ ")]
    (tmp_path / "floor.csv").write_text("id,extension,name,skills,priorities\n502,4502,Arun Raja,home_loan,\n")
    listed = None
    for command in commands:
        args = [arg.strip('"') for arg in re.findall(r'"[^"]*"|\S+', command)][1:]
        args = [str(tmp_path / "floor.csv") if arg == "floor.csv" else arg for arg in args]
        result = cli(database_url, *args)
        assert result.returncode == 0, (command, result.stderr)
        if args[:2] == ["agents", "list"]:
            listed = result.stdout
    shown = block.split("$ dialerapi agents list\n")[1].split("\n$ ")[0]
    header, row = shown.splitlines()
    assert re.split(r"\s{2,}", listed.splitlines()[0].strip()) == re.split(r"\s{2,}", header.strip())
    assert re.split(r"\s{2,}", row.strip()) in [re.split(r"\s{2,}", line.strip()) for line in listed.splitlines()]
    assert sql("SELECT id FROM sales_agents") == [{"id": 502}]


def agent_on_a_call(client, auth, engine_auth, sql, new_lead):
    """Agent 501 (home_loan) connected to CRM-2026-000007, its missed activity open."""
    sql("INSERT INTO sales_agents (id, extension, name, panel_active, ami_idle) VALUES (501, '4501', 'Kavya Iyer', 1, 1)")
    sql("INSERT INTO sales_agent_skills (agent_id, form_type) VALUES (501, 'home_loan')")
    new_lead("CRM-2026-000007")
    claimed = client.post("/engine/claim", json={"mode": "progressive", "agent_id": 501, "request_id": "c-1"},
                          headers=engine_auth).get_json()
    assert claimed["lead"]["oli_id"] == "CRM-2026-000007"
    client.post("/engine/call-connected", json={"oli_id": "CRM-2026-000007", "agent_id": 501, "request_id": "m-1"},
                headers=engine_auth)
    return claimed["lead"]


def settle(client, engine_auth, lead):
    response = client.post("/engine/settle", json={
        "oli_id": lead["oli_id"], "outcome": "answered", "agent_id": 501, "started_at": "2026-11-21 10:00:00",
        "reservation_id": lead["reservation_id"], "call_id": "x-1"}, headers=engine_auth)
    assert response.status_code == 200, response.get_json()


def test_missed_activities_answer(client, auth, engine_auth, sql, new_lead):
    shown = answers(example("missed-activities-answer"))[0]
    lead = agent_on_a_call(client, auth, engine_auth, sql, new_lead)
    settle(client, engine_auth, lead)
    real = client.get("/api/missed-activities?agentId=501", headers=auth).get_json()
    assert_shape(shown, real)
    meaning = ["ok", "agent_id", "blocked", "grace_minutes", "items.0.oli_id", "items.0.call_type",
               "items.0.extension", "items.0.overdue"]
    assert picked(shown, meaning) == picked(real, meaning)


def test_socket_transcript(live_server, client, auth, engine_auth, sql, new_lead):
    """The frames of the socket example, in order, from a real gunicorn: the state on connect, the
    state again after the engine's settle, and the answers to the pause and resume frames sent."""
    import time

    from conftest import mint_token
    from wsclient import Client

    block = example("socket-transcript")
    shown = [json.loads(line[3:]) for line in block.splitlines() if line.startswith("<- ")]
    lead = agent_on_a_call(client, auth, engine_auth, sql, new_lead)
    url = live_server.base_url.replace("http://", "ws://") + "/ws?token=" + mint_token(live_server.base_url, 501)
    socket = Client.connect(url)
    received = []

    def read(count):
        for _ in range(count):
            raw = socket.receive(timeout=5)
            assert raw is not None, f"no frame; got {received}"
            received.append(json.loads(raw))

    try:
        read(3)
        settle(client, engine_auth, lead)
        read(2)
        for sent in ({"code": "other", "note": "network down at my desk"}, {"code": "left"},
                     {"code": "other", "note": "x" * 90}):
            socket.send(json.dumps({"event": "agent.pause", "data": sent}))
            read(1)
        socket.send(json.dumps({"event": "agent.resume", "data": {}}))
        read(1)
    finally:
        socket.close()
        deadline = time.monotonic() + 5
        while sql.one("SELECT panel_active FROM sales_agents WHERE id = 501")["panel_active"]:
            assert time.monotonic() < deadline
            time.sleep(0.05)
    assert [frame["event"] for frame in received] == [frame["event"] for frame in shown]
    for frame, real in zip(shown, received, strict=True):
        assert_shape(frame, real, frame["event"])
        meaning = [f"data.{key}" for key in ("blocked", "reason", "code", "note", "agent_id") if key in frame["data"]]
        assert picked(frame, meaning) == picked(real, meaning), frame["event"]
    ended = [frame["data"]["items"][0]["ended_at"] for frame in received if frame["event"] == "dialer.missed_activities"]
    assert ended[0] is None and ended[1] is not None


def test_at_capacity(database_url, sql, tmp_path):
    from conftest import SECRET, start_gunicorn
    from wsclient import Client, ConnectionClosed

    block = example("at-capacity")
    shown = json.loads(block.splitlines()[0][3:])
    code = int(re.search(r"\(close (\d+)", block).group(1))
    sql("INSERT INTO sales_agents (id, extension, name) VALUES (501, '4501', 'Kavya Iyer'), (502, '4502', 'Arun Raja')")
    sockets = start_gunicorn(database_url, tmp_path / "sockets.log", pool="sockets", WS_MAX_SOCKETS="1")
    url = sockets.base_url.replace("http://", "ws://") + "/ws?agentId="
    try:
        first = Client.connect(url + "501", headers={"X-API-Key": SECRET})
        assert first.receive(timeout=5) is not None
        refused = Client.connect(url + "502", headers={"X-API-Key": SECRET})
        assert json.loads(refused.receive(timeout=5)) == shown
        with pytest.raises(ConnectionClosed) as closed:
            refused.receive(timeout=5)
        assert closed.value.reason == code
        first.close()
    finally:
        sockets.stop()


# --- Dialing engine ------------------------------------------------------------------------------------------

def test_engine_call(client, engine_auth, sql, new_lead):
    """The engine's whole call (docs/engine/api.md), its answers cut to some fields as the page says."""
    from datetime import datetime

    block = example("engine-call")
    shown = answers(block)
    sql("INSERT INTO sales_agents (id, extension, name) VALUES (501, '4501', 'Kavya Iyer')")
    sql("INSERT INTO sales_agent_skills (agent_id, form_type) VALUES (501, 'credit_card')")
    new_lead("CRM-2026-000002", form_type="credit_card")

    def engine(operation, body):
        response = client.post(f"/engine/{operation}", json=body, headers=engine_auth)
        assert response.status_code == 200, response.get_json()
        return response.get_json()

    claim = {"mode": "progressive", "agent_id": 501, "request_id": "c-20261122-0002"}
    settle = {"oli_id": "CRM-2026-000002", "outcome": "no_answer", "agent_id": 501, "started_at": "2026-11-21 09:58:40",
              "hangup_by": "customer", "hangup_cause": "19", "call_id": "1763797520.78"}
    real = [engine("agent-state", {"agent_id": 501, "panel_active": True, "ami_idle": True}),
            engine("claim", claim), engine("claim", claim)]
    engine("agent-state", {"agent_id": 501, "ami_idle": False})
    real += [engine("call-connected", {"oli_id": "CRM-2026-000002", "agent_id": 501, "request_id": "m-20261122-0002"}),
             engine("settle", settle), engine("settle", settle),
             engine("agent-state", {"agent_id": 501, "ami_idle": True, "wrapup_seconds": 20})]
    assert len(shown) == len(real)
    meaning = ("ok", "applied", "agent.available", "agent.unavailable_reason", "agent.outbound_blocked", "lead.oli_id",
               "lead.dial_status", "lead.previous_dial_status", "lead.call_count", "lead.isReserved",
               "lead.last_dial_result")
    for n, (example_answer, answer) in enumerate(zip(shown, real, strict=True)):
        assert_shape(example_answer, answer, f"answer {n + 1}", cut=True)
        keys = [key for key in meaning if present(example_answer, key)]
        assert picked(example_answer, keys) == picked(answer, keys), f"answer {n + 1}"
    output = block.split("FROM sales_missed_activities WHERE oli_id = 'CRM-2026-000002'\"\n")[1].split("\n$ ")[0]
    attempts, activities = text_table(output.split("\nid ")[0]), text_table("id " + output.split("\nid ")[1])
    stored = sql.one("SELECT oli_id, agent_id, result FROM sales_call_attempts WHERE oli_id = 'CRM-2026-000002'")
    assert {key: str(value) for key, value in stored.items()} == {key: attempts[0][key] for key in stored}
    activity = sql.one("SELECT ended_at, due_at FROM sales_missed_activities WHERE oli_id = 'CRM-2026-000002'")
    shown_gap = (datetime.fromisoformat(activities[0]["due_at"]) - datetime.fromisoformat(activities[0]["ended_at"]))
    assert activity["due_at"] - activity["ended_at"] == shown_gap
    assert set(activities[0]) == {"id", "ended_at", "due_at", "due_at_utc"}


# --- Operations ----------------------------------------------------------------------------------------------

def test_health_answer(app, client, sql):
    """/health with one socket host's heartbeat written, AMI not configured (the tests' settings),
    after the background checks ran once."""
    from conftest import MONITOR_SECRET
    from dialerapi.upkeep import health

    shown = answers(example("health-answer"))[0]
    health.check_database(app)
    health.check_ami(app)
    app.extensions["dialerapi.events"].write_heartbeat()
    response = client.get("/health", headers={"Authorization": f"Bearer {MONITOR_SECRET}"})
    real = response.get_json()
    assert response.status_code == 200
    assert_shape(shown, real, counts=("answer.metrics.requests", "answer.metrics.pending_actions",
                                      "answer.metrics.calling_rules.by_form_type"))
    meaning = ["ok", "status", "checks.db.ok", "checks.db.cluster", "checks.ami.ok", "checks.ami.configured",
               "checks.ami.error", "metrics.agent_sockets.hosts.0.draining", "schema.pending", "schema.current"]
    assert picked(shown, meaning) == picked(real, meaning)


def test_access_log_line(live_server):
    import time

    import requests

    shown = answers(example("access-log-line"))[0]
    request_id = "docs-example-" + str(time.monotonic_ns())
    assert requests.get(live_server.url(shown["path"]), headers={"X-Request-ID": request_id}, timeout=10).ok
    deadline = time.monotonic() + 5
    while True:
        lines = [json.loads(line) for line in Path(live_server.log).read_text(encoding="utf-8").splitlines()
                 if request_id in line and line.startswith("{")]
        if lines or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert len(lines) == 1
    assert_shape(shown, lines[0])
    meaning = ["levelname", "name", "message", "method", "path", "status"]
    assert picked(shown, meaning) == picked(lines[0], meaning)


def test_agent_token(client, auth, sql, database_url):
    """The token answer, for an agentId and for an extension, and the command's token opening the
    agent's missed activities (its one HTTP path)."""
    from conftest import cli

    block = example("agent-token")
    shown = answers(block)[0]
    sql("INSERT INTO sales_agents (id, extension, name) VALUES (501, '4501', 'Kavya Iyer')")
    for body in ({"agentId": 501}, {"extension": "4501"}):
        response = client.post("/api/agent-tokens", json=body, headers=auth)
        assert response.status_code == 201
        assert_shape(shown, response.get_json())
        assert picked(shown, ["ok", "agent_id", "expires_in"]) == picked(response.get_json(), ["ok", "agent_id", "expires_in"])
    command = next(line[2:].split("  #")[0].split() for line in block.splitlines() if line.startswith("$ dialerapi"))
    result = cli(database_url, *command[1:])
    assert result.returncode == 0, result.stderr
    token = result.stdout.strip().splitlines()[-1]
    opened = client.get("/api/missed-activities?agentId=501", headers={"Authorization": f"Bearer {token}"})
    assert opened.status_code == 200


# --- every command line --------------------------------------------------------------------------------------

def command_lines():
    """(page, line) of every `dialerapi ...` command in a code block of docs/ and the README."""
    for page in [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]:
        for block in re.findall(r"```[a-z]*\n(.*?)\n```", page.read_text(encoding="utf-8"), re.S):
            for line in block.splitlines():
                found = re.match(r"(?:\$ )?(?:\S*/)?dialerapi (.*)", line.strip())
                if found and not line.strip().startswith("#"):
                    yield page, found.group(1).split("  #")[0].split(" # ")[0].strip()


def test_every_dialerapi_command_line_in_the_docs_names_commands_and_options_that_exist():
    """A command shown without its output (do-not-call, the library's commands, the operator's list)
    still runs: its subcommands and each `--option` exist (click's own tables), so a renamed option
    fails here. `a|b` lists alternatives; placeholders in capitals and [...] are read as words."""
    from dialerapi.cli import main

    checked = 0
    for page, line in command_lines():
        commands = [main]
        for word in (word.strip("[]") for word in line.replace(";", " ").split()):
            names = word.split("|")
            if word == "dialerapi":  # a second command on the line (`...; dialerapi bridge OLI_ID`)
                commands = [main]
            elif word.startswith("--"):
                options = {opt for command in commands for param in command.params
                           for opt in (*param.opts, *param.secondary_opts)}
                assert word.split("=")[0] in options, f"{page.name}: `dialerapi {line}`: no option {word}"
            elif len(commands) == 1 and hasattr(commands[0], "commands") and names[0] in commands[0].commands:
                missing = [name for name in names if name not in commands[0].commands]
                assert not missing, f"{page.name}: `dialerapi {line}`: no command {missing}"
                commands = [commands[0].commands[name] for name in names]
        checked += 1
    assert checked >= 30


# --- the simulator ----------------------------------------------------------------------------------------------

def figure_names(text):
    """The figures of a `dialerapi simulate` report, in order, its section headers, and the rows of
    its first table (issue #52: the law's abandon rate, per form_type)."""
    table = text.split("\nfigure ", 1)[1].split("\n\n", 1)[0].splitlines()[1:]
    law = text.split("\nform_type ", 1)[1].split("\n\n", 1)[0].splitlines()[1:]
    sections = re.findall(r"^(abandon rate as the service and the law count it|first run \(seed \d+\):|final status"
                          r"|tries \(call_count\)|callbacks due in the run:)", text, re.M)
    return [line.split()[0] for line in table], sections, [line.split()[0] for line in law]


@pytest.mark.long
@pytest.mark.slow
def test_simulate_report(database_url):
    """The report's figures and sections are the example's (docs/simulator.md, a 3-day run of
    docs/campaign.toml); here one short day, two runs, the same two form_types."""
    from conftest import cli

    block = example("simulate-report")
    command = block.splitlines()[0][2:].split()
    assert command[:3] == ["dialerapi", "simulate", "--scenario"]
    result = cli(database_url, "simulate", "--scenario", str(ROOT / command[3]), "--days", "1", "--hours", "1",
                 "--replications", "2", "--agents", "4", "--skills", '{"home_loan": 3, "credit_card": 2}',
                 "--leads", "80")
    assert result.returncode == 0, result.stderr
    assert figure_names(result.stdout) == figure_names(block)
