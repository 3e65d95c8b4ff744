"""What a newcomer meets first (issue #41): the docs site's sources, the README, the public pages a
browser asks for without a key, and the `dialerapi` command finding `make run`'s database."""

import importlib.metadata
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import requests

from conftest import SECRET, cli, shell_env
from dialerapi.plumbing.config import SETTINGS

# Each module here takes 8 s or more (setup.cfg `slow`): handed out first in a parallel run.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


# --- item 5: /docs and /favicon.ico without a key --------------------------------------------------

def test_docs_without_its_slash_redirects_to_swagger_ui(client):
    response = client.get("/docs")
    assert response.status_code == 308 and response.headers["Location"] == "/docs/"
    assert client.get("/docs/").status_code == 200


def test_the_icon_is_served_without_asking_for_a_key(client):
    response = client.get("/favicon.ico")
    assert response.status_code == 200 and response.mimetype == "image/vnd.microsoft.icon"
    assert response.data[:4] == b"\x00\x00\x01\x00", "an ICO file"
    assert client.get("/panel/favicon.ico").data == response.data, "the panel's own link to it"


def endpoint_rows():
    """(paths, auth) of the rows of the endpoints table (docs/reference/endpoints.md)."""
    rows = []
    for line in (DOCS / "reference" / "endpoints.md").read_text(encoding="utf-8").splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if line.startswith("|") and len(cells) == 4 and cells[1].startswith("/"):
            rows.append(({path.strip() for path in cells[1].split(",")}, cells[2]))
    return rows


def test_every_public_path_is_in_the_endpoints_table_as_needing_no_key(app):
    """Every path a browser or a probe may open without a key is listed with Auth `no`, so the
    table an operator reads is the one the key check applies (web.auth). /ws checks its own
    credential in the handshake (sides/agent/socket.py), and its row says which; so does /board/ws
    (sides/supervisor/board.py, issue #49)."""
    public = {rule.rule for rule in app.url_map.iter_rules()
              if getattr(app.view_functions[rule.endpoint], "public", False)}
    listed = set().union(*(paths for paths, auth in endpoint_rows() if auth == "no"))
    # Swagger UI's own assets and the panel's files are under the /docs/ and /panel/ rows.
    assert {path for path in public if not path.startswith(("/docs/<", "/panel/<", "/board/<"))
            and path not in ("/ws", "/board/ws")} == listed
    assert [auth for paths, auth in endpoint_rows() if paths == {"/ws"}] == [
        "the agent's token (`?token=` or a header), or the key in a header"]
    assert [auth for paths, auth in endpoint_rows() if paths == {"/board/ws"}] == [
        "a supervisor token (`?token=` or a header), or `SUPERVISOR_SECRET` in a header"]
    keys = (DOCS / "operations" / "keys.md").read_text(encoding="utf-8")
    anyone = next(line for line in keys.splitlines() if line.startswith("| anyone | none |"))
    assert set(re.findall(r"`(/[^`]*)`", anyone)) == listed, "the key table's row of paths open to anyone"


# The Auth column of docs/reference/endpoints.md and the callers each opens (web.auth's roles).
AUTH_ROLES = {
    "yes": {"crm"},
    "yes, or the agent's token": {"crm", "agent"},
    "`SUPERVISOR_SECRET` or a supervisor token": {"supervisor"},
    "yes, or `SUPERVISOR_SECRET` or a supervisor token": {"crm", "supervisor"},
    "yes, or `MONITOR_SECRET`": {"crm", "monitor"},
    "`ENGINE_SECRET`": {"engine"},
}


def route_roles(app):
    """{path as the docs write it: set of roles} of every route that takes a credential."""
    from dialerapi.web import auth

    roles = {}
    for rule in app.url_map.iter_rules():
        view = app.view_functions[rule.endpoint]
        if not getattr(view, "public", False):
            path = re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", rule.rule)
            # A path's methods may open to different callers (GET and PATCH /api/campaigns/{form_type}).
            roles.setdefault(path, set()).update(auth.roles_for(view, rule.rule))
    return roles


def key_table_paths(keys, caller):
    """The paths (method words dropped) in the `opens` cell of the key table's row of `caller`."""
    row = next(line for line in keys.splitlines() if line.startswith(f"| {caller} |"))
    return {re.sub(r"^[A-Z]+ ", "", path) for path in re.findall(r"`([A-Z]* ?/[^`]*)`", row.split(" | ")[2])}


