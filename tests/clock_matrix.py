"""`make test-clock`: the test suite with the machine's clock moved (issue: a suite that passes at
any hour, on any date, in any DB_TIMEZONE).

Each run moves the wall clock of a private MariaDB (its NOW()) and of pytest with everything pytest
starts (gunicorn, CLI commands, nginx, Redis) to one moment, with libfaketime, and sets DB_TIMEZONE.
The tests marked `clock` (they depend on the time or the zone) run at every moment below; the rest
of the suite is shared between two of them (the last second of 2028 in Kolkata and the second 01:30
of the fall-back night in New York): each test file runs at one of the two (`--suite-part`,
tests/conftest.py, splits the files to even test counts), with every clock test at both, so every test runs at a
moved clock and the pair costs about one run of the suite (the whole suite at both took 30 of CI's
60 minutes). The halves run one at a time, each alone on the machine in `make test`'s parallel
workers (scripts/pytest_groups.sh, issue #47); the clock tests' moments run two at a time by
default (`--jobs`), each in one process that collects only the files holding clock tests
(`clock_files`): they wait more than they compute, and two at once take no longer each than one
alone once libfaketime stopped rewriting Python's GIL waits (tests/faketime.py; before that, two at
once now and then starved a new agent socket past the tests' 3 s wait for its first frame). In two
workers collecting the whole suite, a moment spent more on starting and collecting than on its
tests (issue #63: six moments 179 s, now 116 s). A test that reads the machine's clock where it should
read the service's one clock (decisions.md D2) passes at some of these moments and fails at others.

    python tests/clock_matrix.py [--jobs 2] [--only TEXT] [--list]
"""

import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from queue import Queue
from zoneinfo import ZoneInfo

import faketime

ROOT = Path(__file__).resolve().parent.parent
DEVDB = ROOT / "scripts" / "devdb.sh"
PYTEST = Path(sys.executable).with_name("pytest")
GROUPS = ROOT / "scripts" / "pytest_groups.sh"
LOGS = ROOT / "var" / "test-clock"
# The moment a run stands for, ISO 8601 UTC, for the clock tests' `now` fixture (tests/conftest.py):
# tests read no clock of the machine's, moved or not (decisions.md D2).
MOMENT_VARIABLE = "DIALERAPI_TEST_MOMENT"
TIMES_OF_DAY = ((2, 0, 0), (8, 59, 59), (9, 0, 0), (20, 59, 59), (21, 0, 0), (23, 59, 59))


@dataclass(frozen=True)
class Moment:
    zone: str
    wall: datetime          # wall-clock time in `zone`; fold=1 for the second pass of a repeated hour
    part: int | None = None  # which half of the suite's files runs here (None: only the clock tests)
    note: str = ""
    files: tuple = ()        # only the clock tests of these test files (none named: of every clock file)

    @property
    def utc(self):
        return self.wall.replace(tzinfo=ZoneInfo(self.zone)).astimezone(ZoneInfo("UTC"))

    @property
    def name(self):
        fold = "-second" if self.wall.fold else ""
        return f"{self.zone.replace('/', '_')}-{self.wall:%Y%m%dT%H%M%S}{fold}"


