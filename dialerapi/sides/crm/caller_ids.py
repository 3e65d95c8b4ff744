"""The floor's caller IDs for automation (docs/operations/caller-ids.md): a reputation feed reads
the numbers and flags one, or sets it active again. The CRM key changes; the supervisor role
reads (web.auth). Every change is kept with the credential that made it and told as a caller_id.*
event. Numbers are added by the operator (`dialerapi caller-ids add|import`): presenting a number
the floor does not own is unlawful (the Truth in Caller ID Act).

Imports the rules, the plumbing and web, never another side.
"""

from flask import Blueprint, g, request
from marshmallow.validate import Length, OneOf, Range, Regexp

from dialerapi.plumbing import clock, limits
from dialerapi.plumbing.db import get_db
from dialerapi.rules.caller_ids import numbers
from dialerapi.rules.config import ranges
from dialerapi.web.auth import CRM, SUPERVISOR, opens
from dialerapi.sides.crm.schemas import QueryInteger
from dialerapi.web.fields import ApiSchema, Text
from dialerapi.web.requests import db_timezone, json_body, load

caller_ids_bp = Blueprint("caller_ids", __name__)
STATES = [state.value for state in numbers.State]
# An E.164 number is at most 15 digits and the `+`; room for spaces a person may type.
NUMBER_CHARS = 32


class CallerIdsQuery(ApiSchema):
    """GET /api/caller-ids: a page of the floor's numbers in number order."""

    pool = Text(load_default=None, validate=Regexp(ranges.CALLER_ID_POOL, error="a pool's name is 1-64 lower-case "
                                                                          "letters, digits, - and _"),
                metadata={"description": "Only this pool's numbers"})
    state = Text(load_default=None, validate=OneOf(STATES), metadata={"description": "active, flagged or retired"})
    after = Text(load_default=None, validate=Length(1, NUMBER_CHARS),
                 metadata={"description": "The `next` of the previous page (E.164)"})
    limit = QueryInteger(load_default=numbers.PAGE_ROWS, validate=Range(1, numbers.PAGE_ROWS))


class CallerIdPath(ApiSchema):
    number = Text(required=True, validate=Length(1, NUMBER_CHARS))


CALLER_IDS_QUERY = CallerIdsQuery()
CALLER_ID_PATH = CallerIdPath()


@caller_ids_bp.get("/api/caller-ids")
@opens(CRM, SUPERVISOR)
@limits.crm_reads
def list_caller_ids():
    """A page of the floor's numbers: 200 {ok, caller_ids: [numbers.view of each], next (the
    `after` of the next page, or null)}; 400 validation_failed."""
    query = load(CALLER_IDS_QUERY.load, request.args.to_dict())
    found, after = get_db().run(numbers.page, pool=query["pool"], state=query["state"], after=query["after"],
                                max_rows=query["limit"])
    return {"ok": True, "caller_ids": found, "next": after}


@caller_ids_bp.patch("/api/caller-ids/<path:number>")
@limits.crm_actions
def update_caller_id(number):
    """Change a number: body {state?: active | flagged | retired, note?, daily_cap? (null: the
    floor's caller_id_daily_cap), pools?}; all or nothing. 200 {ok, caller_id (with history)}; 400
    validation_failed naming each wrong field (a retired number stays retired); 404
    unknown_caller_id."""
    number = load(CALLER_ID_PATH.load, {"number": number})["number"]
    patch = json_body()
    if not isinstance(patch, dict):
        raise numbers.InvalidCallerId({"body": ["must be a JSON object of the fields to change"]})
    tz = db_timezone()

    def change(conn):
        numbers.change(conn, number, patch, clock.now(tz), g.caller.role)
        return numbers.show(conn, number)

    return {"ok": True, "caller_id": get_db().run(change)}
