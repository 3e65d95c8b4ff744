"""The monitor side: liveness for anyone (/healthz), detailed health and Prometheus metrics for
the sysadmin's cron and Prometheus (D8), opened by MONITOR_SECRET or WS_SECRET.

Imports upkeep (health, observability), the plumbing and web, never another side.
"""

from flask import Blueprint, Response, current_app

from dialerapi.upkeep import health, observability
from dialerapi.web.auth import CRM, MONITOR, opens, public
from dialerapi.web.requests import db_timezone

health_bp = Blueprint("health", __name__)

blueprints = (health_bp,)


@health_bp.get("/healthz")
@public
def healthz():
    """Liveness from cached checks: exactly {"ok": true, "ami": BOOL, "db": BOOL} (D8). Public."""
    return current_app.extensions["dialerapi.health"].snapshot()


@health_bp.get("/health")
@health_bp.get("/api/health")
@opens(CRM, MONITOR)
def detailed_health():
    """Detailed health for the sysadmin's cron (D8): 200 healthy, 503 unhealthy; same body either way."""
    return health.report(current_app._get_current_object())


@health_bp.get("/metrics")
@opens(CRM, MONITOR)
def metrics():
    """Prometheus metrics (text exposition format); authenticated like every non-public path."""
    body = observability.exposition(current_app.config["DATABASE_URL"], db_timezone())
    return Response(body, mimetype="text/plain", headers={"Content-Type": "text/plain; version=0.0.4; charset=utf-8"})