def matrix():
    """Every moment the suite runs at: the issue's times of day, a leap day, a year's last second,
    in UTC, Asia/Kolkata (+05:30, no daylight saving) and America/New_York on both change days.
    The times of day run on the fall-back day, the spring-forward day only around its missing hour:
    its other five moments (4 minutes of CI) went when the fault tests grew by the restart and the
    rolling upgrade (issue #38), to keep CI within its hour. Last, the campaigns' moments in London,
    Chicago and Sydney, each running only tests/test_campaign_clock.py, and the state calling rules
    moments (Alabama's Sunday, Louisiana's Christmas, Mississippi's kept Monday, New Year's night) in
    Chicago and Kolkata, each running only tests/test_state_rules_clock.py."""
    moments = [Moment("UTC", datetime(2027, 6, 15, 2, 0), note="the hour the work-window bug was found")]
    moments += [Moment("Asia/Kolkata", datetime(2027, 6, 15, *hms)) for hms in TIMES_OF_DAY]
    moments += [Moment("Asia/Kolkata", datetime(2028, 2, 29, 23, 59, 59), note="leap day"),
                Moment("Asia/Kolkata", datetime(2028, 12, 31, 23, 59, 59), part=0, note="year end")]
    spring, fall = datetime(2027, 3, 14), datetime(2026, 11, 1)
    moments += [Moment("America/New_York", spring.replace(hour=1, minute=59, second=59), note="before spring forward"),
                Moment("America/New_York", spring.replace(hour=3), note="02:00 does not exist: 03:00 EDT")]
    moments += [Moment("America/New_York", fall.replace(hour=1, minute=30), note="first 01:30 (EDT)"),
                Moment("America/New_York", fall.replace(hour=1, minute=30, fold=1), part=1,
                       note="second 01:30 (EST)")]
    moments += [Moment("America/New_York", fall.replace(hour=h, minute=m, second=s)) for h, m, s in TIMES_OF_DAY]
    # Campaigns' calendars (issue #67 item 6) in zones of their own; their tests alone, a few seconds each.
    campaign = ("test_campaign_clock.py",)
    moments += [Moment("Europe/London", datetime(2027, 3, 29, 9, 0), note="a campaign's weekday open (first Monday of BST)",
                       files=campaign),
                Moment("America/Chicago", datetime(2027, 1, 8, 19, 0), note="a campaign's weekday close (a Friday)",
                       files=campaign),
                Moment("Australia/Sydney", datetime(2026, 12, 25, 0, 0), note="a restricted date's midnight (Christmas)",
                       files=campaign),
                Moment("Europe/London", datetime(2026, 10, 25, 1, 30, fold=1), note="a DST night: the second 01:30 (GMT)",
                       files=campaign)]
    # The state calling rules (issue #68 item 7), each instant in two DB_TIMEZONEs; their tests alone.
    state = ("test_state_rules_clock.py",)
    chicago = ZoneInfo("America/Chicago")
    for instant, note in ((datetime(2027, 1, 10, 10, 0), "a Sunday morning in Alabama"),
                          (datetime(2026, 12, 25, 12, 0), "Christmas Day in Louisiana"),
                          (datetime(2027, 7, 5, 10, 0), "Mississippi's Monday for a Sunday Independence Day"),
                          (datetime(2027, 1, 1, 0, 30), "New Year's night")):
        for zone in ("America/Chicago", "Asia/Kolkata"):
            wall = instant.replace(tzinfo=chicago).astimezone(ZoneInfo(zone)).replace(tzinfo=None)
            moments.append(Moment(zone, wall, note=note, files=state))
    return moments


PARTS = 2


def clock_files():
    """The test files holding a test marked `clock` (their text says so: `pytest.mark.clock`), which
    a clock moment collects alone; tests/test_clock_matrix.py holds every clock test to one of them."""
    return sorted(path for path in (ROOT / "tests").rglob("test_*.py") if "mark.clock" in path.read_text())


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Database:
    """A private MariaDB (scripts/devdb.sh) whose clock is moved for each run; one per parallel slot."""

    def __init__(self):
        # A short directory: the socket path must stay under about 100 bytes.
        self.directory = tempfile.mkdtemp(prefix="dc", dir="/tmp")
        self.port = free_port()

    def devdb(self, command, shift):
        env = faketime.environment({**os.environ, "DEVDB_DIR": self.directory, "DEVDB_PORT": str(self.port),
                                    "DEVDB_NAME": "dialer"}, shift=shift)
        subprocess.run([str(DEVDB), command], env=env, check=True, capture_output=True, text=True, timeout=120)

    @property
    def url(self):
        return f"mysql://root@127.0.0.1:{self.port}/dialer"

    def remove(self):
        shutil.rmtree(self.directory, ignore_errors=True)


