"""gunicorn settings for `make run` (gunicorn reads ./gunicorn.conf.py by default).

Threaded workers (gthread): each open agent socket (/ws) holds one thread for as long as it is
open, so workers x threads must exceed the agents connected at once plus the CRM's concurrent
requests (the default, up to 4 workers x 64 threads, serves a floor of about 200 agents). The
gthread worker heartbeats from its main thread, so long-lived sockets do not trip `timeout`.
Bad configuration stops the master before any worker starts, with one line naming the variable
(decisions.md D10).
"""

import multiprocessing
import os
import sys

bind = os.environ.get("GUNICORN_BIND", "127.0.0.1:8000")
workers = int(os.environ.get("GUNICORN_WORKERS", min(4, multiprocessing.cpu_count())))
worker_class = "gthread"
threads = int(os.environ.get("GUNICORN_THREADS", "64"))
timeout = 60
graceful_timeout = 20
accesslog = "-"


def on_starting(server):
    from dialerapi.config import ConfigError, load

    try:
        load()
    except ConfigError as exc:
        print(f"dialerapi: {exc}", file=sys.stderr)
        sys.exit(1)
