#!/usr/bin/env bash
# `make run`: both gunicorn pools of deploy/gunicorn.conf.py, as the systemd units run them (issue
# #27): the agent sockets on 127.0.0.1:8001 (GUNICORN_POOL=sockets) in the background and the HTTP
# pool on 127.0.0.1:8000 in the foreground. Ctrl-C (or the HTTP pool's end) stops both.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-.venv/bin}
GUNICORN_POOL=sockets GUNICORN_BIND=${SOCKETS_BIND:-127.0.0.1:8001} "$BIN/gunicorn" -c deploy/gunicorn.conf.py wsgi:app &
sockets=$!
trap 'kill "$sockets" 2>/dev/null; wait "$sockets" 2>/dev/null || true' EXIT
GUNICORN_POOL=http "$BIN/gunicorn" -c deploy/gunicorn.conf.py wsgi:app
