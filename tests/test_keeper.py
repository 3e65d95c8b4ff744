"""The keeper of the webhook dispatcher's process (dialerapi.upkeep.keeper, issue #64): a process it
keeps is started again after a SIGKILL, also when someone else reaped it first (gunicorn's master
reaps every child), and not after stop(). A real child (`sleep`) in each test; tests/faults/
test_webhook_faults.py kills the real dispatcher under gunicorn."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dialerapi.upkeep.keeper import Keeper

BOUND = 30.0
ROOT = Path(__file__).resolve().parent.parent


def wait_for(predicate, what):
    deadline = time.monotonic() + BOUND
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail(f"not within {BOUND} s: {what}")
        time.sleep(0.02)


def running(pid):
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


@pytest.fixture
def keeper():
    made = []

    def make():
        made.append(Keeper(["sleep", "1000"], restart_seconds=0.05))
        made[-1].start()
        wait_for(lambda: made[-1].pid is not None and running(made[-1].pid), "the first start")
        return made[-1]

    yield make
    for kept in made:
        kept.stop(timeout=5)


@pytest.mark.parametrize("reaped_elsewhere", [False, True], ids=["reaped-by-keeper", "reaped-by-the-master"])
def test_a_killed_process_is_started_again(keeper, reaped_elsewhere):
    kept = keeper()
    first = kept.pid
    os.kill(first, signal.SIGKILL)
    if reaped_elsewhere:
        try:
            os.waitpid(first, 0)  # as gunicorn's arbiter does in its SIGCHLD handler
        except ChildProcessError:  # the keeper reaped it first: it does when nobody else does
            pass
    wait_for(lambda: kept.pid != first and running(kept.pid), "a new process")
    assert kept.starts == 2


def test_after_stop_the_process_ends_and_is_not_started_again(keeper):
    kept = keeper()
    pid = kept.pid
    kept.stop(timeout=5)
    assert not running(pid)
    assert kept.starts == 1 and kept.pid == pid


def test_a_start_that_fails_is_tried_again(tmp_path):
    """A fork refused (no memory, no pid) or a missing program must not end the keeping thread: the
    keeper tries again until the command starts."""
    program = tmp_path / "later"
    kept = Keeper([str(program)], restart_seconds=0.05)
    kept.start()
    try:
        wait_for(lambda: kept._thread.is_alive() and kept.starts == 0, "a failed start")
        program.write_text("#!/bin/sh\nexec sleep 1000\n")
        program.chmod(0o755)
        wait_for(lambda: kept.pid is not None and running(kept.pid), "the start once the program exists")
        assert kept._thread.is_alive() and kept.starts == 1
    finally:
        kept.stop(timeout=5)


def test_a_kept_child_ends_when_the_keepers_process_is_killed(tmp_path):
    """The child asks for SIGTERM at its parent's death itself (die_with_parent: the keeper spawns
    with posix_spawn, which runs no code of ours between fork and exec): a SIGKILLed master leaves
    no dispatcher behind."""
    child = tmp_path / "child.py"
    child.write_text("import time\nfrom dialerapi.upkeep.keeper import die_with_parent\n"
                     "die_with_parent()\nprint('child ready', flush=True)\ntime.sleep(1000)\n")
    keeping = tmp_path / "keeping.py"
    keeping.write_text("import sys, time\nfrom dialerapi.upkeep.keeper import Keeper\n"
                       f"kept = Keeper([sys.executable, {str(child)!r}])\nkept.start()\n"
                       "while kept.pid is None:\n    time.sleep(0.01)\n"
                       "print('pid', kept.pid, flush=True)\ntime.sleep(1000)\n")
    process = subprocess.Popen([sys.executable, str(keeping)], stdout=subprocess.PIPE, text=True,
                               env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        lines = [process.stdout.readline().split() for _ in range(2)]
        pid = next(int(words[1]) for words in lines if words[0] == "pid")
        assert ["child", "ready"] in lines and running(pid)
        process.kill()
        process.wait(10)
        wait_for(lambda: not running(pid), "the kept child's end after its keeper's")
    finally:
        process.kill()
