"""Field types and limits every side's request schemas share (marshmallow).

Field names, limits and messages are those of lead-intake-api.md ("Resources and their fields",
"Limits") and decisions.md D2-D4. Unknown keys are rejected with the message `unknown field`
(D3). What a schema needs to know of the request (the time zone, the priority catalog) comes in
through `RequestContext`:

    with RequestContext({"tz": ZoneInfo("UTC"), "now": now}):
        callback = SendCallbackSchema().load(body)
"""

import re
from datetime import timedelta

from marshmallow import RAISE, Schema, ValidationError, fields
from marshmallow.experimental.context import Context
from marshmallow.validate import Length, Range

from dialerapi.plumbing.clock import parse_wall_clock
from dialerapi.plumbing.config import SETTINGS

DEFAULT_MAX_TOKEN_SECONDS = int(SETTINGS["AGENT_TOKEN_MAX_SECONDS"].default)

RequestContext = Context[dict]

MAX_CALLBACK_PAST = timedelta(minutes=5)
EMPLOYEE_ID = Range(1, 2**63 - 1, error="must be an employee id from 1 to 2^63-1")

MAX_BATCH = 500
PHONE_DIGITS = (10, 15)
NOT_A_DIGIT = re.compile(r"[^0-9]")


class ApiSchema(Schema):
    """Base schema: unknown keys are errors reported as `unknown field` (D3)."""

    error_messages = {"unknown": "unknown field", "type": "must be a JSON object"}

    class Meta:
        unknown = RAISE


# What the fields accept, as JSON Schema (ECMA-262) patterns for the OpenAPI document (
# the document is the contract). Python's `\d` and `\s` take other scripts' digits and spaces, so
# the classes are spelled out.
_YEAR = "(?:1[0-9]{3}|[2-8][0-9]{3}|9[0-8][0-9]{2}|99[0-8][0-9]|999[0-8])"  # 1000-9998, as parse_wall_clock
_LEAP_YEAR = ("(?:(?:1[0-9]|[2-9][0-9])(?:0[48]|[2468][048]|[13579][26])"
              "|(?:1[26]|2[048]|3[26]|4[048]|5[26]|6[048]|7[26]|8[048]|9[26])00)")
_MONTH_DAY = "(?:(?:0[1-9]|1[0-2])-(?:0[1-9]|1[0-9]|2[0-8])|(?:0[13-9]|1[0-2])-(?:29|30)|(?:0[13578]|1[02])-31)"
WALL_CLOCK_PATTERN = (f"^(?:{_YEAR}-{_MONTH_DAY}|{_LEAP_YEAR}-02-29)[T ](?:[01][0-9]|2[0-3]):[0-5][0-9]"
                      "(?::[0-5][0-9](?:[.][0-9]{1,6})?)?(?:Z|[+-](?:[01][0-9]|2[0-3]):?[0-5][0-9])?$")
DAY_PATTERN = f"^(?:{_YEAR}-{_MONTH_DAY}|{_LEAP_YEAR}-02-29)$"
# Python's str.strip() also strips the separators U+001C-U+001F and U+0085, which ECMA's \s leaves.
OLI_ID_PATTERN = "^[^\\s\\x1c-\\x1f\\x85](?:[\\s\\S]*[^\\s\\x1c-\\x1f\\x85])?$"
PHONE_TEXT_PATTERN = "^[^0-9]*(?:[0-9][^0-9]*){10,15}$"


def whole_number(value):
    """`value` as an int when it is a JSON number without a fraction (`5.0`, which JSON Schema's
    `integer` takes), else unchanged."""
    if type(value) is float and value.is_integer():
        return int(value)
    return value


class StrictInteger(fields.Integer):
    """A JSON integer: a number without a fraction (`5`, or `5.0` as JSON Schema's `integer` takes
    it); strings, booleans and `5.5` are rejected (D4)."""

    default_error_messages = {"invalid": "must be an integer"}

    def __init__(self, **kwargs):
        super().__init__(strict=True, **kwargs)

    def _validated(self, value):
        return super()._validated(whole_number(value))


class Text(fields.String):
    """A JSON string of valid Unicode text; lengths are counted in characters (D4).

    A lone surrogate (`"\\ud800"` in JSON) is refused: it cannot be stored as utf8mb4.
    """

    default_error_messages = {"invalid": "must be a string", "invalid_utf8": "must be valid Unicode text"}

    def _deserialize(self, value, attr, data, **kwargs):
        text = super()._deserialize(value, attr, data, **kwargs)
        if not is_unicode_text(text):
            raise self.make_error("invalid_utf8")
        return text


