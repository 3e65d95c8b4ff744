"""`make soak`: the tests that once failed now and then, run again and again on a busy machine
(issue #63): the host restart, the rolling upgrade and the panel in a real browser, each run a
pytest process of its own running all three, RUNS times in a row (20 by default), with BUSY
processes (2 by default) spinning on the CPU beside them the whole time. It stops at the first
failed run and names its log.

A flaky test is one whose failure depends on timing; two spinning processes on the project's 2-core
machine leave each test about half the CPU it has in CI, so a timing it depends on shows here.

    python tests/soak.py [--runs 20] [--busy 2] [--tests PATH ...]
"""

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PYTEST = Path(sys.executable).with_name("pytest")
TESTS = ["tests/faults/test_host_restart.py", "tests/faults/test_rolling_upgrade.py", "tests/test_panel_browser.py"]
SPIN = "while True: pass"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--busy", type=int, default=2, help="processes spinning on the CPU beside the tests")
    parser.add_argument("--tests", nargs="+", default=TESTS)
    args = parser.parse_args(argv)
    logs = Path(tempfile.mkdtemp(prefix="dialerapi-soak-"))
    busy = [subprocess.Popen([sys.executable, "-c", SPIN]) for _ in range(args.busy)]
    started = time.monotonic()
    passed = 0
    try:
        for run in range(1, args.runs + 1):
            log = logs / f"run-{run:02d}.log"
            began = time.monotonic()
            with open(log, "w") as out:
                # -m "": every marker (fault tests included); -n0: one at a time, as a host test must run.
                status = subprocess.call([str(PYTEST), "-m", "", "-n0", "-p", "no:cacheprovider", "-q",
                                          *args.tests], cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)
            summary = log.read_text().strip().splitlines()[-1:] or ["(no output)"]
            print(f"soak: run {run}/{args.runs} {'passed' if status == 0 else 'FAILED'} in "
                  f"{time.monotonic() - began:.0f} s: {summary[0]}", flush=True)
            if status != 0:
                print(f"soak: the failed run's log: {log}", flush=True)
                break
            passed += 1
    finally:
        for process in busy:
            process.kill()
            process.wait()
    print(f"soak: {passed} of {args.runs} runs passed in a row in {time.monotonic() - started:.0f} s, "
          f"{args.busy} busy processes beside them")
    return 0 if passed == args.runs else 1


if __name__ == "__main__":
    sys.exit(main())
