#!/usr/bin/env bash
# A whole progressive call and a whole predictive call through the engine API (/engine/), with curl
# and jq only: what a dialing engine in any language sends (docs/engine/api.md).
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
claimed() {  # claimed ANSWER: true when the claim gave a lead; otherwise say why it may not have
  if jq -e '.lead != null' <<<"$1" >/dev/null; then return 0; fi
  echo "!! nothing to call: the claim answered \"lead\": null, so no lead is due for this claim now." >&2
  local floor
  floor=$(post floor '{}')
  echo "   Leads due per form_type (POST /engine/floor):" >&2
  jq -r '.form_types[] | "     \(.form_type): \(.leads_due) due"' <<<"$floor" >&2
  jq -r '.work_window | "   The work window is \(.start)-\(.end) (wall-clock in DB_TIMEZONE) and "
    + if .open then "open now." else "closed now: a lead pushed outside it is due at the next work start, "
    + .next_start + "." end' <<<"$floor" >&2
  cat >&2 <<'WHY'
   To try it now at any hour: `dialerapi config set work_start=00:00 work_end=23:59:59`, then push
   the lead again. Otherwise, most often:
   - no due lead has a form_type among the agent's skills (`dialerapi agents list`);
   - the lead is on a call already, or was settled (a push of the same oli_id makes it due again).
WHY
  return 1
}
now() { date -u +%Y-%m-%dT%H:%M:%SZ; }

echo "== progressive: the engine claims for agent $agent, rings their desk, then the customer" >&2
post agent-state "{\"agent_id\": $agent, \"panel_active\": true, \"ami_idle\": true, \"wrapup_seconds\": 0}" >/dev/null
lead=$(post claim "{\"mode\": \"progressive\", \"agent_id\": $agent, \"request_id\": \"$(request_id)\"}")
claimed "$lead" || exit 1
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
claimed "$lead" || exit 1
oli_id=$(jq -er '.lead.oli_id' <<<"$lead")
reservation=$(jq -er '.lead.reservation_id' <<<"$lead")
started=$(now)
bridged=$(post bridge "{\"oli_id\": \"$oli_id\", \"request_id\": \"$(request_id)\"}" | jq -er '.agent_id')
post call-connected "{\"oli_id\": \"$oli_id\", \"agent_id\": $bridged, \"request_id\": \"$(request_id)\"}" >/dev/null
post settle "{\"oli_id\": \"$oli_id\", \"outcome\": \"answered\", \"agent_id\": $bridged, \"started_at\": \"$started\",
  \"call_id\": \"$(request_id)\", \"reservation_id\": \"$reservation\"}" | jq -e '.lead.dial_status == "Received"' >/dev/null
post agent-state "{\"agent_id\": $bridged, \"ami_idle\": true}" >/dev/null
echo "== both calls settled" >&2
