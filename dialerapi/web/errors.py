"""Every error response of the service (decisions.md D3): `{"ok": false, "error": CODE}`.

Views raise `ApiError` (or let marshmallow's ValidationError and werkzeug's HTTPExceptions
through); the handlers registered by `register()` are the only code that builds error bodies.
"""

import json
import logging

from flask import jsonify
from marshmallow import ValidationError
from werkzeug.exceptions import HTTPException
from werkzeug.http import HTTP_STATUS_CODES

from dialerapi.plumbing.db import CommitOutcomeUnknown, DatabaseUnavailable
from dialerapi.rules.agents.roster import UnknownExtension
from dialerapi.rules.caller_ids.numbers import UnknownCallerId
from dialerapi.rules.campaigns.operations import UnknownCampaign
from dialerapi.rules.core.vocabulary import LeadInFlight, NotLive, StaleReservation, UnknownAgent, UnknownLead
from dialerapi.rules.dialing.claims import NotClaimable
from dialerapi.rules.dialing.engine import IdempotencyConflict

log = logging.getLogger(__name__)

# Galera drops a dead node in about 3 s; a client that waits this long finds a live one.
RETRY_AFTER_UNAVAILABLE_SECONDS = 2

HTTP_CODES = {
    400: "validation_failed",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    413: "payload_too_large",
    429: "rate_limited",
    500: "internal_error",
    503: "unavailable",
}


def code_for_status(status):
    """The D3 code of an HTTP status answered without a more specific one: HTTP_CODES, else the
    status's name in snake case (414 `request_uri_too_long`, 431 `request_header_fields_too_large`)."""
    return HTTP_CODES.get(status) or HTTP_STATUS_CODES.get(status, "error").lower().replace(" ", "_").replace("-", "_")


def error_body(status, mesg=""):
    """The JSON body for an error answered outside Flask (gunicorn's own 400/414/431/501, see
    deploy/gunicorn.conf.py); `mesg` becomes the 400's details, cut to 200 characters."""
    body = {"ok": False, "error": code_for_status(status)}
    if status == 400:
        body["details"] = [{"field": "request", "message": mesg[:200] or "malformed HTTP request"}]
    return json.dumps(body)


class ApiError(Exception):
    """An error answer: HTTP `status`, D3 `code`, optional `details` list, extra headers, and extra
    body fields (`reason`)."""

    def __init__(self, status, code, details=None, headers=None, **extra):
        super().__init__(code)
        self.status = status
        self.code = code
        self.details = details
        self.headers = headers or {}
        self.extra = extra


def validation_details(messages, path=""):
    """Flatten marshmallow messages into D3 `details`: [{"field": "leads[3].phone_number", "message": ...}].

    Integer keys are list indexes; `_schema` (an error of a whole object) is reported at the
    object's own path, or `body` at the top.
    """
    if isinstance(messages, str):
        return [{"field": path or "body", "message": messages}]
    if isinstance(messages, list):
        return [detail for message in messages for detail in validation_details(message, path)]
    details = []
    for key, value in messages.items():
        if isinstance(key, int):
            child = f"{path}[{key}]"
        elif key == "_schema":
            child = path
        else:
            child = f"{path}.{key}" if path else key
        details.extend(validation_details(value, child))
    return details


def error_response(status, code, details=None, headers=None, **extra):
    body = {"ok": False, "error": code, **extra}
    if details is not None:
        body["details"] = details
    response = jsonify(body)
    response.status_code = status
    response.headers.update(headers or {})
    return response


# The rules' errors that always answer one status and code (D3).
FIXED = {
    UnknownLead: (404, "unknown_oli_id"), UnknownAgent: (404, "unknown_agent"),
    UnknownExtension: (404, "unknown_extension"), LeadInFlight: (409, "lead_in_flight"),
    NotLive: (409, "lead_not_live"), StaleReservation: (409, "stale_reservation"),
    IdempotencyConflict: (409, "idempotency_conflict"), UnknownCampaign: (404, "unknown_campaign"),
    UnknownCallerId: (404, "unknown_caller_id"),
}


def register(app):
    """Install the error handlers on `app`: every error answers {"ok": false, "error": ...} (D3)."""
    for error, (status, code) in FIXED.items():
        app.register_error_handler(error, _fixed(status, code))
    for error, handler in ((ApiError, api_error), (NotClaimable, not_claimable), (CommitOutcomeUnknown, commit_unknown),
                           (DatabaseUnavailable, database_unavailable), (ValidationError, invalid),
                           (HTTPException, http_error), (Exception, unexpected)):
        app.register_error_handler(error, handler)


def _fixed(status, code):
    return lambda err: error_response(status, code)


def api_error(err):
    return error_response(err.status, err.code, err.details, err.headers, **err.extra)


def not_claimable(err):
    # Floor-wide and lead-wide refusals have codes of their own; the agent's have a reason.
    if err.reason in ("lead_in_flight", "maintenance"):
        return error_response(409, err.reason)
    return error_response(409, "not_claimable", reason=err.reason, **err.figures)


def commit_unknown(err):
    # Not a 500: the client must learn that the write may be stored, and that repeating the
    # request (an upsert, or the same request_id) is how it finds out.
    return error_response(503, "commit_unknown", headers={"Retry-After": "1"})


def database_unavailable(err):
    # Nothing was stored: the client repeats the request after Retry-After seconds, by which
    # time the service has moved to a live node or the conflict has passed (docs/operations/galera.md "Scale out").
    return error_response(503, "database_unavailable", reason=err.reason,
                          headers={"Retry-After": str(RETRY_AFTER_UNAVAILABLE_SECONDS)})


def invalid(err):
    return error_response(400, "validation_failed", validation_details(err.messages))


def http_error(err):
    code = code_for_status(err.code)
    details = [{"field": "body", "message": err.description}] if err.code == 400 else None
    headers = {k: v for k, v in err.get_headers() if k.lower() in {"allow", "retry-after"}}
    return error_response(err.code, code, details, headers)


def unexpected(err):
    log.exception("unhandled error")
    return error_response(500, "internal_error")
