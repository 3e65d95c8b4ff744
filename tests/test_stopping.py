"""Issue #47 item 4: a `make test` stopped halfway (Ctrl-C, or SIGTERM as `timeout` sends it) leaves
nothing of its own running within 10 s, a checkout's private MariaDB has a port of its own, and a
taken port is named with the process that holds it."""

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

import faketime
from conftest import ROOT

STOP_SECONDS = 10
# Written into the copy's tests: every kind of server a suite starts, then a wait to be stopped in.
HOLDING_TEST = '''
import os
import threading
from pathlib import Path

from conftest import start_nginx
from test_limits import redis_url  # noqa: F401 (a fixture)


def test_holds_every_kind_of_server(browser, redis_url, live_server, tmp_path):
    start_nginx(live_server, tmp_path)
    browser.get(live_server.base_url + "/panel/")
    Path(os.environ["HOLDING_READY"]).write_text(str(os.getpid()))
    threading.Event().wait(600)
'''
SERVERS = ("mariadbd", "gunicorn", "nginx", "redis-server", "chromium", "chromedriver", "pytest")


def copy_of_the_checkout(destination):
    """The checkout's files without its virtualenv, private database, built site or keys."""
    shutil.copytree(ROOT, destination, symlinks=True, ignore=shutil.ignore_patterns(
        ".git", ".venv", "var", "site", ".env", "__pycache__", ".pytest_cache", "*.egg-info"))
    return destination


def process_table():
    """{pid: (parent pid, start time, command line)} of every process."""
    table = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                argv = cmdline.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        if fields[0] != "Z":
            table[int(entry)] = (int(fields[1]), fields[19], argv)
    return table


def descendants(root):
    """{(pid, start time): command line} of every process below `root`, seen through their parents
    (not through the mark scripts/supervise.py finds them by)."""
    table = process_table()
    found, frontier = {}, [root]
    while frontier:
        parent = frontier.pop()
        for pid, (ppid, started, argv) in table.items():
            if ppid == parent:
                found[(pid, started)] = argv
                frontier.append(pid)
    return found


def still_running(processes):
    """The ones of `processes` ({(pid, start time): command line}) that still run."""
    table = process_table()
    return {key: argv for key, argv in processes.items() if key[0] in table and table[key[0]][1] == key[1]}


def wait_for(condition, seconds, what):
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"{what} within {seconds} s")
        time.sleep(0.1)