def run(moment, database, extra_args):
    """Run pytest at `moment` against `database`; return (passed, seconds, log path, summary line)."""
    started = time.monotonic()
    # The harness reads the real clock once, to compute the shift every process of this run shares.
    shift = moment.utc.timestamp() - time.time()
    log = LOGS / f"{moment.name}.log"
    database.devdb("start", shift)
    try:
        # A half runs alone, with make test's workers; a moment of the clock tests shares the machine
        # with another (--jobs), so it runs in one process.
        files = [ROOT / "tests" / name for name in moment.files] or clock_files()
        selection = (["-m", "clock", "-n", "0", *map(str, files)] if moment.part is None
                     else [f"--suite-part={moment.part}/{PARTS}"])
        env = faketime.environment({**os.environ, "DATABASE_URL": database.url, "DB_TIMEZONE": moment.zone,
                                    MOMENT_VARIABLE: moment.utc.isoformat()}, shift=shift)
        with open(log, "w") as out:
            result = subprocess.run(
                [str(GROUPS), moment.name, str(PYTEST), "-q", "-p", "no:cacheprovider", "--basetemp", f"{database.directory}/pytest",
                 *selection, *extra_args],
                cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, timeout=1800,
            )
    finally:
        database.devdb("stop", shift)
        faketime.remove_leftovers()
    lines = log.read_text().strip().splitlines()
    return result.returncode == 0, time.monotonic() - started, log, lines[-1] if lines else ""


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=2,
                        help="clock-test runs at once, each with its own MariaDB (default 2); the halves run alone")
    parser.add_argument("--only", help="run only the moments whose name contains this text")
    parser.add_argument("--list", action="store_true", help="list the moments and exit")
    args, extra = parser.parse_known_args()
    moments = [m for m in matrix() if not args.only or args.only in m.name]
    if args.list:
        for moment in moments:
            print(f"{moment.name:<48} {moment.utc:%Y-%m-%d %H:%M:%S} UTC  {'suite half ' + str(moment.part) if moment.part is not None else '-m clock'}"
                  f"  {moment.note}")
        return 0
    faketime.library_path()  # fail early, with the reason, if libfaketime is missing
    LOGS.mkdir(parents=True, exist_ok=True)
    slots = Queue()
    databases = [Database() for _ in range(max(1, args.jobs))]
    for database in databases:
        slots.put(database)

    def one(moment):
        database = slots.get()
        try:
            return moment, run(moment, database, extra)
        except (OSError, subprocess.SubprocessError) as exc:
            log = LOGS / f"{moment.name}.log"
            log.write_text(f"{exc}\n{getattr(exc, 'stderr', '') or ''}")
            return moment, (False, 0.0, log, f"the run could not be made: {exc}")
        finally:
            slots.put(database)

    failed = []
    began = time.monotonic()
    print(f"make test-clock: {len(moments)} moments (the suite's halves alone, then {args.jobs} at a time); logs in {LOGS.relative_to(ROOT)}/", flush=True)
    def report(results):
        for moment, (passed, seconds, log, summary) in results:
            wall = moment.wall.strftime("%Y-%m-%d %H:%M:%S") + (" (2nd)" if moment.wall.fold else "")
            scope = f"half{moment.part}" if moment.part is not None else "clock"
            print(f"{'ok  ' if passed else 'FAIL'} {moment.zone:<17} {wall:<25} {scope:<5} {seconds:6.1f} s  {summary}",
                  flush=True)
            if not passed:
                failed.append((moment, log))

    try:
        # The halves of the suite never share the machine, whatever --jobs says.
        report(one(moment) for moment in moments if moment.part is not None)
        with ThreadPoolExecutor(max_workers=len(databases)) as pool:
            report(pool.map(one, [moment for moment in moments if moment.part is None]))
    finally:
        for database in databases:
            database.remove()
    print(f"{len(moments) - len(failed)}/{len(moments)} moments passed in {time.monotonic() - began:.0f} s")
    for moment, log in failed:
        print(f"\n--- {moment.name}: the end of {log.relative_to(ROOT)}")
        print("\n".join(log.read_text().splitlines()[-40:]))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
