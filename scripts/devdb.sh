#!/usr/bin/env bash
# Private MariaDB instance for development and tests: its own data directory, socket and port
# under ./var/mariadb, started with --no-defaults so the system's /etc/mysql settings and server are
# never touched. mariadb-server comes from `make install` (scripts/system-packages.sh).
#
#   scripts/devdb.sh install      fail, naming `make install`, when mariadbd is missing
#   scripts/devdb.sh start        start (idempotent) and create the `dialer` database
#   scripts/devdb.sh stop         stop it; the data stays for the next start
#   scripts/devdb.sh url          print the DATABASE_URL of the private instance
#   scripts/devdb.sh url --running   the same, but only when it is running (exit 1 otherwise): the
#                                 `dialerapi` command of a checkout finds `make run`'s database with it
#   scripts/devdb.sh exec CMD...  run CMD with DATABASE_URL set: the one from the environment or
#                                 .env when there is one, otherwise the private instance (started,
#                                 and left running: `make run`)
#   scripts/devdb.sh with CMD...  the same, but stop the private instance after CMD if this command
#                                 started it (`make test`, `make faults`, `make bench`); one that was
#                                 already running (from `make run`) stays up
#
#   scripts/devdb.sh port         print the instance's port
#
# DEVDB_DIR and DEVDB_PORT place another instance (the health tests stop one under the service).
# A socket path must stay short (about 100 bytes), so keep DEVDB_DIR short.
# The port is the data directory's own, from 20000 to 29999 (a hash of its path), so two
# checkouts' instances (two branches, a worktree) run side by side; a taken port is named with the
# process holding it (scripts/port_owner.py).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
DIR="${DEVDB_DIR:-$ROOT/var/mariadb}"
PORT="${DEVDB_PORT:-$((20000 + $(printf '%s' "$DIR" | cksum | cut -d' ' -f1) % 10000))}"
SOCK="$DIR/mysqld.sock"
PIDFILE="$DIR/mysqld.pid"
DBNAME="${DEVDB_NAME:-dialer}"

log() { printf 'devdb: %s\n' "$*" >&2; }

find_bin() {
  local name
  for name in "$@"; do
    if command -v "$name" >/dev/null 2>&1; then command -v "$name"; return 0; fi
    if [ -x "/usr/sbin/$name" ]; then echo "/usr/sbin/$name"; return 0; fi
  done
  return 1
}

ensure_installed() {
  if find_bin mariadbd mysqld >/dev/null; then return 0; fi
  log "mariadbd not found: run 'make install' (scripts/system-packages.sh installs mariadb-server), or set DATABASE_URL"
  exit 1
}

running() {
  [ -f "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null
}

client() {
  "$(find_bin mariadb mysql)" --no-defaults --socket="$SOCK" -uroot "$@"
}

start() {
  ensure_installed
  if running; then return 0; fi
  mkdir -p "$DIR"
  local holder
  if ! holder=$(python3 "$ROOT/scripts/port_owner.py" "$PORT"); then
    log "cannot start MariaDB for $DIR: $holder"; exit 1
  fi
  # Temporary tables in a directory of its own: two instances initialised at once (two checkouts,
  # two parallel tests) otherwise share /tmp's #sql-temptable-* names.
  mkdir -p "$DIR/tmp"
  if [ ! -d "$DIR/data/mysql" ]; then
    log "initialising a private data directory in $DIR/data"
    "$(find_bin mariadb-install-db mysql_install_db)" --no-defaults --datadir="$DIR/data" \
      --tmpdir="$DIR/tmp" --user="$(id -un)" --auth-root-authentication-method=normal \
      --skip-test-db >"$DIR/install.log" 2>&1 || { cat "$DIR/install.log" >&2; exit 1; }
  fi
  # setsid: a Ctrl-C on `make run` stops gunicorn, not the database in the same process group.
  setsid "$(find_bin mariadbd mysqld)" --no-defaults --datadir="$DIR/data" --tmpdir="$DIR/tmp" --socket="$SOCK" \
    --port="$PORT" --bind-address=127.0.0.1 --pid-file="$PIDFILE" --user="$(id -un)" \
    --character-set-server=utf8mb4 --collation-server=utf8mb4_unicode_ci \
    --skip-name-resolve --innodb-buffer-pool-size=256M --innodb-flush-log-at-trx-commit=2 \
    --max-connections=500 --log-error="$DIR/error.log" >/dev/null 2>&1 &
  for _ in $(seq 1 100); do
    if client -e 'SELECT 1' >/dev/null 2>&1; then break; fi
    sleep 0.1
  done
  if ! client -e 'SELECT 1' >/dev/null 2>&1; then
    log "MariaDB did not start; the end of $DIR/error.log:"; tail -20 "$DIR/error.log" >&2; exit 1
  fi
  client -e "CREATE DATABASE IF NOT EXISTS \`$DBNAME\` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci"
  log "MariaDB running on 127.0.0.1:$PORT (data in $DIR/data)"
}

stop() {
  if ! running; then log "not running"; return 0; fi
  local pid; pid=$(cat "$PIDFILE")
  kill "$pid"
  for _ in $(seq 1 300); do kill -0 "$pid" 2>/dev/null || { log "stopped"; return 0; }; sleep 0.1; done
  log "MariaDB (pid $pid) did not stop within 30 s"; exit 1
}

url() { echo "mysql://root@127.0.0.1:$PORT/$DBNAME"; }

env_database_url() {
  if [ -n "${DATABASE_URL:-}" ]; then echo "$DATABASE_URL"; return; fi
  if [ -f "$ROOT/.env" ]; then
    sed -n 's/^[[:space:]]*\(export[[:space:]]\+\)\{0,1\}DATABASE_URL[[:space:]]*=[[:space:]]*//p' "$ROOT/.env" \
      | tail -n 1 | sed -e 's/^["'\'']//' -e 's/["'\'']$//'
  fi
}

case "${1:-}" in
  install) ensure_installed ;;
  start) start ;;
  stop) stop ;;
  port) echo "$PORT" ;;
  url)
    if [ "${2:-}" = --running ] && ! running; then log "not running ($DIR)"; exit 1; fi
    url ;;
  exec|with)
    mode=$1
    shift
    configured=$(env_database_url)
    if [ -n "$configured" ]; then
      export DATABASE_URL="$configured"
      exec "$@"
    fi
    was_running=no
    if running; then was_running=yes; fi
    start
    DATABASE_URL=$(url); export DATABASE_URL
    if [ "$mode" = exec ] || [ "$was_running" = yes ]; then exec "$@"; fi
    # Stop the instance this command started, however CMD ends (Ctrl-C included), keeping its status.
    trap stop EXIT
    status=0
    "$@" || status=$?
    exit "$status"
    ;;
  *) echo "usage: $0 install|start|stop|port|url|exec CMD...|with CMD..." >&2; exit 2 ;;
esac
