#!/usr/bin/env bash
# A private 3-node MariaDB Galera cluster on loopback for `make test-galera` and `make bench`
# (docs/operations/galera.md "Scale out"): Debian's mariadb-server and galera-4 (installed by scripts/devdb.sh when
# missing), one data directory and generated option file per node under ./var/galera, never the
# system's server or /etc/mysql. The cluster is throwaway: `start` always builds it anew.
#
#   scripts/galera.sh start           build and start nodes 1-3 (node 1 bootstraps) and create `dialer`
#   scripts/galera.sh stop            stop every node and delete the data
#   scripts/galera.sh kill N          SIGKILL node N (a crash: no clean leave)
#   scripts/galera.sh rejoin N        start node N again; it rejoins by IST, or SST (mariabackup) if it must
#   scripts/galera.sh isolate N 1|0   cut node N off the cluster (gmcast.isolate) or let it back
#   scripts/galera.sh url [N...]      a DATABASE_URL naming nodes N... in that order (default 1 2 3)
#   scripts/galera.sh with CMD...     start, run CMD with GALERA_URL set (node order 1 2 3), stop
#
# Node N listens for SQL on 127.0.0.1:(GALERA_PORT_BASE + N) (default 3310 + N), for group
# communication on 4570 + N, IST on 4580 + N and SST on 4590 + N.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
DIR="${GALERA_DIR:-$ROOT/var/galera}"
BASE="${GALERA_PORT_BASE:-3310}"
DBNAME=dialer
NODES="1 2 3"

log() { printf 'galera: %s\n' "$*" >&2; }

sql_port() { echo $((BASE + $1)); }
node_dir() { echo "$DIR/node$1"; }
pidfile() { echo "$(node_dir "$1")/mysqld.pid"; }

running() { local p; p=$(pidfile "$1"); [ -f "$p" ] && kill -0 "$(cat "$p")" 2>/dev/null; }

client() {
  local n=$1; shift
  mariadb --no-defaults --socket="$(node_dir "$n")/mysqld.sock" -uroot "$@"
}

status_of() { client "$1" -N -e "SHOW GLOBAL STATUS LIKE '$2'" 2>/dev/null | awk '{print $2}'; }

write_cnf() {
  local n=$1 d; d=$(node_dir "$n")
  # Short failure-detection timeouts: a killed node leaves the cluster in about 3 s, not 15.
  cat >"$d/my.cnf" <<EOF
[mysqld]
datadir=$d/data
socket=$d/mysqld.sock
pid-file=$d/mysqld.pid
log-error=$d/error.log
port=$(sql_port "$n")
bind-address=127.0.0.1
user=$(id -un)
skip-name-resolve
character-set-server=utf8mb4
collation-server=utf8mb4_unicode_ci
max-connections=500
innodb-buffer-pool-size=192M
innodb-flush-log-at-trx-commit=2
binlog_format=ROW
default_storage_engine=InnoDB
innodb_autoinc_lock_mode=2
wsrep_on=ON
wsrep_provider=/usr/lib/galera/libgalera_smm.so
wsrep_cluster_name=dialerapi-test
wsrep_cluster_address=gcomm://127.0.0.1:4571,127.0.0.1:4572,127.0.0.1:4573
wsrep_node_name=node$n
wsrep_node_address=127.0.0.1:457$n
wsrep_node_incoming_address=127.0.0.1:$(sql_port "$n")
wsrep_sst_method=mariabackup
wsrep_sst_auth=root:
wsrep_sst_receive_address=127.0.0.1:459$n
wsrep_slave_threads=2
wsrep_provider_options="gmcast.listen_addr=tcp://127.0.0.1:457$n;ist.recv_addr=127.0.0.1:458$n;evs.keepalive_period=PT0.5S;evs.inactive_check_period=PT0.5S;evs.suspect_timeout=PT2S;evs.inactive_timeout=PT3S;evs.install_timeout=PT3S;gcache.size=256M"
EOF
}

