"""A helper process kept running beside gunicorn's master: the host's webhook dispatcher
(`dialerapi webhooks dispatch`), which the HTTP pool's master starts when JOBS_ENABLED
(deploy/gunicorn.conf.py). Started once and never again, a dispatcher killed by a SIGKILL or the
OOM killer left its host sending no webhook until someone restarted the service.

The child is started with posix_spawn, not fork and exec through a pipe: the master forks its
workers from another thread at any moment, and a worker forked while subprocess.Popen waited on
its error pipe (for the child's exec) kept the pipe's write end open for its whole life, so that
Popen never returned and a dispatcher killed later was never seen to end (CI, 2026-11-29: "no new
dispatcher within 30 s"). posix_spawn creates no pipe and holds the calling thread only until the
exec. The child asks for SIGTERM when its parent dies itself (`die_with_parent`).
"""

import ctypes
import logging
import os
import select
import signal
import threading

log = logging.getLogger(__name__)

# Between an end and the next start: a command that fails at once does not spin a core.
RESTART_SECONDS = 1.0
# The pid of the process that spawned a kept child, in the child's environment.
PARENT_ENV = "DIALERAPI_KEEPER_PID"
_PR_SET_PDEATHSIG = 1


def die_with_parent(signum=signal.SIGTERM):
    """In a child a Keeper started: `signum` when the keeper's process dies, however it dies
    (PR_SET_PDEATHSIG); exits at once when that process died before this call. Does nothing in a
    process no Keeper started."""
    parent = os.environ.get(PARENT_ENV)
    if not parent:
        return
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signum)
    except (OSError, AttributeError):  # not Linux
        return
    if os.getppid() != int(parent):
        os._exit(1)


class Keeper:
    """Runs `command` (an argv list; its program found on PATH) and runs it again RESTART_SECONDS
    after it ends, for any reason, until `stop()`.

    A daemon thread of the process that calls `start()` spawns the child and waits on its pidfd,
    opened at the spawn, which turns readable when the child ends even after another part of the
    process reaped it (gunicorn's master reaps every child in its SIGCHLD handler) and never names
    another process that got the pid since. The child's environment names this process
    (PARENT_ENV) for `die_with_parent`. `logger`: anything with `.error(msg, *args)` (gunicorn's
    server.log).
    """

    def __init__(self, command, logger=None, restart_seconds=RESTART_SECONDS):
        self.command = list(command)
        self.logger = logger or log
        self.restart_seconds = restart_seconds
        self.starts = 0
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._stop_timeout = 0.0
        self._pid = None
        self._descriptor = None  # the running child's pidfd, owned by the thread
        self._thread = threading.Thread(target=self._run, name="keeper", daemon=True)

    @property
    def pid(self):
        """The pid of the running child (None before the first start and between two)."""
        with self._lock:
            return self._pid

    def start(self):
        self._thread.start()

    def stop(self, timeout):
        """Stop keeping: SIGTERM the child, SIGKILL it after `timeout` seconds; returns once it ended."""
        with self._lock:
            self._stop_timeout = timeout
            self._stopping.set()
            if self._descriptor is not None:
                _send(self._descriptor, signal.SIGTERM)
        self._thread.join(2 * timeout + 2)

    def _run(self):
        while True:
            with self._lock:
                if self._stopping.is_set():
                    return
                try:
                    pid = os.posix_spawnp(self.command[0], self.command, {**os.environ, PARENT_ENV: str(os.getpid())})
                except Exception as exc:  # a spawn refused (no memory, no pid): the thread must live on
                    pid = None
                    self.logger.error("could not start %s (%s); trying again in %s s", " ".join(self.command[-2:]),
                                      exc, self.restart_seconds)
                else:
                    self.starts += 1
                    self._pid, self._descriptor = pid, _pidfd(pid)
            if pid is not None:
                self._wait_for_end(pid)
                if self._stopping.is_set():
                    return
                self.logger.error("%s (pid %s) ended; starting it again in %s s", " ".join(self.command[-2:]), pid,
                                  self.restart_seconds)
            if self._stopping.wait(self.restart_seconds):
                return

    def _wait_for_end(self, pid):
        """Until the child ended (after stop(): within its timeout, SIGKILLed past it); reaps it
        unless someone else did, and forgets it."""
        descriptor = self._descriptor
        ended = _readable(descriptor, None if descriptor is None else 0)
        while not ended and not self._stopping.is_set():
            ended = _readable(descriptor, 1.0)
        if not ended:  # stop() sent SIGTERM
            ended = _readable(descriptor, self._stop_timeout)
            if not ended:
                _send(descriptor, signal.SIGKILL)
                _readable(descriptor, self._stop_timeout)
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:  # gunicorn's master reaped it first
            pass
        with self._lock:
            if descriptor is not None:
                os.close(descriptor)
            self._descriptor = None
            if not self._stopping.is_set():
                self._pid = None  # the pid may go to another process now


def _pidfd(pid):
    """A pidfd of the child `pid`, or None when it has ended and been reaped already."""
    try:
        return os.pidfd_open(pid)
    except ProcessLookupError:
        return None


def _readable(descriptor, seconds):
    """True when the child of pidfd `descriptor` (None: ended and reaped) has ended within `seconds`."""
    if descriptor is None:
        return True
    poller = select.poll()  # not select(): a descriptor past 1024 is fine here
    poller.register(descriptor, select.POLLIN)
    return bool(poller.poll(seconds * 1000))


def _send(descriptor, signum):
    """`signum` to the child of pidfd `descriptor` (nothing when it has ended)."""
    try:
        signal.pidfd_send_signal(descriptor, signum)
    except ProcessLookupError:
        pass
