#!/usr/bin/env bash
# Writes a generated WS_SECRET into ./.env when neither the environment nor .env has one, and prints it.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -n "${WS_SECRET:-}" ] || grep -qE '^[[:space:]]*(export[[:space:]]+)?WS_SECRET[[:space:]]*=[[:space:]]*[^[:space:]]' .env 2>/dev/null; then
  exit 0
fi
secret=$(python3 -c 'import secrets; print(secrets.token_urlsafe(32))')
printf 'WS_SECRET=%s\n' "$secret" >> .env
chmod 600 .env
echo "Generated the service secret and saved it in .env:"
echo "  WS_SECRET=$secret"
echo "Send it as 'Authorization: Bearer <secret>', 'X-API-Key' or 'X-Access-Key'."