def test_every_key_and_path_the_docs_name_is_the_one_the_routes_declare(app):
    """Issue #66: keys.md said the CRM key opens every path but /engine/, yet GET /api/board refused it;
    security.md's public paths left out /board/ and /favicon.ico. The endpoints table's Auth, the
    key table's rows and security.md's public paths are held to the routes' own declarations
    (web.auth: @public, @opens, /engine/ for the engine)."""
    roles = route_roles(app)
    documented = {}
    for paths, auth_text in endpoint_rows():
        if auth_text in AUTH_ROLES:
            for path in paths:
                documented.setdefault(path, set()).update(AUTH_ROLES[auth_text])
    assert documented == roles, "the endpoints table's Auth column"
    keys = (DOCS / "operations" / "keys.md").read_text(encoding="utf-8")
    by_role = {role: {path for path, opened in roles.items() if role in opened}
               for role in ("crm", "engine", "monitor", "agent", "supervisor")}
    crm_row = key_table_paths(keys, "the CRM (and the agent desktop's server)")
    closed_to_crm = set(roles) - by_role["crm"]
    assert {path for path in crm_row if path != "/ws" and not path.startswith("/api/agent-tokens")} == {
        "/api/board", "/engine/"}
    assert closed_to_crm == {path for path in roles if path.startswith("/engine/")} | {"/api/board"}
    assert key_table_paths(keys, "the dialing engine") == {"/engine/"}
    assert by_role["engine"] == {path for path in roles if path.startswith("/engine/")}
    assert key_table_paths(keys, "the monitor (cron, Prometheus)") == by_role["monitor"]
    assert key_table_paths(keys, "one agent's panel (a browser)") == by_role["agent"] | {"/ws"}
    assert key_table_paths(keys, "a supervisor's board (a browser)") - {"/api/supervisor-tokens"} == \
        by_role["supervisor"] | {"/board/ws"}
    security = (DOCS / "operations" / "security.md").read_text(encoding="utf-8")
    public = security.split("**Public without a key**:")[1].split("Everything else")[0]
    listed = set().union(*(paths for paths, auth_text in endpoint_rows() if auth_text == "no"))
    assert set(re.findall(r"`(/[^`]*)`", public)) == listed, "security.md's public paths"


# --- item 5: the command finds make run's database ---------------------------------------------------

@pytest.mark.long
def test_the_command_finds_the_private_database_of_make_run(database_url, sql, tmp_path):
    """Without DATABASE_URL anywhere, `dialerapi` asks scripts/devdb.sh for the private database
    `make run` leaves running (DEVDB_DIR, DEVDB_PORT and DEVDB_NAME place it, as for make)."""
    url = urlsplit(database_url)
    if url.password or url.username not in (None, "root") or url.hostname != "127.0.0.1":
        pytest.skip("the private database of scripts/devdb.sh is root@127.0.0.1; this run's is not")
    sql("INSERT INTO sales_agents (id, extension, name) VALUES (777, '4777', 'Found It')")
    devdb = tmp_path / "mariadb"
    devdb.mkdir()
    (devdb / "mysqld.pid").write_text(str(os.getpid()))  # a live process: scripts/devdb.sh says running
    env = {name: value for name, value in os.environ.items() if name != "DATABASE_URL"}
    env.update(WS_SECRET=SECRET, DEVDB_DIR=str(devdb), DEVDB_PORT=str(url.port), DEVDB_NAME=url.path.lstrip("/"))
    command = [str(Path(sys.executable).with_name("dialerapi")), "agents", "list", "--json"]
    found = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert found.returncode == 0, found.stderr
    assert [agent["id"] for agent in json.loads(found.stdout)] == [777]
    (devdb / "mysqld.pid").unlink()
    stopped = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert stopped.returncode == 1
    assert "DATABASE_URL is required" in stopped.stderr and "make db-start" in stopped.stderr


# --- item 5: the tour at any hour ---------------------------------------------------------------------

@pytest.mark.long
def test_config_set_moves_the_work_window_so_the_tour_runs_at_any_hour(database_url, sql):
    result = cli(database_url, "config", "set", "work_start=00:00", "work_end=23:59:59")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["work_start"] == "00:00:00"
    stored = sql.one("SELECT CAST(work_start AS CHAR) AS s, CAST(work_end AS CHAR) AS e FROM sales_dialer_config")
    assert stored == {"s": "00:00:00", "e": "23:59:59"}
    for refused, named in (("work_end=00:00", "work_end"), ("work_start=25:00", "work_start")):
        result = cli(database_url, "config", "set", refused)
        assert result.returncode == 2 and named in result.stderr, result.stderr
    assert sql.one("SELECT CAST(work_end AS CHAR) AS e FROM sales_dialer_config")["e"] == "23:59:59"


