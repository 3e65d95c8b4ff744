"""gunicorn settings, for `make run` and production: `gunicorn -c deploy/gunicorn.conf.py wsgi:app`.

One host runs two pools of the same app behind one nginx (issue #27, docs/operations/deployment.md "Deployment"):

- GUNICORN_POOL=http (the default), 127.0.0.1:8000: gthread workers (min(4, CPUs)) x 64 threads
  for the CRM, the dialing engine and the health probes. It serves /ws too (for `make run` without
  nginx and as a fallback), but at most WS_MAX_SOCKETS sockets, half its threads by default, so
  sockets can never take the threads its requests need.
- GUNICORN_POOL=sockets, 127.0.0.1:8001: the agent sockets, which nginx sends here. gevent workers
  (1 by default): an open socket is a greenlet waiting on its file descriptor, not a thread, so
  one process holds thousands. WS_MAX_SOCKETS (default 2000) caps the host; every worker may take
  any socket until the host is full, so no socket waits while the host has room.

The workers of one master share the count of open sockets (dialerapi.plumbing.socket_slots). Bad
configuration stops the master before any worker starts, with one line naming the variable
(decisions.md D10).
"""

import os

# The environment variables this file reads: (default, meaning). The settings reference of the docs
# site is generated from this literal (docs/gen_reference.py), and tests/test_deploy.py checks that
# every variable read here is in it.
ENVIRONMENT = {
    "GUNICORN_POOL": ("`http`", "`sockets` runs the socket pool (gevent, 127.0.0.1:8001); `http` the CRM's, "
                                "the engine's and the monitor's pool (gthread)."),
    "GUNICORN_BIND": ("`127.0.0.1:8000` (socket pool `127.0.0.1:8001`)",
                      "The address gunicorn listens on: loopback or `unix:` (nginx in front), or one private "
                      "address with `GUNICORN_PRIVATE_BIND=1`."),
    "GUNICORN_PRIVATE_BIND": ("empty", "`1` lets `GUNICORN_BIND` be one private address, for an nginx on "
                                       "another machine (issue #38); never `0.0.0.0` or a public address."),
    "GUNICORN_WORKERS": ("CPUs, at most 4 (socket pool 1)", "Worker processes of this pool."),
    "GUNICORN_THREADS": ("`64`", "Threads per HTTP worker; the HTTP pool holds at most half of them as sockets."),
    "GUNICORN_CONTROL_SOCKET": ("`$RUNTIME_DIRECTORY` or the temporary directory, `dialerapi-PORT.ctl`",
                                "gunicornc's socket, one per instance."),
    "PROMETHEUS_MULTIPROC_DIR": ("`/tmp/dialerapi-metrics-PORT`",
                                 "Where every worker's metric samples meet; emptied when the server starts."),
}

POOLS = ("http", "sockets")
pool = os.environ.get("GUNICORN_POOL", "http").strip() or "http"
if pool == "sockets":
    # Before anything imports threading or socket, in the master too: a module that took a plain
    # Lock or Condition at import (DBUtils' pool) would block a whole gevent worker.
    from gevent import monkey

    monkey.patch_all()

import ipaddress  # noqa: E402 (after the gevent patch)
import multiprocessing  # noqa: E402
import resource  # noqa: E402
import shutil  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402

from gunicorn import util  # noqa: E402



def _whole_number(name, default):
    """An integer setting read before dialerapi checks the configuration: a bad value gives the
    default here and its one-line error from on_starting."""
    value = os.environ.get(name, "").strip()
    return int(value) if value.isdigit() else default


bind = os.environ.get("GUNICORN_BIND", "127.0.0.1:8001" if pool == "sockets" else "127.0.0.1:8000")
# One name per instance on a host (its port, or its socket's file name) for the files below.
instance = os.path.basename(bind.rsplit(":", 1)[-1])
os.environ["DIALERAPI_INSTANCE"] = bind
timeout = 60
graceful_timeout = 20
if pool == "sockets":
    worker_class = "gevent"
    workers = int(os.environ.get("GUNICORN_WORKERS", "1"))
    os.environ.setdefault("WS_MAX_SOCKETS", "2000")
    os.environ.setdefault("DB_POOL_MAX", os.environ.get("DB_POOL_SIZE", "16"))
    # Room for every socket of the host in any one worker, plus the refusals past capacity.
    worker_connections = _whole_number("WS_MAX_SOCKETS", 2000) + 100
