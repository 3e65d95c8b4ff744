"""HTTP views, one blueprint per resource area (lead-intake-api.md, "Endpoints").

A view reads the request, validates it with a schema, calls one function that does the work in a
transaction, and returns the JSON body. Errors are raised and rendered by errors.py.
"""

import json

from flask import Blueprint, current_app, request
from werkzeug.exceptions import RequestEntityTooLarge

from . import catalog, clock, leads, schemas
from .auth import public
from .db import get_db
from .errors import ApiError

leads_bp = Blueprint("leads", __name__)
catalog_bp = Blueprint("catalog", __name__)
health_bp = Blueprint("health", __name__)

blueprints = (leads_bp, catalog_bp, health_bp)


def json_body():
    """The request body parsed as JSON whatever its Content-Type (D3); 400 `invalid_json` otherwise.

    Bodies over MAX_CONTENT_LENGTH (1 MiB, chunked ones too) are 413 before they are parsed.
    """
    data = request.get_data(cache=True)
    # Werkzeug stops reading a chunked body (no Content-Length) at the limit without raising, so a
    # body that fills the whole limit was cut short: refuse it rather than parse a truncated batch.
    if request.content_length is None and len(data) >= current_app.config["MAX_CONTENT_LENGTH"]:
        raise RequestEntityTooLarge()
    try:
        return json.loads(data)
    except (ValueError, RecursionError):
        raise ApiError(400, "invalid_json") from None


def db_timezone():
    return current_app.config["DB_TIMEZONE"]


@leads_bp.post("/api/leads")
@leads_bp.post("/api/master")
def push_leads():
    """Upsert one lead or a batch of 1-500 (lead-intake-api.md, POST /api/leads; D4). 201 always."""
    body = json_body()
    db = get_db()
    with schemas.RequestContext({"tz": db_timezone(), "priorities": db.run(catalog.push_priorities)}):
        batch = schemas.load_push(body)
    results = db.run(leads.push_leads, batch, clock.now(db_timezone()))
    return {"ok": True, "leads": results}, 201


@catalog_bp.get("/api/pause-reasons")
@public
def pause_reasons():
    """The pause-reason catalog (lead-intake-api.md, GET /api/pause-reasons). Public."""
    return get_db().run(catalog.pause_reasons)


@health_bp.get("/healthz")
@public
def healthz():
    """Liveness from cached checks: exactly {"ok": true, "ami": BOOL, "db": BOOL} (D8). Public."""
    return current_app.extensions["dialerapi.health"].snapshot()