# --- items 1, 3 and 6: the README and the sources of the site ----------------------------------------

def test_the_readme_is_short_and_links_only_to_pages_that_exist():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) < 300
    links = re.findall(r"\]\((docs/[^)#]+)(?:#[^)]*)?\)", readme)
    assert links and [link for link in links if not (ROOT / link).exists()] == []


# Each reader the README's and docs/index.md's "You are" tables give their pages, in this order.
READERS = ("CRM developer", "engine developer", "agent-desktop developer", "supervisor", "operator",
           "compliance officer", "planner", "contributor")


def reader_pages(text, prefix):
    """{reader: [page paths under docs/]} of a "You are" table, its links starting with `prefix`."""
    rows = {}
    for line in text.splitlines():
        found = re.match(r"\| An? \*\*([^*]+)\*\*[^|]*\| (.*) \|$", line)
        if found:
            links = re.findall(r"\]\(([^)#]+)", found.group(2))
            assert all(link.startswith(prefix) for link in links), line
            rows[found.group(1)] = [link.removeprefix(prefix) for link in links]
    return rows


def site_navigation():
    """The pages mkdocs.yml's nav lists (its Python tags, which only the build needs, read as None)."""
    import yaml

    class Loader(yaml.SafeLoader):
        pass

    Loader.add_multi_constructor("tag:yaml.org,2002:python/", lambda loader, suffix, node: None)
    pages = []

    def walk(entry):
        if isinstance(entry, str):
            pages.append(entry)
        for child in entry.values() if isinstance(entry, dict) else entry if isinstance(entry, list) else ():
            walk(child)

    walk(yaml.load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"), Loader)["nav"])
    return pages


def test_the_readme_and_the_index_give_every_reader_the_same_pages():
    index = reader_pages((DOCS / "index.md").read_text(encoding="utf-8"), "")
    readme = reader_pages((ROOT / "README.md").read_text(encoding="utf-8"), "docs/")
    assert tuple(index) == READERS
    assert readme == index
    assert [page for pages in index.values() for page in pages if not (DOCS / page).exists()] == []


def test_every_page_is_linked_from_the_index_or_the_navigation():
    index = (DOCS / "index.md").read_text(encoding="utf-8")
    linked = set(site_navigation()) | set(re.findall(r"\]\(([^)#]+\.md)", index))
    pages = {str(path.relative_to(DOCS)) for path in DOCS.rglob("*.md")}
    assert sorted(pages - linked) == []


def test_every_setting_has_a_meaning_for_the_generated_reference():
    assert [name for name, setting in SETTINGS.items() if len(setting.doc) < 10] == []


# --- items 1 and 4: the README's tour, as written -------------------------------------------------------

def tour_block():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = readme.split("<!-- tour -->")[1].split("<!-- /tour -->")[0]
    return block.strip().removeprefix("```sh").removesuffix("```")


@pytest.mark.long
def test_the_readme_tour_pushes_claims_and_settles_as_it_says(live_server, database_url, sql):
    """The tour's commands run as a newcomer pastes them (in the checkout, keys in the environment, as
    `set -a; . ./.env` leaves them) against a real gunicorn, inside the work window: the clocks of
    the gunicorn and of the commands are set, so the machine's own does not matter."""
    result = subprocess.run(["bash", "-euo", "pipefail", "-c", tour_block()], cwd=ROOT,
                            env=shell_env(live_server, DATABASE_URL=database_url), capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    pushed, _ = json.JSONDecoder().raw_decode(result.stdout)  # curl's answer comes first
    assert [(lead["oli_id"], lead["status"]) for lead in pushed["leads"]] == [("OLI-1", "inserted"), ("OLI-2", "inserted")]
    assert "== both calls settled" in result.stderr
    leads = sql("SELECT oli_id, dial_status FROM sales_master ORDER BY oli_id")
    assert leads == [{"oli_id": "OLI-1", "dial_status": "Received"}, {"oli_id": "OLI-2", "dial_status": "Received"}]
    assert sql("SELECT form_type FROM sales_agent_skills WHERE agent_id = 501") == [{"form_type": "home_loan"}]
    token = result.stdout.strip().splitlines()[-1]
    opened = requests.get(live_server.url("/api/missed-activities"), headers={"Authorization": f"Bearer {token}"},
                          timeout=10)
    assert opened.status_code == 200, opened.text


def test_every_variable_gunicorn_reads_is_documented():
    """The settings reference lists deploy/gunicorn.conf.py's ENVIRONMENT (docs/gen_reference.py): a
    variable read there and not listed would be missing from it. RUNTIME_DIRECTORY is systemd's;
    DIALERAPI_INSTANCE is written there for the app, not read from the operator."""
    sys.path.insert(0, str(DOCS))
    try:
        from gen_reference import gunicorn_environment
    finally:
        sys.path.remove(str(DOCS))
    source = (ROOT / "deploy" / "gunicorn.conf.py").read_text(encoding="utf-8")
    read = set(re.findall(r"""os\.environ(?:\.get|\.setdefault)?[(\[]["']([A-Z_]+)["']""", source))
    documented = set(gunicorn_environment()) | set(SETTINGS) | {"RUNTIME_DIRECTORY", "DIALERAPI_INSTANCE"}
    assert read and read - documented == set()


# --- items 2 and 3 in a browser: the built site, and the console of /panel/ ----------------------------------------



@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The docs site built as `make docs` builds it, served by a plain static server."""
    from conftest import free_port

    built = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "DISABLE_MKDOCS_2_WARNING": "true"}
    mkdocs = Path(sys.executable).with_name("mkdocs")
    result = subprocess.run([str(mkdocs), "build", "--strict", "--quiet", "--site-dir", str(built)], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1",
                               "--directory", str(built)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            try:
                requests.get(f"http://127.0.0.1:{port}/", timeout=1)
                break
            except requests.ConnectionError:
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.terminate()
        server.wait(timeout=10)


def wait_until(check, seconds=30):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.2)
    pytest.fail("the page did not show it in time")


@pytest.mark.long
def test_the_sites_api_reference_renders_the_services_own_document(browser, site):
    """reference/api/ runs Swagger UI over the OpenAPI document generated at build time, with no CDN:
    every operation of the service is on the page."""
    from selenium.webdriver.common.by import By

    from dialerapi.openapi.document import build

    browser.get(f"{site}/reference/api/")
    frame = wait_until(lambda: browser.find_elements(By.CSS_SELECTOR, "iframe.swagger-ui-iframe"))[0]
    browser.switch_to.frame(frame)
    try:
        shown = wait_until(lambda: {element.get_attribute("data-path")
                                    for element in browser.find_elements(By.CSS_SELECTOR, ".opblock-summary-path")})
        assert shown == set(build()["paths"])
    finally:
        browser.switch_to.default_content()
    assert [entry for entry in browser.get_log("browser") if entry["level"] == "SEVERE"] == []


@pytest.mark.long
def test_the_sites_cli_and_settings_references_list_every_command_and_setting(site):
    from dialerapi.cli import main

    cli_page = requests.get(f"{site}/reference/cli/", timeout=10).text
    # The commands Flask's plugins install (flask-limiter's `limiter`) join the group once a command
    # has run in this process, whichever test ran one first: the page names them all.
    plugins = {entry.name for entry in importlib.metadata.entry_points(group="flask.commands")}
    assert [name for name in sorted(set(main.commands) | plugins) if f"dialerapi {name}" not in cli_page] == []
    settings_page = requests.get(f"{site}/reference/settings/", timeout=10).text
    assert [name for name in SETTINGS if f"<code>{name}</code>" not in settings_page] == []


def test_the_panel_opens_with_no_error_in_the_browsers_console(browser, live_server):
    """Issue #41: the browser's own GET /favicon.ico was a 401, an error in the agent's console."""
    browser.get_log("browser")  # drop what earlier pages logged
    browser.get_log("performance")
    browser.get(f"{live_server.base_url}/panel/")
    # The browser asks for the favicon after the page loads: wait for its answer.
    network = []

    def favicon_answers():
        network.extend(json.loads(entry["message"])["message"] for entry in browser.get_log("performance"))
        return [event["params"]["response"]["status"] for event in network
                if event["method"] == "Network.responseReceived"
                and event["params"]["response"]["url"].endswith("/favicon.ico")]

    assert wait_until(favicon_answers) == [200]
    errors = [entry["message"] for entry in browser.get_log("browser") if entry["level"] == "SEVERE"]
    assert [message for message in errors if "favicon" in message or " 401 " in message] == []
