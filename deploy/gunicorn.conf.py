"""gunicorn settings, for `make run` and production: `gunicorn -c deploy/gunicorn.conf.py wsgi:app`.

Threaded workers (gthread): each open agent socket (/ws) holds one thread for as long as it is
open, so workers x threads must exceed the agents connected at once plus the CRM's concurrent
requests (the default, up to 4 workers x 64 threads, serves a floor of about 200 agents). The
gthread worker heartbeats from its main thread, so long-lived sockets do not trip `timeout`.
Bad configuration stops the master before any worker starts, with one line naming the variable
(decisions.md D10).
"""

import ipaddress
import multiprocessing
import os
import shutil
import sys
import tempfile

from gunicorn import util

bind = os.environ.get("GUNICORN_BIND", "127.0.0.1:8000")
# One name per instance on a host (its port, or its socket's file name) for the files below.
instance = os.path.basename(bind.rsplit(":", 1)[-1])
workers = int(os.environ.get("GUNICORN_WORKERS", min(4, multiprocessing.cpu_count())))
worker_class = "gthread"
threads = int(os.environ.get("GUNICORN_THREADS", "64"))
timeout = 60
graceful_timeout = 20
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
    from dialerapi.errors import error_body

    body = error_body(status_int, mesg).encode()
    head = (f"HTTP/1.1 {status_int} {reason}\r\nConnection: close\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n").encode("latin-1")
    util.write_nonblock(sock, head + body)


util.write_error = _json_error


def _behind_nginx(address):
    """Whether gunicorn listening on `address` is reachable only from this host (and so only through
    nginx from outside): a unix socket or a loopback address. gunicorn has no request-read timeout;
    a client sending a byte every few seconds would hold a thread, which nginx's timeouts prevent."""
    if address.startswith("unix:"):
        return True
    host = address.rsplit(":", 1)[0].strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def on_starting(server):
    if not _behind_nginx(bind):
        print(f"dialerapi: GUNICORN_BIND={bind} is not a loopback address: gunicorn serves only behind nginx "
              "(deploy/nginx/dialerapi.conf) on the same host; bind 127.0.0.1:PORT or unix:PATH", file=sys.stderr)
        sys.exit(1)
    # Before importing dialerapi, whose metrics open their files in this directory.
    shutil.rmtree(metrics_dir, ignore_errors=True)
    os.makedirs(metrics_dir, exist_ok=True)
    from dialerapi.config import ConfigError, load

    try:
        load()
    except ConfigError as exc:
        print(f"dialerapi: {exc}", file=sys.stderr)
        sys.exit(1)


def child_exit(server, worker):
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(worker.pid)
