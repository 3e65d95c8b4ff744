"""How many agent sockets (/ws) one host holds, and the refusal past its capacity.

A host is one gunicorn master: its workers share one table, so a worker takes a socket whenever
the host has room, whichever worker the kernel hands the connection to, and the capacity is
exact across them. deploy/gunicorn.conf.py creates the table in the master (a memfd whose number
it exports as DIALERAPI_SOCKET_SLOTS_FD) before the workers fork; a process started any other way
(the tests' Flask client, the CLI) has a table of its own.

The table is int64s: the sockets refused since the master started, then one (pid, open sockets)
row per worker. A row whose process is gone (a killed worker) counts for nothing and is reused,
so a crash never leaks capacity. Writers hold a threading lock (threads of one worker) and a
POSIX record lock on the memfd (workers; the kernel drops it with a dying process).
"""

import fcntl
import json
import mmap
import os
import threading
from contextlib import contextmanager
from datetime import timedelta

from dialerapi.plumbing import clock
from dialerapi.plumbing.db import queries

FD_VARIABLE = "DIALERAPI_SOCKET_SLOTS_FD"
ROWS = 256
_CELLS = 1 + 2 * ROWS
_BYTES = 8 * _CELLS


def create_shared():
    """In a gunicorn master, before the workers fork: a zeroed memfd table every worker will map.
    Returns its file descriptor, which is also exported in FD_VARIABLE."""
    fd = os.memfd_create("dialerapi-socket-slots")
    os.ftruncate(fd, _BYTES)
    os.environ[FD_VARIABLE] = str(fd)
    return fd


def _shared_table():
    """(fd, map) of the table the gunicorn master made, or (None, a private map) in a process that
    did not come from one (the variable may also reach a process its fd did not, e.g. a command a
    worker runs)."""
    fd = os.environ.get(FD_VARIABLE, "")
    if fd.isdigit():
        try:
            return int(fd), mmap.mmap(int(fd), _BYTES)
        except (OSError, ValueError):
            pass
    return None, mmap.mmap(-1, _BYTES)


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class SocketSlots:
    """The open agent sockets of this host against `capacity` (WS_MAX_SOCKETS)."""

    def __init__(self, capacity):
        self.capacity = capacity
        self._thread_lock = threading.Lock()
        self._fd, self._map = _shared_table()
        self._cells = memoryview(self._map).cast("q")

    @contextmanager
    def _locked(self):
        with self._thread_lock:
            if self._fd is None:
                yield
                return
            fcntl.lockf(self._fd, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.lockf(self._fd, fcntl.LOCK_UN)

    def _rows(self):
        """(index of this process's row or None, index of a free row or None, open sockets of live workers)."""
        pid = os.getpid()
        mine = free = None
        total = 0
        for row in range(ROWS):
            cell = 1 + 2 * row
            owner, count = self._cells[cell], self._cells[cell + 1]
            if owner == pid:
                mine = cell
                total += count
            elif owner and _alive(owner):
                total += count
            elif free is None:
                free = cell
        return mine, free, total

    def acquire(self):
        """Take a slot for a new socket of this process: True, or False (and counted as refused)
        when the host already holds `capacity` sockets."""
        with self._locked():
            mine, free, total = self._rows()
            if total >= self.capacity or (mine is None and free is None):
                self._cells[0] += 1
                return False
            if mine is None:
                mine = free
                self._cells[mine], self._cells[mine + 1] = os.getpid(), 0
            self._cells[mine + 1] += 1
            return True

    def release(self):
        """Give back a slot taken by `acquire` in this process."""
        with self._locked():
            mine, _, _ = self._rows()
            if mine is not None and self._cells[mine + 1] > 0:
                self._cells[mine + 1] -= 1

    def state(self):
        """{"open": sockets of the host, "capacity", "left", "refused" (since the master started),
        "workers": open sockets per live worker process, largest first}."""
        with self._locked():
            _, _, total = self._rows()
            workers = sorted((self._cells[2 + 2 * row] for row in range(ROWS)
                              if self._cells[1 + 2 * row] and _alive(self._cells[1 + 2 * row])), reverse=True)
            refused = self._cells[0]
        return {"open": total, "capacity": self.capacity, "left": max(0, self.capacity - total),
                "refused": refused, "workers": workers}


STALE_SECONDS = 60


def hosts_report(conn, now, tz):
    """The agent sockets of every host that wrote its row in the last STALE_SECONDS (migration 0011),
    for /health and /metrics: {"open", "capacity", "left", "refused", "too_slow" (totals), "hosts":
    [{"host", "open", "capacity", "left", "refused", "workers" (open sockets per worker), "draining"
    (it got SIGTERM and is closing its sockets with 1012), "fanout_lag_seconds" (how long
    ago its outbox thread last finished a pass, at its last heartbeat; None from a release that does
    not measure it), "too_slow" (sockets it closed for falling behind), "updated_at"
    (ISO 8601 UTC)}]}. `now`: the service clock's wall-clock time in `tz` (DB_TIMEZONE)."""
    hosts = []
    for row in queries.socket_hosts(conn, since=clock.after(now, timedelta(seconds=-STALE_SECONDS), tz)):
        hosts.append({"host": row["host"], "open": row["open_sockets"], "capacity": row["capacity"],
                      "left": max(0, row["capacity"] - row["open_sockets"]), "refused": row["refused"],
                      "workers": json.loads(row["workers"]), "draining": bool(row["draining"]),
                      "fanout_lag_seconds": None if row["fanout_lag_ms"] is None else row["fanout_lag_ms"] / 1000,
                      "too_slow": row["too_slow"], "updated_at": clock.format_utc(row["updated_at"], tz)})
    totals = {key: sum(host[key] for host in hosts) for key in ("open", "capacity", "left", "refused", "too_slow")}
    return {**totals, "hosts": hosts}


def fanout_check(report, limit_seconds):
    """Whether every socket host's fan-out keeps up. `report`: hosts_report's. {ok,
    limit_seconds (SOCKET_FANOUT_ALERT_SECONDS), behind: [{host, fanout_lag_seconds}] (the hosts
    past it), error (why not ok, or None)}."""
    behind = [{"host": host["host"], "fanout_lag_seconds": host["fanout_lag_seconds"]} for host in report["hosts"]
              if host["fanout_lag_seconds"] is not None and host["fanout_lag_seconds"] > limit_seconds]
    error = None
    if behind:
        error = (f"the agent socket fan-out of {', '.join(host['host'] for host in behind)} is more than "
                 f"{limit_seconds} s behind (SOCKET_FANOUT_ALERT_SECONDS)")
    return {"ok": not behind, "limit_seconds": limit_seconds, "behind": behind, "error": error}
