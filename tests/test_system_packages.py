"""The bootstrap of the Debian packages (scripts/system-packages.sh, issue #63): one apt transaction
before any test, a stop during it never leaves dpkg half-done, an interrupted dpkg is repaired
before anything else, and no test calls apt.

Each test runs the real script against fake `apt-get`, `dpkg` and `dpkg-query` first on PATH,
which log their calls; the fake apt-get's install waits for the test to release it, so a stop
lands while "dpkg" runs. The fakes' state and the policy-rc.d the script writes live in tmp_path
(DPKG_ADMINDIR, POLICY_RC_D), never the machine's.
"""

import os
import importlib.util
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from conftest import ROOT, require_program

SCRIPT = ROOT / "scripts" / "system-packages.sh"
_spec = importlib.util.spec_from_file_location("supervise", ROOT / "scripts" / "supervise.py")
supervise = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(supervise)
BOUND = 30.0

FAKE_APT_GET = """#!/bin/sh
echo "apt-get $*" >>"$FAKE/calls"
case " $* " in
  *" install "*)
    echo $$ >"$FAKE/install-started"
    n=0
    while [ ! -e "$FAKE/release" ]; do
      n=$((n + 1)); [ $n -gt 600 ] && exit 9
      sleep 0.05
    done
    echo done >"$FAKE/install-finished" ;;
esac
exit 0
"""
FAKE_DPKG = """#!/bin/sh
echo "dpkg $*" >>"$FAKE/calls"
case "$*" in
  --audit) [ -e "$FAKE/interrupted" ] && echo "The following packages are only half configured: chromium" ;;
  "--configure -a") rm -f "$FAKE/interrupted" ;;
esac
exit 0
"""
# Every package missing.
FAKE_DPKG_QUERY = """#!/bin/sh
exit 1
"""


@pytest.fixture
def fake():
    """The fakes' folder and an environment that puts them first on PATH. Outside pytest's tmp_path,
    whose parents only root may enter: one test runs the script as nobody."""
    tmp_path = Path(tempfile.mkdtemp(prefix="dialerapi-apt-"))
    tmp_path.chmod(0o777)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, text in (("apt-get", FAKE_APT_GET), ("dpkg", FAKE_DPKG), ("dpkg-query", FAKE_DPKG_QUERY)):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    (tmp_path / "admin" / "updates").mkdir(parents=True)
    env = {**os.environ, "FAKE": str(tmp_path), "PATH": f"{bin_dir}:{os.environ['PATH']}",
           "DPKG_ADMINDIR": str(tmp_path / "admin"), "POLICY_RC_D": str(tmp_path / "policy-rc.d")}
    env.pop("DIALERAPI_RUN", None)
    yield tmp_path, env
    shutil.rmtree(tmp_path, ignore_errors=True)


def wait_for(predicate, what):
    deadline = time.monotonic() + BOUND
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail(f"not within {BOUND} s: {what}")
        time.sleep(0.02)


