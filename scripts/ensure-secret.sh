#!/usr/bin/env bash
# Writes a generated WS_SECRET (the CRM's key), ENGINE_SECRET (the dialing engine's key, for
# /engine/) and MONITOR_SECRET (the read-only key of /health and /metrics) into ./.env when neither
# the environment nor .env has one, and prints what it wrote. Agent panels get tokens (docs/operations/keys.md).
set -euo pipefail
cd "$(dirname "$0")/.."

ensure() {  # ensure NAME WHAT
  local name=$1 what=$2
  if [ -n "${!name:-}" ] || grep -qE "^[[:space:]]*(export[[:space:]]+)?$name[[:space:]]*=[[:space:]]*[^[:space:]]" .env 2>/dev/null; then
    return 0
  fi
  local secret
  secret=$(python3 -c 'import secrets; print(secrets.token_urlsafe(32))')
  printf '%s=%s\n' "$name" "$secret" >> .env
  chmod 600 .env
  echo "Generated $what and saved it in .env:"
  echo "  $name=$secret"
}

ensure WS_SECRET "the CRM's secret (also mints agent tokens)"
ensure ENGINE_SECRET "the dialing engine's secret (/engine/ only)"
ensure MONITOR_SECRET "the monitor's read-only secret (/health, /metrics)"
