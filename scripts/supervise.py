#!/usr/bin/env python3
"""Run a command, and leave nothing of it running when it ends or is stopped (issue #47).

    python3 scripts/supervise.py CMD [ARG...]

`make test`, `make faults`, `make test-clock` and `make run` start servers that leave their
process group on purpose (MariaDB and gunicorn run under setsid, so a Ctrl-C meant for a
test does not reach them), so neither a signal to the group nor the parent's death reaches them.
Every process started under this command carries DIALERAPI_RUN in its environment (children
inherit it, through setsid, sudo-less forks, libfaketime and selenium alike), and that is how
they are found: when CMD ends, or when this process gets SIGINT, SIGTERM or SIGHUP (Ctrl-C, a
`timeout`, a closed terminal), every other process whose environment holds this run's mark gets
SIGTERM, and SIGKILL if it is still there after STOP_GRACE seconds, all within 10 s.

DIALERAPI_RUN is a list of marks: a supervised command started under another one (a test that
runs `make test`) adds its own mark, so the outer run stops the inner one's processes too.

Exit status: CMD's, or 128 + the signal that stopped it.
"""

import os
import secrets
import signal
import subprocess
import sys
import time

VARIABLE = "DIALERAPI_RUN"
# SIGTERM first, so MariaDB flushes and gunicorn says goodbye; the rest of the 10 s for SIGKILL.
STOP_GRACE = 7.0


def marked(mark):
    """Pids of the processes (other than this one) whose environment carries `mark`."""
    needle = f"{VARIABLE}=".encode()
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as environ:
                variables = environ.read().split(b"\0")
        except OSError:  # gone meanwhile, or not ours to read
            continue
        for variable in variables:
            if variable.startswith(needle) and mark.encode() in variable[len(needle):].split(b" "):
                pids.append(int(entry))
                break
    return pids


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def stop_all(mark, grace=STOP_GRACE):
    """SIGTERM every process carrying `mark`, SIGKILL what is left after `grace` seconds; the pids
    that were still running."""
    pids = marked(mark)
    for pid in pids:
        _signal(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and any(alive(pid) for pid in pids):
        time.sleep(0.1)
        # Anything started while we were stopping (a worker gunicorn replaced) is stopped too.
        for pid in set(marked(mark)) - set(pids):
            pids.append(pid)
            _signal(pid, signal.SIGTERM)
    for pid in marked(mark):
        _signal(pid, signal.SIGKILL)
    return pids


def _signal(pid, number):
    try:
        os.kill(pid, number)
    except OSError:
        pass


def main(argv):
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    mark = secrets.token_hex(6)
    env = {**os.environ, VARIABLE: " ".join(filter(None, [os.environ.get(VARIABLE), mark]))}
    stopped_by = []

    def on_signal(number, _frame):
        stopped_by.append(number)
        raise KeyboardInterrupt

    for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(number, on_signal)
    child = None
    try:
        child = subprocess.Popen(argv, env=env)
        status = child.wait()
    except KeyboardInterrupt:
        status = 128 + (stopped_by[0] if stopped_by else signal.SIGINT)
    for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(number, signal.SIG_IGN)
    left = stop_all(mark)
    if left and not stopped_by:
        print(f"supervise: stopped {len(left)} process(es) `{' '.join(argv)}` left running", file=sys.stderr)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