start_node() {
  local n=$1 d; d=$(node_dir "$n"); shift
  # setsid: a Ctrl-C on the caller stops the caller, not the nodes.
  setsid "$(command -v mariadbd || echo /usr/sbin/mariadbd)" --defaults-file="$d/my.cnf" "$@" >/dev/null 2>&1 &
}

wait_synced() {
  local n=$1 state=""
  for _ in $(seq 1 600); do
    state=$(status_of "$n" wsrep_local_state_comment || true)
    if [ "$state" = Synced ] && [ "$(status_of "$n" wsrep_ready)" = ON ]; then return 0; fi
    sleep 0.1
  done
  log "node $n is not Synced after 60 s (state: ${state:-down}); the end of its error.log:"
  tail -30 "$(node_dir "$n")/error.log" >&2
  exit 1
}

start() {
  "$ROOT/scripts/devdb.sh" install
  if ! command -v mariabackup >/dev/null 2>&1; then
    # The SST method: rsync's daemon, started as root, writes as nobody and fails.
    log "mariabackup not found: run 'make install' (scripts/system-packages.sh installs mariadb-backup)"; exit 1
  fi
  stop_all quiet
  rm -rf "$DIR"
  for n in $NODES; do
    mkdir -p "$(node_dir "$n")"
    write_cnf "$n"
  done
  log "initialising node 1"
  mariadb-install-db --defaults-file="$(node_dir 1)/my.cnf" --auth-root-authentication-method=normal \
    --skip-test-db >"$(node_dir 1)/install.log" 2>&1 || { cat "$(node_dir 1)/install.log" >&2; exit 1; }
  start_node 1 --wsrep-new-cluster
  wait_synced 1
  client 1 -e "CREATE DATABASE \`$DBNAME\` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci"
  # Nodes 2 and 3 get node 1's data by SST, one after the other (a donor serves one joiner at a time).
  for n in 2 3; do
    mkdir -p "$(node_dir "$n")/data"
    start_node "$n"
    wait_synced "$n"
  done
  log "3 nodes Synced: $(url 1 2 3)"
}

stop_all() {
  local n pid
  for n in $NODES; do
    if running "$n"; then kill "$(cat "$(pidfile "$n")")"; fi
  done
  for n in $NODES; do
    pid=$(cat "$(pidfile "$n")" 2>/dev/null || true)
    [ -n "$pid" ] || continue
    for _ in $(seq 1 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  done
  [ "${1:-}" = quiet ] || log "stopped"
}

stop() { stop_all; rm -rf "$DIR"; }

kill_node() {
  local n=$1
  running "$n" || { log "node $n is not running"; return 0; }
  kill -9 "$(cat "$(pidfile "$n")")"
  for _ in $(seq 1 100); do running "$n" || return 0; sleep 0.1; done
}

rejoin() { running "$1" || start_node "$1"; wait_synced "$1"; }

isolate() {
  client "$1" -e "SET GLOBAL wsrep_provider_options='gmcast.isolate=$2'"
  if [ "$2" = 0 ]; then
    # An isolated node stays non-Primary once let back; a restart makes it rejoin.
    kill_node "$1"
    rejoin "$1"
  fi
}

url() {
  local hosts="" n
  [ $# -gt 0 ] || set -- $NODES
  for n in "$@"; do hosts="${hosts:+$hosts,}127.0.0.1:$(sql_port "$n")"; done
  echo "mysql://root@$hosts/$DBNAME"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  kill) kill_node "$2" ;;
  rejoin) rejoin "$2" ;;
  isolate) isolate "$2" "$3" ;;
  url) shift; url "$@" ;;
  with)
    shift
    start
    GALERA_URL=$(url); export GALERA_URL
    trap stop EXIT
    status=0
    "$@" || status=$?
    exit "$status"
    ;;
  *) echo "usage: $0 start|stop|kill N|rejoin N|isolate N 1|0|url [N...]|with CMD..." >&2; exit 2 ;;
esac
