#!/usr/bin/env bash
# A whole progressive call and a whole predictive call through the engine API (/engine/), with curl
# and jq only: what a dialing engine in any language sends (README, "The engine API").
#
#   DIALER=http://127.0.0.1:8000 ENGINE_SECRET=... examples/engine-call.sh AGENT_ID
#
# The agent must be on the roster with a skill some due lead has (`dialerapi agents add`). Every
# request and answer is printed; the script stops at the first error answer.
set -euo pipefail

base=${DIALER:-http://127.0.0.1:8000}
agent=${1:?usage: engine-call.sh AGENT_ID}
: "${ENGINE_SECRET:?set ENGINE_SECRET, the engine key of the service}"
command -v jq >/dev/null || { echo "engine-call.sh needs jq (apt-get install jq)" >&2; exit 2; }

post() {  # post OPERATION JSON: print the exchange, answer the response body
  echo ">> POST /engine/$1 $2" >&2
  local answer
  answer=$(curl -sS --fail-with-body -X POST "$base/engine/$1" -H "Authorization: Bearer $ENGINE_SECRET" \
    -H 'Content-Type: application/json' --data-binary "$2")
  echo "<< $answer" >&2
  echo "$answer"
}
request_id() { cat /proc/sys/kernel/random/uuid; }
now() { date -u +%Y-%m-%dT%H:%M:%SZ; }

echo "== progressive: the engine claims for agent $agent, rings their desk, then the customer" >&2
post agent-state "{\"agent_id\": $agent, \"panel_active\": true, \"ami_idle\": true, \"wrapup_seconds\": 0}" >/dev/null
lead=$(post claim "{\"mode\": \"progressive\", \"agent_id\": $agent, \"request_id\": \"$(request_id)\"}")
oli_id=$(jq -er '.lead.oli_id' <<<"$lead")
reservation=$(jq -er '.lead.reservation_id' <<<"$lead")  # sent back with the settle: it ends this reservation only
started=$(now)
post agent-state "{\"agent_id\": $agent, \"ami_idle\": false}" >/dev/null
post call-connected "{\"oli_id\": \"$oli_id\", \"agent_id\": $agent, \"request_id\": \"$(request_id)\"}" >/dev/null
post settle "{\"oli_id\": \"$oli_id\", \"outcome\": \"answered\", \"agent_id\": $agent, \"started_at\": \"$started\",
  \"hangup_by\": \"customer\", \"hangup_cause\": \"16\", \"call_id\": \"$(request_id)\", \"reservation_id\": \"$reservation\"}" | jq -e '.lead.dial_status == "Received"' >/dev/null
post agent-state "{\"agent_id\": $agent, \"ami_idle\": true, \"wrapup_seconds\": 0}" >/dev/null

echo "== predictive: the engine dials first, then bridges the answered customer to a free agent" >&2
lead=$(post claim "{\"mode\": \"predictive\", \"request_id\": \"$(request_id)\"}")
oli_id=$(jq -er '.lead.oli_id' <<<"$lead")
reservation=$(jq -er '.lead.reservation_id' <<<"$lead")
started=$(now)
bridged=$(post bridge "{\"oli_id\": \"$oli_id\", \"request_id\": \"$(request_id)\"}" | jq -er '.agent_id')
post call-connected "{\"oli_id\": \"$oli_id\", \"agent_id\": $bridged, \"request_id\": \"$(request_id)\"}" >/dev/null
post settle "{\"oli_id\": \"$oli_id\", \"outcome\": \"answered\", \"agent_id\": $bridged, \"started_at\": \"$started\",
  \"call_id\": \"$(request_id)\", \"reservation_id\": \"$reservation\"}" | jq -e '.lead.dial_status == "Received"' >/dev/null
post agent-state "{\"agent_id\": $bridged, \"ami_idle\": true}" >/dev/null
echo "== both calls settled" >&2
