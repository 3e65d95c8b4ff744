"""The CRM's do-not-call operations of the OpenAPI document."""

from marshmallow import Schema, fields

from dialerapi.sides.crm.dnc import DncRequestSchema
from dialerapi.web.fields import PHONE_TEXT_PATTERN

PHONE = {"in": "path", "name": "phone_number", "required": True, "description": "The number, as the push takes it",
         "schema": {"type": "string", "pattern": PHONE_TEXT_PATTERN, "example": "+12125550100"}}


class DncResponseSchema(Schema):
    ok = fields.Boolean(required=True)
    phone_number = fields.String(required=True, metadata={"example": "+12125550100", "description": "E.164"})
    phone = fields.String(required=True, metadata={"example": "+12125550100",
                                                   "description": "phone_number again, under the name of the "
                                                                  "request's first release"})
    added = fields.Boolean(metadata={"description": "POST: false when it was listed already"})
    removed = fields.Boolean(metadata={"description": "DELETE: false when it was not listed"})


SCHEMAS = {"DncRequest": DncRequestSchema, "DncResponse": DncResponseSchema}


def operations(json, error, writes, limited, common):
    """The /api/dnc operations, built with document.py's helpers."""
    return {
        "/api/dnc": {"post": {
            "tags": ["do-not-call"], "summary": "List a phone number: no claim of any lead with it from the next on",
            "description": "A revocation, a do-not-call request or a registry entry (`reason`), honoured at once "
                           "(the FCC's 2024 rule allows ten business days). Every lead with the number gets its "
                           "lead.do_not_call event, with the reason as its source. The number is `phone_number`, "
                           "as the push names it, or its alias `phone`: one of the two.",
            "requestBody": {"required": True, "content": {"application/json": {
                "schema": "DncRequest", "example": {"phone_number": "+1 212 555 0100", "reason": "revoked",
                                                    "oli_id": "CRM-2026-000042"}}}},
            "responses": {"201": json("DncResponse", "Listed"), "200": json("DncResponse", "Listed already"),
                          **writes, **limited, **common}}},
        "/api/dnc/{phone_number}": {"delete": {
            "tags": ["do-not-call"], "summary": "Take a phone number off the list", "parameters": [PHONE],
            "responses": {"200": json("DncResponse", "Removed, or was not listed"),
                          "400": error("A path that is no phone number", "validation_failed"),
                          **limited, **common}}},
    }
