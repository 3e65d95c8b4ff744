"""Moving a process's clock with libfaketime (LD_PRELOAD), for the tests and `make test-clock`.

The library comes from the `libfaketime` package on PyPI (a test dependency): its vendored build
handles Python 3.11's lock timeouts and sleeps with the monotonic clock left alone, which Debian's
0.9.10 does not (time.sleep fails with EINVAL there). Only the wall clock moves: timeouts and
sleeps stay real, so servers and database connections behave as usual.

Three settings matter beyond the time itself:
- NO_FAKE_STAT: file timestamps stay real, and stat() no longer takes libfaketime's semaphore,
  which is shared between a process and its forks: a gunicorn worker killed while holding it froze
  the master at its next stat().
- FAKETIME_FORCE_MONOTONIC_FIX=0: on glibc 2.30 and later libfaketime by default rewrites the
  deadline of every timed wait on a CLOCK_MONOTONIC condition variable, and a Python thread waiting
  for the GIL then stops waiting at once, again and again: 8 threads summing numbers took 14 s
  instead of 0.9 s, nearly all of it futex calls, and the 16 actors of
  test_migration_dnc's race held their locks past the 50 s lock wait (CI, stop 44). The monotonic
  clock is not moved here, so the unrewritten deadline is the right one: sleeps, lock and queue
  timeouts and Event.wait keep their lengths.
- each process started with these variables gets a shared segment of its own (FAKETIME_SHARED is
  not passed on), so its "@" start time is its own start, not its parent's.
"""

import re
from datetime import timezone
from importlib.util import find_spec
from pathlib import Path

SHM = Path("/dev/shm")
LEFTOVER = re.compile(r"(?:sem\.)?faketime_(?:shm|sem)_(\d+)$")


def library_path():
    """Path of libfaketime.so.1 from the installed `libfaketime` package."""
    spec = find_spec("libfaketime")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the libfaketime package is missing: run `make install`")
    path = Path(spec.submodule_search_locations[0], "vendor", "libfaketime", "src", "libfaketime.so.1")
    if not path.exists():
        raise RuntimeError(f"{path} is missing: reinstall the libfaketime package")
    return str(path)


def environment(base, *, at=None, shift=None):
    """A copy of the environment `base` whose processes read a moved wall clock.

    `at`: an aware datetime where the clock starts when the process starts (then it runs on);
    `shift`: seconds (may be negative) added to the real clock, the same for every process.
    """
    env = {key: value for key, value in base.items() if key != "FAKETIME_SHARED"}
    env.update(LD_PRELOAD=library_path(), FAKETIME_DONT_FAKE_MONOTONIC="1", FAKETIME_FORCE_MONOTONIC_FIX="0",
               NO_FAKE_STAT="1")
    if at is not None:
        # "@" reads the date in the process's local time: TZ=UTC makes that UTC. The service itself
        # never uses local time (it converts to DB_TIMEZONE explicitly).
        env.update(FAKETIME="@" + at.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S"), TZ="UTC")
    else:
        seconds = int(shift)
        env["FAKETIME"] = f"+{seconds}" if seconds >= 0 else str(seconds)
    return env


def real_clock(base):
    """A copy of the environment `base` without libfaketime, for a program that cannot run under it:
    redis-server's jemalloc reads the clock while libfaketime is still starting, and crashes."""
    return {key: value for key, value in base.items()
            if key != "LD_PRELOAD" and not key.startswith("FAKETIME") and key != "NO_FAKE_STAT"}


def remove_leftovers():
    """Remove the shared segments of libfaketime processes that are gone (a killed process leaves its own)."""
    for entry in SHM.glob("*faketime_*"):
        match = LEFTOVER.match(entry.name)
        if match and not Path(f"/proc/{match.group(1)}").exists():
            entry.unlink(missing_ok=True)
