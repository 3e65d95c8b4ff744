#!/usr/bin/env sh
# wrk, the load generator in C that `make bench` drives: Debian's package, installed when missing.
set -eu
command -v wrk >/dev/null 2>&1 && exit 0
if [ "$(id -u)" -ne 0 ]; then
  echo "ensure-wrk: wrk not found; installing it needs root: run 'sudo apt-get install wrk'" >&2; exit 1
fi
echo "ensure-wrk: wrk not found: installing it with apt-get" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends wrk >/dev/null
