"""A campaign's settings and their one validation, which `dialerapi campaigns set`
and `PATCH /api/campaigns/{form_type}` both use (docs/operations/campaigns.md lists each setting).

A campaign stores only the settings it overrides, as a JSON object; the others are the floor's
(sales_dialer_config). `merge(stored, patch)` applies a JSON merge patch (RFC 7396: a null removes
an override) and checks the result whole; `overrides(settings)` turns checked settings into
DialerConfig fields and a calendars.Calendar. Raises InvalidSettings, whose `messages` name each
setting that is wrong ({setting: [message]}).
"""

import json
from datetime import date, time

import phonenumbers
from marshmallow import RAISE, Schema, ValidationError, fields, validates_schema
from marshmallow.validate import Length, OneOf, Range

from dialerapi.rules.config import calendars, ranges
from dialerapi.rules.core.vocabulary import RETRY_OUTCOMES

NEVER = "never"
# Which automated claims a campaign's consent_required holds (rules.compliance.calling_rules.CONSENT_KINDS).
CONSENT_FOR = ("predictive", "automated", "all")
CALENDAR_SETTINGS = ("open_hours", "restricted_dates", "start_date", "end_date")


class InvalidSettings(ValidationError):
    """Settings that break a rule; `messages` is {setting: [message, ...]} (marshmallow's shape, so
    the HTTP side answers it as any validation error: 400 validation_failed with details, D3)."""

    def __init__(self, messages):
        super().__init__(messages)

    def __str__(self):
        return "; ".join(f"{name}: {' '.join(_flat(text))}" for name, text in sorted(self.messages.items()))


def _flat(messages):
    if isinstance(messages, dict):
        return [f"{key}: {' '.join(_flat(value))}" for key, value in messages.items()]
    if isinstance(messages, str):
        return [messages]
    return [text for message in messages for text in _flat(message)]


class WholeNumber(fields.Integer):
    """A JSON integer, or a number without a fraction (5.0, which JSON Schema's `integer` takes:
    docs/operations/campaigns.md); never a bool or a string."""

    def _deserialize(self, value, attr, data, **kwargs):
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValidationError("must be a whole number")
        return super()._deserialize(value, attr, data, **kwargs)


class Interval(fields.Field):
    """An open interval "HH:MM-HH:MM" of one day (the end up to 24:00, after the start)."""

    def _deserialize(self, value, attr, data, **kwargs):
        if not isinstance(value, str) or value.count("-") != 1:
            raise ValidationError('must be "HH:MM-HH:MM", e.g. "09:00-21:00"')
        first, last = value.split("-")
        try:
            start, end = calendars.minutes(first), calendars.minutes(last)
        except ValueError as exc:
            raise ValidationError(str(exc)) from None
        if start >= end:
            raise ValidationError(f"{value!r} must end after it starts (an interval does not cross midnight)")
        return value


class RestrictedDate(Schema):
    """A date or a range of dates on which the campaign does not call, with a note."""

    class Meta:
        unknown = RAISE

    date = fields.Date(required=True)
    to = fields.Date(load_default=None, allow_none=True)
    note = fields.String(load_default="", validate=Length(max=200))

    @validates_schema
    def one_range(self, data, **kwargs):
        if data.get("to") is not None and data.get("date") is not None and data["to"] < data["date"]:
            raise ValidationError("must not be before date", "to")


class OutcomeRetry(Schema):
    class Meta:
        unknown = RAISE

    delay_seconds = WholeNumber(allow_none=True, load_default=None, validate=Range(1, 30 * 86400))
    max_attempts = WholeNumber(allow_none=True, load_default=None, validate=Range(1, 1000))


