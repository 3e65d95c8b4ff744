"""A helper process kept running beside gunicorn's master (issue #64): the host's webhook dispatcher
(`dialerapi webhooks dispatch`), which the HTTP pool's master starts when JOBS_ENABLED
(deploy/gunicorn.conf.py). Started once and never again, a dispatcher killed by a SIGKILL or the
OOM killer left its host sending no webhook until someone restarted the service.
"""

import ctypes
import logging
import os
import select
import signal
import subprocess
import threading

log = logging.getLogger(__name__)

# Between an end and the next start: a command that fails at once does not spin a core.
RESTART_SECONDS = 1.0
_PR_SET_PDEATHSIG = 1


def _die_with_parent():
    """In the child: SIGTERM when the process that started it dies, however it dies."""
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


class Keeper:
    """Runs `command` (an argv list) and runs it again RESTART_SECONDS after it ends, for any reason,
    until `stop()`.

    A daemon thread of the process that calls `start()` waits on the child's pidfd, which turns
    readable when the child ends even after another part of the process reaped it (gunicorn's
    master reaps every child in its SIGCHLD handler). The child gets SIGTERM when this process dies
    (PR_SET_PDEATHSIG). `logger`: anything with `.error(msg, *args)` (gunicorn's server.log).
    """

    def __init__(self, command, logger=None, restart_seconds=RESTART_SECONDS):
        self.command = list(command)
        self.logger = logger or log
        self.restart_seconds = restart_seconds
        self.starts = 0
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._process = None
        self._thread = threading.Thread(target=self._run, name="keeper", daemon=True)

    @property
    def pid(self):
        """The pid of the running child (None before the first start)."""
        with self._lock:
            return self._process.pid if self._process else None

    def start(self):
        self._thread.start()

    def stop(self, timeout):
        """Stop keeping: SIGTERM the child, SIGKILL it after `timeout` seconds."""
        with self._lock:
            self._stopping.set()
            process = self._process
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                process.kill()
        self._thread.join(timeout)

    def _run(self):
        while True:
            with self._lock:
                if self._stopping.is_set():
                    return
                try:
                    self._process = subprocess.Popen(self.command, preexec_fn=_die_with_parent)
                except Exception as exc:  # a fork refused (no memory, no pid): the thread must live on
                    pid = None
                    self.logger.error("could not start %s (%s); trying again in %s s", " ".join(self.command[-2:]),
                                      exc, self.restart_seconds)
                else:
                    self.starts += 1
                    pid = self._process.pid
            if pid is not None:
                self._wait_for_end(pid)
                if self._stopping.is_set():
                    return
                self.logger.error("%s (pid %s) ended; starting it again in %s s", " ".join(self.command[-2:]), pid,
                                  self.restart_seconds)
            if self._stopping.wait(self.restart_seconds):
                return

    def _wait_for_end(self, pid):
        try:
            descriptor = os.pidfd_open(pid)
        except ProcessLookupError:  # ended and reaped already
            return
        try:
            while not self._stopping.is_set():
                ready, _, _ = select.select([descriptor], [], [], 1.0)
                if ready:
                    return
        finally:
            os.close(descriptor)
