"""What every side's views share: the JSON body, bounded before it is parsed, and schema loading.

A view reads the request with json_body(), validates it with load(schema.load, body) and calls one
function that does the work in a transaction; errors are raised and rendered by web.errors (D3).
"""

import json
import re

from flask import current_app, request
from werkzeug.exceptions import RequestEntityTooLarge

from dialerapi.plumbing import clock
from dialerapi.web.errors import ApiError
from dialerapi.web.fields import MAX_BATCH, RequestContext

# Every object or array parsed costs about 60 bytes: 1 MiB of `{},` is 350,000 of them, 25 MB per
# request. The largest valid body, a batch of 500 leads, has 502; anything with more is
# refused before it is parsed.
MAX_JSON_CONTAINERS = 1024
JSON_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"')


def _containers(data):
    """How many JSON objects and arrays `data` (bytes) opens, braces inside strings not counted.

    Strings are only stripped when the bare count is over the limit, the rare case.
    """
    if data.count(b"{") + data.count(b"[") > MAX_JSON_CONTAINERS:
        data = JSON_STRING.sub(b"", data)
    return data.count(b"{") + data.count(b"[")


def json_body():
    """The request body parsed as JSON whatever its Content-Type (D3); 400 `invalid_json` otherwise.

    Bodies over MAX_CONTENT_LENGTH (1 MiB, chunked ones too) are 413 before they are parsed.
    """
    data = request.get_data(cache=True)
    # Werkzeug stops reading a chunked body (no Content-Length) at the limit without raising, so a
    # body that fills the whole limit was cut short: refuse it rather than parse a truncated batch.
    if request.content_length is None and len(data) >= current_app.config["MAX_CONTENT_LENGTH"]:
        raise RequestEntityTooLarge()
    if _containers(data) > MAX_JSON_CONTAINERS:
        raise ApiError(400, "validation_failed", [{
            "field": "body", "message": f"more than {MAX_JSON_CONTAINERS} JSON objects and arrays "
                                        f"(a batch holds at most {MAX_BATCH} leads)"}])
    try:
        # Strict UTF-8 (RFC 8259): json.loads on bytes would let CESU-encoded lone surrogates through.
        return json.loads(data.decode("utf-8"))
    except (ValueError, RecursionError):
        raise ApiError(400, "invalid_json") from None


def db_timezone():
    """DB_TIMEZONE (a ZoneInfo): the zone of every wall-clock time in requests and answers (D2)."""
    return current_app.config["DB_TIMEZONE"]


def load(loader, body):
    """Validate `body` with `loader` (a schema's load) inside a RequestContext of the time zone and now."""
    tz = db_timezone()
    with RequestContext({"tz": tz, "now": clock.now(tz)}):
        return loader(body)