else:
    worker_class = "gthread"
    workers = int(os.environ.get("GUNICORN_WORKERS", min(4, multiprocessing.cpu_count())))
    # nginx keeps idle connections to this pool for its upstream keepalive_timeout (1 s) and sends
    # the next request on one of them; a request it sent as gunicorn closed its connection would be
    # reset, and with every other host tried or down the client got 502 (issues #38, #63). Longer
    # than nginx's, so a connection nginx still holds is never closed here first.
    keepalive = 75
    threads = int(os.environ.get("GUNICORN_THREADS", "64"))
    # Half the threads at most, whatever the environment says: the other half is the CRM's, the
    # engine's and the health probes', even if every socket lands on one worker.
    os.environ["WS_MAX_SOCKETS"] = str(min(_whole_number("WS_MAX_SOCKETS", threads), threads // 2))
# dialerapi writes its own JSON access line per request (method, path, status, duration, client IP,
# request id), so gunicorn's access log stays off; its error log goes to stderr (journald).
accesslog = None
errorlog = "-"

# Prometheus samples of every worker meet here; the directory is emptied when the server starts.
metrics_dir = os.environ.setdefault("PROMETHEUS_MULTIPROC_DIR", f"/tmp/dialerapi-metrics-{instance}")
# gunicornc's socket: gunicorn's default ($XDG_RUNTIME_DIR or ~/.gunicorn/gunicorn.ctl) is one path
# for every gunicorn of a user, so a second instance took over the first one's (issue #17).
control_socket = os.environ.get("GUNICORN_CONTROL_SOCKET", os.path.join(
    os.environ.get("RUNTIME_DIRECTORY", tempfile.gettempdir()), f"dialerapi-{instance}.ctl"))


def _json_error(sock, status_int, reason, mesg):
    """gunicorn's own error answers (a request it cannot parse: 400, 414, 431, 501) as D3 JSON.

    gunicorn has no setting for their format; its workers call gunicorn.util.write_error, replaced
    here in the master before the workers fork.
    """
    from dialerapi.web.errors import error_body

    body = error_body(status_int, mesg).encode()
    head = (f"HTTP/1.1 {status_int} {reason}\r\nConnection: close\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n").encode("latin-1")
    util.write_nonblock(sock, head + body)


util.write_error = _json_error


def _behind_nginx(address):
    """Whether gunicorn listening on `address` is reachable only through nginx: a unix socket or a
    loopback address, or, with GUNICORN_PRIVATE_BIND=1 (hosts behind an nginx on another machine,
    issue #38), one private address, which the operator firewalls to the nginx host. gunicorn has
    no request-read timeout; a client sending a byte every few seconds would hold a thread, which
    nginx's timeouts prevent."""
    if address.startswith("unix:"):
        return True
    host = address.rsplit(":", 1)[0].strip("[]")
    if host == "localhost":
        return True
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return False
    private = os.environ.get("GUNICORN_PRIVATE_BIND", "").strip() == "1"
    return ip.is_loopback or (private and ip.is_private and not ip.is_unspecified)


def _open_files_for_sockets(needed):
    """Raise this process's open-file limit (inherited by the workers) to fit `needed` descriptors;
    an error line naming the fix when the hard limit is lower."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft >= needed:
        return None
    if hard != resource.RLIM_INFINITY and hard < needed:
        return (f"dialerapi: WS_MAX_SOCKETS={os.environ['WS_MAX_SOCKETS']} needs {needed} open files but the "
                f"hard limit is {hard}: raise LimitNOFILE (systemd) or `ulimit -n`, or lower WS_MAX_SOCKETS")
    resource.setrlimit(resource.RLIMIT_NOFILE, (needed, hard))
    return None


def on_starting(server):
    if pool not in POOLS:
        print(f"dialerapi: GUNICORN_POOL={pool!r} must be http or sockets", file=sys.stderr)
        sys.exit(1)
    if not _behind_nginx(bind):
        print(f"dialerapi: GUNICORN_BIND={bind} is not a loopback address: gunicorn serves only behind nginx "
              "(deploy/nginx/dialerapi.conf); bind 127.0.0.1:PORT or unix:PATH, or, for an nginx on another "
              "host, one private address with GUNICORN_PRIVATE_BIND=1 and a firewall that lets only that "
              "nginx reach it", file=sys.stderr)
        sys.exit(1)
    # Before importing dialerapi, whose metrics open their files in this directory.
    shutil.rmtree(metrics_dir, ignore_errors=True)
    os.makedirs(metrics_dir, exist_ok=True)
    from dialerapi.plumbing.config import ConfigError, load

    try:
        load()
    except ConfigError as exc:
        print(f"dialerapi: {exc}", file=sys.stderr)
        sys.exit(1)
    # A socket, a database connection per pool slot and the process's own files, per worker.
    problem = _open_files_for_sockets(_whole_number("WS_MAX_SOCKETS", 0) + 256)
    if problem:
        print(problem, file=sys.stderr)
        sys.exit(1)
    from dialerapi.plumbing import socket_slots

    socket_slots.create_shared()


# The webhook dispatcher (issue #48) of this host: a process of its own, started by the HTTP pool's
# master when jobs are on, so its sends never take a request thread's turn at a worker's GIL; kept
# running by a thread of the master (dialerapi.upkeep.keeper, issue #64).
dispatcher = None


def when_ready(server):
    """Start `dialerapi webhooks dispatch` beside the HTTP pool's workers when JOBS_ENABLED, and start
    it again within a second whenever it ends (a SIGKILL, the OOM killer): it holds the floor's
    sending lease or waits for it (dialerapi.upkeep.webhooks). It gets SIGTERM when this master
    dies, however it dies, and at a clean stop (on_exit)."""
    global dispatcher
    from dialerapi.plumbing.config import load

    if pool != "http" or not load()["JOBS_ENABLED"]:
        return
    from dialerapi.upkeep.keeper import Keeper

    dispatcher = Keeper([os.path.join(os.path.dirname(sys.executable), "dialerapi"), "webhooks", "dispatch"],
                        server.log)
    dispatcher.start()


def on_exit(server):
    if dispatcher is not None:
        dispatcher.stop(timeout=graceful_timeout)


def child_exit(server, worker):
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(worker.pid)


def post_worker_init(worker):
    """A worker that got SIGTERM (`systemctl restart`, a rolling upgrade) hands its agent sockets to
    the other hosts at once with close 1012 instead of holding them until graceful_timeout and
    dropping them (issue #38, dialerapi.sides.agent.socket.EventHub.drain)."""
    hub = getattr(worker.wsgi, "extensions", {}).get("dialerapi.events")
    if hub is not None:
        hub.watch(lambda: not worker.alive)