class Fallback(fields.Field):
    """Minutes a personal callback waits for its owner (0 to 10080), or "never"."""

    def _deserialize(self, value, attr, data, **kwargs):
        if value == NEVER:
            return value
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int) or not (
                ranges.FALLBACK_MINUTES_RANGE[0] <= value <= ranges.FALLBACK_MINUTES_RANGE[1]):
            raise ValidationError(f'must be a whole number of minutes from {ranges.FALLBACK_MINUTES_RANGE[0]} to '
                                  f'{ranges.FALLBACK_MINUTES_RANGE[1]}, or "never"')
        return value


class Region(fields.String):
    def _deserialize(self, value, attr, data, **kwargs):
        value = super()._deserialize(value, attr, data, **kwargs)
        if value.upper() not in phonenumbers.SUPPORTED_REGIONS:
            raise ValidationError("must be an ISO 3166 alpha-2 region phonenumbers knows, e.g. US, GB, IN")
        return value.upper()


class CampaignSettingsSchema(Schema):
    """Every setting a campaign may override, each optional (docs/operations/campaigns.md)."""

    class Meta:
        unknown = RAISE
        ordered = True

    # The calendar (rules.config.calendars): wall-clock DB_TIMEZONE.
    open_hours = fields.Dict(keys=fields.String(validate=OneOf(calendars.DAYS)),
                             values=fields.List(Interval(), validate=Length(max=6)))
    restricted_dates = fields.List(fields.Nested(RestrictedDate), validate=Length(max=400))
    start_date = fields.Date()
    end_date = fields.Date()
    # The abandon rule (rules.compliance.abandons).
    enforce_abandon_limit = fields.Boolean()
    abandon_limit = fields.Float(validate=Range(*ranges.ABANDON_LIMIT_RANGE, min_inclusive=False))
    abandon_period = fields.String(validate=OneOf(ranges.ABANDON_PERIODS))
    abandon_min_answered = WholeNumber(validate=Range(0, 1_000_000))
    abandon_connect_seconds = WholeNumber(validate=Range(*ranges.ABANDON_CONNECT_SECONDS_RANGE))
    amd_false_positive_share = fields.Float(validate=Range(0, 1))
    # Retries (lead-intake-api.md, Claim and retry rules 4).
    retry_pattern = fields.List(WholeNumber(validate=Range(0, 100)), validate=Length(1, 60))
    retry_seconds = WholeNumber(validate=Range(60, 86400))
    max_tries = WholeNumber(validate=Range(1, 1000))
    outcome_retries = fields.Dict(keys=fields.String(validate=OneOf(RETRY_OUTCOMES)),
                                  values=fields.Nested(OutcomeRetry))
    # The customer's calling window, wall-clock in the customer's zone.
    obey_calling_window = fields.Boolean()
    calling_window_start = fields.Time(format="%H:%M")
    calling_window_end = fields.Time(format="%H:%M")
    personal_callback_fallback_minutes = Fallback()
    phone_default_region = Region()
    predictive = fields.Boolean()
    # The consent its leads need for automated claims (predictive ones, or progressive
    # too), beside any a state rule asks; a lead without it is only called by an agent's manual redial,
    # or (all) not at all: the redial is refused 409 not_claimable consent_required.
    consent_required = fields.String(validate=OneOf(CONSENT_FOR, error="must be predictive, automated or all"))

    @validates_schema
    def coherent(self, data, **kwargs):
        if data.get("start_date") and data.get("end_date") and data["end_date"] < data["start_date"]:
            raise ValidationError("must not be before start_date", "end_date")
        if data.get("calling_window_start") is not None and \
                data.get("calling_window_start") == data.get("calling_window_end"):
            raise ValidationError("must differ from calling_window_start: an empty window never opens",
                                  "calling_window_end")
        for day, intervals in (data.get("open_hours") or {}).items():
            spans = sorted(tuple(calendars.minutes(part) for part in text.split("-")) for text in intervals)
            if any(later[0] < earlier[1] for earlier, later in zip(spans, spans[1:])):
                raise ValidationError({day: ["intervals must not overlap"]}, "open_hours")


