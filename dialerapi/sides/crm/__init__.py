"""The CRM's side: POST /api/leads (and /api/master), send-callback-request, pending-callbacks and
pending-dispositions (lead-intake-api.md, "Endpoints"), opened by WS_SECRET."""