@pytest.mark.long
@pytest.mark.slow
@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "timeout"])
def test_a_make_test_stopped_halfway_leaves_nothing_of_its_own_running(tmp_path, stop):
    checkout = copy_of_the_checkout(tmp_path / "checkout")
    (checkout / "tests" / "test_holding.py").write_text(HOLDING_TEST)
    ready = tmp_path / "ready"
    # Its own private MariaDB (no DATABASE_URL), on the real clock, as a newcomer's `make test` runs.
    env = {key: value for key, value in faketime.real_clock(os.environ).items()
           if key != "DATABASE_URL" and not key.startswith(("PYTEST_", "DEVDB_"))}
    env.update(HOLDING_READY=str(ready))
    venv = Path(sys.executable).parent.parent
    # A session of its own, as a terminal's foreground job: the stop goes to the whole group.
    # -o: the virtualenv is this one, installed already; never reinstalled from the copy.
    make = subprocess.Popen(["make", "-C", str(checkout), "-o", f"{venv}/bin/.installed", "test", f"VENV={venv}",
                             "PYTEST_ARGS=-n 2 -p no:cacheprovider tests/test_holding.py"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    running = {}
    try:
        wait_for(lambda: ready.exists() or make.poll() is not None, 180, "the copy's servers did not start")
        assert make.poll() is None, make.stdout.read().decode(errors="replace")
        running = descendants(make.pid)
        for server in SERVERS:
            assert any(server in argv for argv in running.values()), \
                f"no {server} running: {sorted({argv.split()[0] for argv in running.values()})}"
        port = int(subprocess.run([str(checkout / "scripts" / "devdb.sh"), "port"], capture_output=True, text=True,
                                  check=True).stdout)
        assert f"--port={port}" in " ".join(running.values()), "the copy's MariaDB listens on its checkout's port"

        stopped_at = time.monotonic()
        os.killpg(make.pid, stop)
        wait_for(lambda: not still_running(running), STOP_SECONDS,
                 f"still running after {signal.Signals(stop).name}: {still_running(running)}")
        stopped_in = time.monotonic() - stopped_at
        assert make.wait(timeout=STOP_SECONDS) != 0
        assert subprocess.run([sys.executable, str(ROOT / "scripts" / "port_owner.py"), str(port)]).returncode == 0, \
            "the copy's MariaDB port is free again"
        print(f"{signal.Signals(stop).name}: everything stopped in {stopped_in:.1f} s")
    finally:
        for pid, _ in still_running(descendants(make.pid) | running):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass


def test_two_checkouts_have_private_databases_on_ports_of_their_own(tmp_path):
    def port(directory):
        env = {**os.environ, "DEVDB_DIR": str(directory)}
        env.pop("DEVDB_PORT", None)
        return int(subprocess.run([str(ROOT / "scripts" / "devdb.sh"), "port"], env=env, capture_output=True,
                                  text=True, check=True).stdout)

    first, second = port(tmp_path / "one" / "var" / "mariadb"), port(tmp_path / "two" / "var" / "mariadb")
    assert first != second and 20000 <= first < 30000 and 20000 <= second < 30000
    assert port(tmp_path / "one" / "var" / "mariadb") == first, "the same checkout keeps its port"


def test_a_taken_port_is_named_with_its_process_and_how_to_stop_it(tmp_path):
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        port = listener.getsockname()[1]
        env = {**os.environ, "DEVDB_DIR": str(tmp_path / "db"), "DEVDB_PORT": str(port)}
        result = subprocess.run([str(ROOT / "scripts" / "devdb.sh"), "start"], env=env, capture_output=True,
                                text=True, timeout=120)
    assert result.returncode == 1
    assert f"port {port} is taken by" in result.stderr and f"pid {os.getpid()}" in result.stderr, result.stderr
    assert f"`kill {os.getpid()}`" in result.stderr
    assert not (tmp_path / "db" / "data").exists(), "nothing was initialised for a database that cannot start"


# --- scripts/pytest_groups.sh: the parallel run, then the `serial` tests alone ---------------------

GROUPS_PROJECT = {
    "pytest.ini": "[pytest]\naddopts = -p no:cacheprovider -n 2\nmarkers =\n    serial: alone\n    slow: first\n"
                  "    clock: time\n",
    # The suite's own hooks, loaded under another name than this project's conftest.
    "conftest.py": "import importlib.util\nimport sys\n\nsys.path.insert(0, {tests!r})\n"
                   "spec = importlib.util.spec_from_file_location('suite_conftest', {tests!r} + '/conftest.py')\n"
                   "suite = importlib.util.module_from_spec(spec)\nspec.loader.exec_module(suite)\n"
                   "pytest_addoption = suite.pytest_addoption\n"
                   "pytest_collection_modifyitems = suite.pytest_collection_modifyitems\n"
                   "pytest_sessionfinish = suite.pytest_sessionfinish\n"
                   "pytest_configure = suite.pytest_configure\n",
    "test_where.py": "import os\nfrom pathlib import Path\n\nimport pytest\n\n\n"
                     "def where(name):\n    Path(name).write_text(os.environ.get('PYTEST_XDIST_WORKER', 'main'))\n\n\n"
                     "def test_one():\n    where('one')\n\n\ndef test_two():\n    where('two')\n\n\n"
                     "@pytest.mark.serial\ndef test_alone():\n    where('alone')\n",
}


@pytest.mark.long
@pytest.mark.parametrize("selection, serial_run", [("test_where.py", True), ("test_where.py::test_one", False)])
def test_the_serial_tests_run_after_the_parallel_run_in_one_process(tmp_path, selection, serial_run):
    for name, text in GROUPS_PROJECT.items():
        (tmp_path / name).write_text(text.format(tests=str(ROOT / "tests")))
    env = {key: value for key, value in os.environ.items() if not key.startswith("PYTEST_")}
    result = subprocess.run([str(ROOT / "scripts" / "pytest_groups.sh"), "groups", str(Path(sys.executable).with_name("pytest")),
                             selection], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert (tmp_path / "one").read_text().startswith("gw"), "in a worker process"
    assert result.stdout.strip().splitlines()[-1].startswith("groups: passed in ")
    if serial_run:
        assert (tmp_path / "two").read_text().startswith("gw")
        assert (tmp_path / "alone").read_text() == "main", "the serial test ran in the serial run, without workers"
        assert len(re.findall(r"^=+ .*passed.* in ", result.stdout, re.M)) == 2, "two pytest runs"
    else:
        assert not (tmp_path / "alone").exists()
        assert len(re.findall(r"^=+ .*passed.* in ", result.stdout, re.M)) == 1, \
            "no serial run when the selection has no serial test"