def check(settings):
    """The checked settings (a dict, as stored), or InvalidSettings."""
    if not isinstance(settings, dict):
        raise InvalidSettings({"settings": ["must be a JSON object of settings"]})
    try:
        loaded = CampaignSettingsSchema().load(settings)
    except ValidationError as exc:
        raise InvalidSettings(exc.messages) from None
    return stored_form(loaded)


def stored_form(loaded):
    """The JSON-able form of loaded settings: dates YYYY-MM-DD, times HH:MM, the rest as given."""
    dumped = {}
    for name, value in loaded.items():
        if name in ("start_date", "end_date"):
            value = value.isoformat()
        elif name in ("calling_window_start", "calling_window_end"):
            value = value.strftime("%H:%M")
        elif name == "restricted_dates":
            value = [{"date": item["date"].isoformat(), "to": (item["to"] or item["date"]).isoformat(),
                      "note": item["note"]} for item in value]
        dumped[name] = value
    return dumped


def merge(stored, patch):
    """`stored` settings with the JSON merge patch `patch` applied (a null removes a setting), checked
    whole. Returns the new settings; raises InvalidSettings."""
    if not isinstance(patch, dict):
        raise InvalidSettings({"settings": ["must be a JSON object of settings"]})
    unknown = [name for name in patch if name not in CampaignSettingsSchema().fields]
    if unknown:
        raise InvalidSettings({name: ["Unknown field."] for name in unknown})
    merged = {name: value for name, value in {**stored, **patch}.items() if value is not None}
    return check(merged)


def parse(text):
    """Stored settings (JSON text) as a dict; a row another release wrote wrongly reads as {}."""
    try:
        value = json.loads(text or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def overrides(settings, floor):
    """(DialerConfig field overrides, calendars.Calendar or None, predictive) of checked `settings`
    over the floor's DialerConfig `floor`. A calendar exists when a calendar setting is set."""
    values = {}
    for name in ("enforce_abandon_limit", "abandon_limit", "abandon_period", "abandon_min_answered",
                 "abandon_connect_seconds", "amd_false_positive_share", "retry_seconds", "max_tries",
                 "obey_calling_window", "phone_default_region", "consent_required"):
        if name in settings:
            values[name] = settings[name]
    if "retry_pattern" in settings:
        values["retry_pattern"] = tuple(settings["retry_pattern"])
    if "outcome_retries" in settings:
        values["outcome_retries"] = tuple(sorted(
            (outcome, rule.get("delay_seconds"), rule.get("max_attempts"))
            for outcome, rule in settings["outcome_retries"].items()))
    for name in ("calling_window_start", "calling_window_end"):
        if name in settings:
            values[name] = time.fromisoformat(settings[name])
    if "personal_callback_fallback_minutes" in settings:
        minutes = settings["personal_callback_fallback_minutes"]
        values["personal_callback_fallback_minutes"] = None if minutes == NEVER else minutes
    calendar = None
    if any(name in settings for name in CALENDAR_SETTINGS):
        calendar = calendar_of(settings, floor)
    return values, calendar, settings.get("predictive", True)


def calendar_of(settings, floor):
    """The calendars.Calendar of checked `settings` (the floor's work window on each day when they
    set no open hours)."""
    if "open_hours" in settings:
        hours = settings["open_hours"]
        days = tuple(tuple(sorted(tuple(calendars.minutes(part) for part in text.split("-"))
                                  for text in hours.get(day, ()))) for day in calendars.DAYS)
    else:
        days = calendars.window_days(floor.work_start, floor.work_end)
    restricted = tuple((date.fromisoformat(item["date"]), date.fromisoformat(item["to"]), item["note"])
                       for item in settings.get("restricted_dates", ()))
    return calendars.Calendar(
        days=days, restricted=restricted,
        start_date=date.fromisoformat(settings["start_date"]) if "start_date" in settings else None,
        end_date=date.fromisoformat(settings["end_date"]) if "end_date" in settings else None)

