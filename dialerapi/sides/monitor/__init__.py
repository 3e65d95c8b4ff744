"""The monitor's side: /healthz for anyone, /health, /api/health and /metrics for MONITOR_SECRET
(or WS_SECRET) (D8)."""
