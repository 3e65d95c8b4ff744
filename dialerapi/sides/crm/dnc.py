"""The CRM's do-not-call requests: a revocation taken over HTTP, honoured at
the next claim of every lead with that number (the FCC's 2024 rule allows ten business days; the
service takes it at once). docs/compliance/do-not-call.md."""

from flask import Blueprint
from marshmallow import ValidationError, post_load, validates_schema
from marshmallow.validate import OneOf

from dialerapi.plumbing import clock, limits
from dialerapi.plumbing.db import get_db
from dialerapi.rules.compliance import do_not_call
from dialerapi.web.fields import ApiSchema, OliId, PhoneNumber, Text
from dialerapi.web.requests import db_timezone, json_body, load

dnc_bp = Blueprint("dnc", __name__)


class DncRequestSchema(ApiSchema):
    """POST /api/dnc: the `phone_number` to list (the push's name for a lead's number; `phone`, the
    name this request took first, is its alias: one of the two), the `reason` and, when the request
    came through a lead, its `oli_id` (kept with the number). Loads as {phone_number, reason,
    oli_id}."""

    phone_number = PhoneNumber(metadata={"description": "The number, as the push takes it"})
    phone = PhoneNumber(metadata={"description": "An alias of phone_number, for CRMs written against the "
                                                 "request's first release: give one of the two"})
    reason = Text(required=True, validate=OneOf(do_not_call.CRM_REASONS, error="must be revoked, request or registry"),
                  metadata={"description": "revoked (consent revoked), request (asked not to be called), registry"})
    oli_id = OliId(load_default=None, metadata={"description": "The lead the request came through, if any"})

    @validates_schema
    def one_number(self, data, **kwargs):
        if "phone_number" in data and "phone" in data:
            raise ValidationError("give phone_number or its alias phone, not both", "phone")
        if "phone_number" not in data and "phone" not in data:
            raise ValidationError("Missing data for required field.", "phone_number")

    @post_load
    def named(self, data, **kwargs):
        return {"phone_number": data.pop("phone", None), **data}


class DncPathSchema(ApiSchema):
    phone_number = PhoneNumber(required=True)


@dnc_bp.post("/api/dnc")
@limits.crm_actions
def list_number():
    """List a phone number now. Body {phone_number (or its alias phone), reason: revoked | request |
    registry, oli_id?}. 201 {ok, phone_number (E.164), phone (the same: the alias), added: true};
    200 with added false when it was listed already; 400 validation_failed (D3)."""
    body = load(DncRequestSchema().load, json_body())
    found = get_db().run(do_not_call.crm_list, body["phone_number"], body["reason"], clock.now(db_timezone()),
                         body["oli_id"])
    return {"ok": True, **found, "phone": found["phone_number"]}, 201 if found["added"] else 200


@dnc_bp.delete("/api/dnc/<phone_number>")
@limits.crm_actions
def remove_number(phone_number):
    """Take a phone number off the list: 200 {ok, phone_number, phone (its alias), removed (false: it
    was not listed)}; 400 validation_failed for a path that is no phone number."""
    path = load(DncPathSchema().load, {"phone_number": phone_number})
    found = get_db().run(do_not_call.crm_remove, path["phone_number"], clock.now(db_timezone()))
    return {"ok": True, **found, "phone": found["phone_number"]}
