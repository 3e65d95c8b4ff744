"""The CRM's do-not-call requests: a revocation taken over HTTP, honoured at
the next claim of every lead with that number (the FCC's 2024 rule allows ten business days; the
service takes it at once). docs/compliance/do-not-call.md."""

from flask import Blueprint
from marshmallow.validate import OneOf

from dialerapi.plumbing import clock, limits
from dialerapi.plumbing.db import get_db
from dialerapi.rules.compliance import do_not_call
from dialerapi.web.fields import ApiSchema, OliId, PhoneNumber, Text
from dialerapi.web.requests import db_timezone, json_body, load

dnc_bp = Blueprint("dnc", __name__)


class DncRequestSchema(ApiSchema):
    """POST /api/dnc: the `phone` to list, the `reason` and, when the request came through a lead,
    its `oli_id` (kept with the number)."""

    phone = PhoneNumber(required=True)
    reason = Text(required=True, validate=OneOf(do_not_call.CRM_REASONS, error="must be revoked, request or registry"),
                  metadata={"description": "revoked (consent revoked), request (asked not to be called), registry"})
    oli_id = OliId(load_default=None, metadata={"description": "The lead the request came through, if any"})


class DncPathSchema(ApiSchema):
    phone = PhoneNumber(required=True)


@dnc_bp.post("/api/dnc")
@limits.crm_actions
def list_number():
    """List a phone number now. Body {phone, reason: revoked | request |
    registry, oli_id?}. 201 {ok, phone (E.164), added: true}; 200 with added false when it was
    listed already; 400 validation_failed (D3)."""
    body = load(DncRequestSchema().load, json_body())
    found = get_db().run(do_not_call.crm_list, body["phone"], body["reason"], clock.now(db_timezone()), body["oli_id"])
    return {"ok": True, **found}, 201 if found["added"] else 200


@dnc_bp.delete("/api/dnc/<phone>")
@limits.crm_actions
def remove_number(phone):
    """Take a phone number off the list: 200 {ok, phone, removed (false: it was
    not listed)}; 400 validation_failed for a path that is no phone number."""
    path = load(DncPathSchema().load, {"phone": phone})
    return {"ok": True, **get_db().run(do_not_call.crm_remove, path["phone"], clock.now(db_timezone()))}