def runs_ours(pid, folder):
    """Whether process `pid` is the script run on this test's fakes (another worker may run its own)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:  # ended meanwhile
        return False
    return cmdline.startswith(f"bash\0{SCRIPT}".encode()) and f"FAKE={folder}".encode() in environ


def calls(folder):
    path = folder / "calls"
    return path.read_text().splitlines() if path.exists() else []


@pytest.mark.skipif(os.geteuid() != 0, reason="the script installs as root only")
@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_stop_during_the_install_lets_dpkg_finish_then_leaves_nothing_behind(fake, stop):
    folder, env = fake
    stderr = folder / "stderr"
    with open(stderr, "w") as err:
        # A process group of its own, as `timeout`, CI and a terminal's foreground job give it.
        process = subprocess.Popen(["bash", str(SCRIPT)], env=env, stdout=subprocess.DEVNULL, stderr=err,
                                   start_new_session=True)
    try:
        wait_for(lambda: (folder / "install-started").exists(), "the fake apt-get's install started")
        apt_pid = int((folder / "install-started").read_text())
        assert (folder / "policy-rc.d").exists(), "no service may start during the install"
        os.killpg(process.pid, stop)
        wait_for(lambda: "stop asked" in stderr.read_text(), "the script heard the stop")
        assert process.poll() is None, "the script ended while apt was still installing"
        assert supervise.alive(apt_pid), "the stop reached apt-get: dpkg would be left interrupted"
        (folder / "release").touch()
        process.wait(timeout=BOUND)
    finally:
        (folder / "release").touch()
        if process.poll() is None:
            process.kill()
    assert process.returncode == 128 + stop
    assert (folder / "install-finished").exists()
    assert not (folder / "policy-rc.d").exists()
    install, = [call for call in calls(folder) if " install " in call]
    packages = subprocess.run([str(SCRIPT), "list"], capture_output=True, text=True, check=True).stdout.split()
    assert install.split()[-len(packages):] == packages, "one apt transaction for every package"
    assert "nothing is left half-done" in stderr.read_text()


@pytest.mark.skipif(os.geteuid() != 0, reason="the script installs as root only")
def test_an_interrupted_dpkg_is_repaired_before_anything_else(fake):
    folder, env = fake
    (folder / "interrupted").touch()
    (folder / "release").touch()
    check = subprocess.run([str(SCRIPT), "check"], env=env, capture_output=True, text=True)
    assert check.returncode == 1
    assert "dpkg --configure -a" in check.stderr
    subprocess.run([str(SCRIPT)], env=env, capture_output=True, text=True, check=True)
    made = [call for call in calls(folder) if call != "dpkg --audit"]
    assert made[0] == "dpkg --configure -a"
    assert any(" install " in call for call in made[1:])
    assert not (folder / "interrupted").exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="runs the script as nobody with setpriv")
def test_without_root_it_names_the_commands_and_installs_nothing(fake):
    folder, env = fake
    (folder / "interrupted").touch()
    result = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", str(SCRIPT)], env=env,
                            capture_output=True, text=True)
    assert result.returncode == 1
    assert "run 'sudo dpkg --configure -a'" in result.stderr
    assert "run 'sudo apt-get install --no-install-recommends mariadb-server" in result.stderr
    assert not any(call.startswith("apt-get") or "--configure" in call for call in calls(folder))


def test_a_missing_program_fails_at_once_naming_the_install():
    with pytest.raises(pytest.fail.Exception, match=r"no-such-program is missing .*run `make install`"):
        require_program("no-such-program", "no-such-package")


def test_no_test_or_script_but_the_bootstrap_calls_apt():
    """Tests and targets never install: a stop during a test's apt broke dpkg for every later run."""
    callers = []
    for folder in ("tests", "scripts", "bench"):
        for path in (ROOT / folder).rglob("*"):
            if path.is_file() and path.suffix in (".py", ".sh", "") and path != SCRIPT and path != Path(__file__):
                text = path.read_text(errors="replace")
                if "apt-get install -y" in text or '"apt-get"' in text or "'apt-get'" in text:
                    callers.append(str(path.relative_to(ROOT)))
    assert callers == []


@pytest.mark.skipif(os.geteuid() != 0, reason="the script installs as root only")
def test_a_supervisor_stopping_its_target_leaves_the_install_to_finish(fake):
    """scripts/supervise.py SIGKILLs what carries its mark 7 s after a stop; the bootstrap drops the
    mark, so a stopped `make test` (or a test running one) never kills a running dpkg."""
    folder, env = fake
    process = subprocess.Popen([sys.executable, str(ROOT / "scripts" / "supervise.py"), "bash", str(SCRIPT)],
                               env={**env, "DIALERAPI_RUN": "outer"}, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        wait_for(lambda: (folder / "install-started").exists(), "the fake apt-get's install started")
        apt_pid = int((folder / "install-started").read_text())
        script_pid = next(pid for pid in map(int, filter(str.isdigit, os.listdir("/proc"))) if runs_ours(pid, folder))
        os.kill(process.pid, signal.SIGTERM)
        process.wait(timeout=BOUND)
        assert supervise.alive(apt_pid) and supervise.alive(script_pid)
    finally:
        (folder / "release").touch()
    wait_for(lambda: not supervise.alive(script_pid), "the script ended after apt")
    assert (folder / "install-finished").exists()
    assert not (folder / "policy-rc.d").exists()
