"""gunicorn settings, for `make run` and production: `gunicorn -c deploy/gunicorn.conf.py wsgi:app`.

Threaded workers (gthread): each open agent socket (/ws) holds one thread for as long as it is
open, so workers x threads must exceed the agents connected at once plus the CRM's concurrent
requests (the default, up to 4 workers x 64 threads, serves a floor of about 200 agents). The
gthread worker heartbeats from its main thread, so long-lived sockets do not trip `timeout`.
Bad configuration stops the master before any worker starts, with one line naming the variable
(decisions.md D10).
"""

import multiprocessing
import os
import shutil
import sys

bind = os.environ.get("GUNICORN_BIND", "127.0.0.1:8000")
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
metrics_dir = os.environ.setdefault(
    "PROMETHEUS_MULTIPROC_DIR", f"/tmp/dialerapi-metrics-{bind.rsplit(':', 1)[-1]}"
)


def on_starting(server):
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