class OliId(Text):
    """An oli_id: 1-100 characters, without whitespace at either end (OLI_ID_PATTERN).

    MariaDB compares oli_id with PAD SPACE (`'PAD-1 '` equals `'PAD-1'`), so an id with a trailing
    space would find, and change, another lead; no CRM means an id with spaces around it either.
    """

    default_error_messages = {"padded": "must not begin or end with whitespace"}

    def __init__(self, metadata=None, **kwargs):
        super().__init__(validate=Length(1, 100), metadata={"pattern": OLI_ID_PATTERN, **(metadata or {})}, **kwargs)

    def _deserialize(self, value, attr, data, **kwargs):
        text = super()._deserialize(value, attr, data, **kwargs)
        if text != text.strip():
            raise self.make_error("padded")
        return text


def is_unicode_text(text):
    """False when `text` holds a lone surrogate, which utf8mb4 cannot store."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def phone_digits(value):
    """The digits of a phone number sent as a JSON string or integer; None for any other JSON type (D4)."""
    value = whole_number(value)
    if isinstance(value, bool) or not isinstance(value, (str, int)) or (isinstance(value, int) and value < 0):
        return None
    return NOT_A_DIGIT.sub("", str(value))


class PhoneNumber(fields.Field):
    """A phone number sent as a JSON string or integer, stored as its digits only (D4).

    `+91 98765-43210` loads as `919876543210`; after stripping everything but 0-9 the length must
    be 10-15.
    """

    def __init__(self, metadata=None, **kwargs):
        low, high = PHONE_DIGITS
        shapes = [{"type": "string", "pattern": PHONE_TEXT_PATTERN},
                  {"type": "integer", "minimum": 10 ** (low - 1), "maximum": 10 ** high - 1}]
        super().__init__(metadata={"anyOf": shapes, **(metadata or {})}, **kwargs)

    def _deserialize(self, value, attr, data, **kwargs):
        digits = phone_digits(value)
        if digits is None:
            raise ValidationError("must be a string or a non-negative integer")
        low, high = PHONE_DIGITS
        if not low <= len(digits) <= high:
            raise ValidationError(f"must be {low}-{high} digits after removing spaces and punctuation")
        return digits


class WallClockDateTime(fields.Field):
    """A date and time per D2, loaded as naive wall-clock time in the request's DB_TIMEZONE
    (WALL_CLOCK_PATTERN says which in the OpenAPI document; the service also takes ISO 8601's
    comma fraction and surrounding spaces)."""

    def __init__(self, metadata=None, **kwargs):
        super().__init__(metadata={"pattern": WALL_CLOCK_PATTERN, **(metadata or {})}, **kwargs)

    def _deserialize(self, value, attr, data, **kwargs):
        try:
            return parse_wall_clock(value, RequestContext.get()["tz"])
        except ValueError:
            raise ValidationError(
                "must be a date and time: YYYY-MM-DD HH:MM[:SS] or ISO 8601; date-only values are rejected"
            ) from None


class StrictBoolean(fields.Boolean):
    """A JSON true or false only."""

    truthy = {True}
    falsy = {False}
    default_error_messages = {"invalid": "must be true or false"}



class TokenLifetime(Schema):
    """`lifetimeSeconds` of a token request (agent tokens; supervisor tokens):
    optional, 1 to `max_seconds` (AGENT_TOKEN_MAX_SECONDS) when the schema is made with it."""

    lifetimeSeconds = StrictInteger(
        validate=Range(1, error="must be at least 1 second"), error_messages={"invalid": "must be a whole number of seconds"},
        metadata={"maximum": DEFAULT_MAX_TOKEN_SECONDS, "description": (
            f"At most AGENT_TOKEN_MAX_SECONDS ({DEFAULT_MAX_TOKEN_SECONDS:,} unless the service sets it otherwise); "
            "default AGENT_TOKEN_SECONDS")})

    def __init__(self, max_seconds=None, **kwargs):
        """`max_seconds`: AGENT_TOKEN_MAX_SECONDS (None only for the OpenAPI document, which has no config)."""
        super().__init__(**kwargs)
        if max_seconds is not None:
            # A new list: the instance's field shares its validators with the class's, and appending
            # would add one more Range to every later schema (and to the OpenAPI document) per request.
            field = self.fields["lifetimeSeconds"]
            field.validators = [*field.validators, Range(
                1, max_seconds, error=f"must be 1 to {max_seconds} seconds (AGENT_TOKEN_MAX_SECONDS)")]
