#!/usr/bin/env bash
# The Debian packages that any target of this checkout needs, installed before anything else runs
# (issue #63). `make install` runs it, and so every target that installs; tests never call apt.
#
#   scripts/system-packages.sh          repair an interrupted dpkg, then install the missing
#                                       packages in one apt transaction (root); not root: name
#                                       the command that does it, and fail
#   scripts/system-packages.sh check    exit 1 naming the missing packages (and an interrupted dpkg)
#   scripts/system-packages.sh list     print the packages, one a line
#
# A stop (Ctrl-C, SIGTERM from `timeout` or CI, a closed terminal) during the install never
# interrupts dpkg: apt runs in a session of its own, outside the stopped process group, and this
# script waits for it to finish, removes what it set up, then exits 128 + the signal. A SIGKILL
# (nothing survives it) leaves what the next run repairs: an interrupted dpkg is found at start and
# finished with `dpkg --configure -a` before anything else. Neither this script nor apt carries
# DIALERAPI_RUN, the mark by which scripts/supervise.py finds what to stop, so no supervisor ever
# kills them.
#
# DPKG_ADMINDIR (dpkg's own variable) and POLICY_RC_D move the state it reads and the file it
# writes, for tests/test_system_packages.py.
set -euo pipefail
# Unmarked, so that a supervisor stopping the target that ran this leaves it to finish.
if [ -n "${DIALERAPI_RUN:-}" ]; then exec env -u DIALERAPI_RUN bash "$0" "$@"; fi

PACKAGES=(
  mariadb-server mariadb-client  # scripts/devdb.sh: the private database of every target
  mariadb-backup galera-4        # scripts/galera.sh: make test-galera, the cluster bench
  nginx                          # the tests of what nginx does in front of gunicorn
  redis-server                   # rate limits shared between workers
  chromium chromium-driver       # the panel and board tests in a real browser
  curl jq                        # README's tour, examples/engine-call.sh
  wrk                            # make bench's load generator
)
ADMINDIR=${DPKG_ADMINDIR:-/var/lib/dpkg}
POLICY_RC_D=${POLICY_RC_D:-/usr/sbin/policy-rc.d}
# The first line after the shebang marks a policy-rc.d as ours, so a leftover of a killed run goes.
POLICY_MARK="# dialerapi scripts/system-packages.sh: no service starts during its install"

log() { printf 'system-packages: %s\n' "$*" >&2; }

missing() {
  local package
  for package in "${PACKAGES[@]}"; do
    if [ "$(dpkg-query -W -f='${db:Status-Abbrev}' "$package" 2>/dev/null)" != "ii " ]; then
      echo "$package"
    fi
  done
}

# apt's own test ("dpkg was interrupted"): work left in updates/; and dpkg's audit of half-done packages.
interrupted() {
  [ -n "$(ls -A "$ADMINDIR/updates" 2>/dev/null)" ] || [ -n "$(dpkg --audit 2>/dev/null)" ]
}

stopped_by=0
on_signal() { stopped_by=$1; log "stop asked (signal $1): waiting for apt/dpkg to finish first"; }
trap 'on_signal 2' INT
trap 'on_signal 15' TERM
trap 'on_signal 1' HUP

# Run a package command to its end whatever signal this script gets: its own session (setsid), so a
# signal to this process group never reaches it; the real clock (no libfaketime: apt checks
# signature dates); no supervisor's mark. Returns the command's status.
unstoppable() {
  env -u LD_PRELOAD -u DIALERAPI_RUN DEBIAN_FRONTEND=noninteractive setsid -w "$@" &
  local pid=$! status
  while :; do
    status=0
    wait "$pid" || status=$?
    # wait returns early when a trapped signal arrives; the command is still running then.
    if kill -0 "$pid" 2>/dev/null; then continue; fi
    return "$status"
  done
}

finish() {
  if [ "$stopped_by" -ne 0 ]; then
    log "stopped by signal $stopped_by after apt/dpkg finished; nothing is left half-done"
    exit $((128 + stopped_by))
  fi
}

remove_our_policy() {
  if [ -f "$POLICY_RC_D" ] && [ "$(sed -n 2p "$POLICY_RC_D")" = "$POLICY_MARK" ]; then rm -f "$POLICY_RC_D"; fi
}

install() {
  local wanted=() repair=no
  mapfile -t wanted < <(missing)
  if interrupted; then repair=yes; fi
  if [ "$repair" = no ] && [ "${#wanted[@]}" -eq 0 ]; then return 0; fi
  if [ "$(id -u)" -ne 0 ]; then
    if [ "$repair" = yes ]; then log "dpkg was interrupted: run 'sudo dpkg --configure -a'"; fi
    if [ "${#wanted[@]}" -gt 0 ]; then log "missing Debian packages: run 'sudo apt-get install --no-install-recommends ${wanted[*]}'"; fi
    exit 1
  fi
  if [ "$repair" = yes ]; then
    log "dpkg was interrupted: repairing it first with 'dpkg --configure -a'"
    unstoppable dpkg --configure -a
    finish
  fi
  if [ "${#wanted[@]}" -eq 0 ]; then return 0; fi
  log "installing ${wanted[*]} (one apt transaction)"
  remove_our_policy
  local created=no
  # Debian starts a package's own service on install; the targets start private instances instead.
  if [ ! -e "$POLICY_RC_D" ]; then
    printf '#!/bin/sh\n%s\nexit 101\n' "$POLICY_MARK" >"$POLICY_RC_D"
    chmod 755 "$POLICY_RC_D"
    created=yes
  fi
  local status=0 lock=(-o DPkg::Lock::Timeout=300)
  unstoppable apt-get "${lock[@]}" update -qq >/dev/null || status=$?
  if [ "$status" -eq 0 ]; then
    unstoppable apt-get "${lock[@]}" install -y -qq --no-install-recommends "${wanted[@]}" >/dev/null || status=$?
  fi
  if [ "$created" = yes ]; then rm -f "$POLICY_RC_D"; fi
  finish
  if [ "$status" -ne 0 ]; then log "apt-get failed (exit $status)"; exit "$status"; fi
  log "installed ${wanted[*]}"
}

case "${1:-install}" in
  install) install ;;
  list) printf '%s\n' "${PACKAGES[@]}" ;;
  check)
    problems=0
    if interrupted; then log "dpkg was interrupted: run 'dpkg --configure -a' (make install does)"; problems=1; fi
    mapfile -t wanted < <(missing)
    if [ "${#wanted[@]}" -gt 0 ]; then log "missing Debian packages: ${wanted[*]}: run 'make install'"; problems=1; fi
    exit "$problems" ;;
  *) echo "usage: $0 [install|check|list]" >&2; exit 2 ;;
esac
