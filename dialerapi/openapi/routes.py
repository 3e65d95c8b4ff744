"""GET /openapi.json: the OpenAPI document (public, so Swagger UI at /docs can load it)."""

from flask import Blueprint, current_app

from dialerapi.openapi.document import build
from dialerapi.web.auth import public

docs_bp = Blueprint("api_docs", __name__)


@docs_bp.get("/openapi.json")
@public
def openapi_document():
    """The OpenAPI 3.1 document (public, so Swagger UI at /docs can load it)."""
    document = current_app.extensions.get("dialerapi.openapi")
    if document is None:
        document = current_app.extensions["dialerapi.openapi"] = build()
    return document
