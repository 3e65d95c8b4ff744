"""GET /openapi.json (public, so Swagger UI at /docs/ can load it), and /docs to /docs/."""

from flask import Blueprint, current_app, redirect

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


@docs_bp.get("/docs")
@public
def docs_redirect():
    """/docs -> /docs/ (Swagger UI): a path without its slash would otherwise be 401, as every path
    the key check does not know is (web.auth)."""
    return redirect("/docs/", code=308)
