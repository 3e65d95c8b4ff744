"""A campaign's settings and their one validation, which `dialerapi campaigns set`
and `PATCH /api/campaigns/{form_type}` both use (docs/operations/campaigns.md lists each setting).

A campaign stores only the settings it overrides, as a JSON object; the others are the floor's
(sales_dialer_config). `merge(stored, patch)` applies a JSON merge patch (RFC 7396: a null removes
an override) and checks the result whole; `overrides(settings)` turns checked settings into
DialerConfig fields and a calendars.Calendar. Raises InvalidSettings, whose `messages` name each
setting that is wrong ({setting: [message]}).
"""

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, time

import phonenumbers
from marshmallow import RAISE, Schema, ValidationError, fields, validates_schema
from marshmallow.validate import Length, OneOf, Range, Regexp

from dialerapi.rules.config import calendars, ranges
from dialerapi.rules.core import e164
from dialerapi.rules.core.kinds import CALLER_ID_TIERS, CallerIdFallback, ConsentFor
from dialerapi.rules.core.vocabulary import RETRY_OUTCOMES

NEVER = "never"
POOL_NAME = "must be 1-64 lower-case letters, digits, - and _"
# Which automated claims a campaign's consent_required holds (rules.compliance.calling_rules.CONSENT_KINDS).
CONSENT_FOR = tuple(kind.value for kind in ConsentFor)


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
        try:
            calendars.interval(value)
        except ValueError as exc:
            raise ValidationError(str(exc)) from None
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


class CallerIdNumber(fields.String):
    """One of the floor's numbers in E.164 (`+19195550100`), stored as written back (`+` and digits)."""

    def _deserialize(self, value, attr, data, **kwargs):
        try:
            return e164.text(e164.digits(e164.parse(super()._deserialize(value, attr, data, **kwargs))))
        except ValueError as exc:
            raise ValidationError(str(exc)) from None


class MatchChain(fields.List):
    """The caller-ID tiers a claim tries, best first: area_code, state, pool, or some of them in that order."""

    def __init__(self, **kwargs):
        super().__init__(fields.String(validate=OneOf(CALLER_ID_TIERS)), validate=Length(1, len(CALLER_ID_TIERS)),
                         **kwargs)

    def _deserialize(self, value, attr, data, **kwargs):
        chain = super()._deserialize(value, attr, data, **kwargs)
        if chain != [tier for tier in CALLER_ID_TIERS if tier in chain]:
            raise ValidationError("must be area_code, state and pool, or some of them, in that order and each once")
        return chain


# A campaign's settings, each declared once: its validation, how it is stored, how the rules read
# it (a DialerConfig field) and how it is answered (`effective`). The schema, the stored form, the
# overrides and the effective view are built from this table.


def _same(value):
    return value


def _iso(value):
    return value.isoformat()


def _hhmm(value):
    return value.strftime("%H:%M")


@dataclass(frozen=True)
class Setting:
    """One campaign setting: `field` validates it (a marshmallow field); `store` makes a loaded value
    the JSON it is stored as; `read` makes the stored JSON a DialerConfig field's value (None: the
    setting is part of the calendar, not a field); `answer` reads it back off a DialerConfig."""

    field: fields.Field
    answer: Callable
    store: Callable = _same
    read: Callable | None = _same


def _open_hours(config):
    calendar = config.calendar
    return None if calendar is None else {
        day: [f"{calendars.hhmm(start)}-{calendars.hhmm(end)}" for start, end in calendar.days[index]]
        for index, day in enumerate(calendars.DAYS)}


def _restricted_dates(config):
    calendar = config.calendar
    return [] if calendar is None else [{"date": first.isoformat(), "to": last.isoformat(), "note": note}
                                        for first, last, note in calendar.restricted]


def _calendar_date(name):
    def answer(config):
        moment = None if config.calendar is None else getattr(config.calendar, name)
        return moment.isoformat() if moment else None
    return answer


def _config(name):
    return lambda config: getattr(config, name)


def _stored_dates(value):
    return [{"date": item["date"].isoformat(), "to": (item["to"] or item["date"]).isoformat(), "note": item["note"]}
            for item in value]


def _outcome_retries(stored):
    return tuple(sorted((outcome, rule.get("delay_seconds"), rule.get("max_attempts"))
                        for outcome, rule in stored.items()))


def _fallback(minutes):
    return None if minutes == NEVER else minutes


SETTINGS = {
    # The calendar (rules.config.calendars): wall-clock DB_TIMEZONE.
    "open_hours": Setting(fields.Dict(keys=fields.String(validate=OneOf(calendars.DAYS)),
                                      values=fields.List(Interval(), validate=Length(max=6))),
                          _open_hours, read=None),
    "restricted_dates": Setting(fields.List(fields.Nested(RestrictedDate), validate=Length(max=400)),
                                _restricted_dates, store=_stored_dates, read=None),
    "start_date": Setting(fields.Date(), _calendar_date("start_date"), store=_iso, read=None),
    "end_date": Setting(fields.Date(), _calendar_date("end_date"), store=_iso, read=None),
    # The abandon rule (rules.compliance.abandons).
    "enforce_abandon_limit": Setting(fields.Boolean(), _config("enforce_abandon_limit")),
    "abandon_limit": Setting(fields.Float(validate=Range(*ranges.ABANDON_LIMIT_RANGE, min_inclusive=False)),
                             _config("abandon_limit")),
    "abandon_period": Setting(fields.String(validate=OneOf(ranges.ABANDON_PERIODS)), _config("abandon_period")),
    "abandon_min_answered": Setting(WholeNumber(validate=Range(0, 1_000_000)), _config("abandon_min_answered")),
    "abandon_connect_seconds": Setting(WholeNumber(validate=Range(*ranges.ABANDON_CONNECT_SECONDS_RANGE)),
                                       _config("abandon_connect_seconds")),
    "amd_false_positive_share": Setting(fields.Float(validate=Range(0, 1)), _config("amd_false_positive_share")),
    # Retries (lead-intake-api.md, Claim and retry rules 4).
    "retry_pattern": Setting(fields.List(WholeNumber(validate=Range(0, 100)), validate=Length(1, 60)),
                             lambda config: list(config.retry_pattern), read=tuple),
    "retry_seconds": Setting(WholeNumber(validate=Range(60, 86400)), _config("retry_seconds")),
    "max_tries": Setting(WholeNumber(validate=Range(1, 1000)), _config("max_tries")),
    "outcome_retries": Setting(fields.Dict(keys=fields.String(validate=OneOf(RETRY_OUTCOMES)),
                                           values=fields.Nested(OutcomeRetry)),
                               lambda config: {outcome: {"delay_seconds": delay, "max_attempts": most}
                                               for outcome, delay, most in config.outcome_retries},
                               read=_outcome_retries),
    # The customer's calling window, wall-clock in the customer's zone.
    "obey_calling_window": Setting(fields.Boolean(), _config("obey_calling_window")),
    "calling_window_start": Setting(fields.Time(format="%H:%M"), lambda config: _hhmm(config.calling_window_start),
                                    store=_hhmm, read=time.fromisoformat),
    "calling_window_end": Setting(fields.Time(format="%H:%M"), lambda config: _hhmm(config.calling_window_end),
                                  store=_hhmm, read=time.fromisoformat),
    "personal_callback_fallback_minutes": Setting(
        Fallback(), lambda config: NEVER if config.personal_callback_fallback_minutes is None
        else config.personal_callback_fallback_minutes, read=_fallback),
    "phone_default_region": Setting(Region(), _config("phone_default_region")),
    "predictive": Setting(fields.Boolean(), _config("predictive")),
    # The consent its leads need for automated claims (predictive ones, or progressive too), beside any
    # a state rule asks; a lead without it is only called by an agent's manual redial, or (all) not at
    # all: the redial is refused 409 not_claimable consent_required.
    "consent_required": Setting(fields.String(validate=OneOf(CONSENT_FOR, error="must be predictive, automated or all")),
                                _config("consent_required")),
    # The caller ID its claims present (rules.caller_ids): its pool, the tiers tried, what happens
    # when none is eligible, its default number, and whether a lead sees the number it saw before.
    "caller_id_pool": Setting(fields.String(validate=Regexp(ranges.CALLER_ID_POOL, error=POOL_NAME)),
                              lambda config: config.caller_id_pool or config.caller_id_default_pool),
    "caller_id_match": Setting(MatchChain(), lambda config: list(config.caller_id_match), read=tuple),
    "caller_id_fallback": Setting(fields.String(validate=OneOf(tuple(CallerIdFallback))),
                                  _config("caller_id_fallback")),
    "caller_id_default": Setting(CallerIdNumber(),
                                 lambda config: None if config.caller_id_default is None else e164.text(config.caller_id_default),
                                 read=lambda text: int(text[1:])),
    "caller_id_sticky": Setting(fields.Boolean(), _config("caller_id_sticky")),
}
CALENDAR_SETTINGS = tuple(name for name, setting in SETTINGS.items() if setting.read is None)


class CampaignSettingsSchema(Schema.from_dict({name: setting.field for name, setting in SETTINGS.items()},
                                              name="CampaignSettingsFields")):
    """Every setting a campaign may override, each optional (docs/operations/campaigns.md)."""

    class Meta:
        unknown = RAISE
        ordered = True

    @validates_schema
    def coherent(self, data, **kwargs):
        if data.get("start_date") and data.get("end_date") and data["end_date"] < data["start_date"]:
            raise ValidationError("must not be before start_date", "end_date")
        if data.get("calling_window_start") is not None and \
                data.get("calling_window_start") == data.get("calling_window_end"):
            raise ValidationError("must differ from calling_window_start: an empty window never opens",
                                  "calling_window_end")
        if data.get("caller_id_fallback") == CallerIdFallback.DEFAULT and not data.get("caller_id_default"):
            raise ValidationError("a default fallback needs caller_id_default, one of the floor's numbers",
                                  "caller_id_fallback")
        for day, intervals in (data.get("open_hours") or {}).items():
            spans = sorted(calendars.interval(text) for text in intervals)
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
    return {name: SETTINGS[name].store(value) for name, value in loaded.items()}


def merge(stored, patch):
    """`stored` settings with the JSON merge patch `patch` applied (a null removes a setting), checked
    whole. Returns the new settings; raises InvalidSettings."""
    if not isinstance(patch, dict):
        raise InvalidSettings({"settings": ["must be a JSON object of settings"]})
    unknown = [name for name in patch if name not in SETTINGS]
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
    over the floor's DialerConfig `floor`. A calendar exists when a calendar setting is set. A
    setting this release does not know (a later release's) is left to the release that knows it."""
    values = {name: SETTINGS[name].read(value) for name, value in settings.items()
              if name in SETTINGS and SETTINGS[name].read is not None}
    calendar = calendar_of(settings, floor) if any(name in settings for name in CALENDAR_SETTINGS) else None
    return values, calendar, values.pop("predictive", True)


def effective(config):
    """Every campaign setting as the DialerConfig `config` has it, the floor's work_start and
    work_end (HH:MM, DB_TIMEZONE) after the calendar's (its open hours as intervals, restricted
    dates, start and end dates; None where the floor has no such setting)."""
    answered = {}
    for name, setting in SETTINGS.items():
        answered[name] = setting.answer(config)
        if name == CALENDAR_SETTINGS[-1]:
            answered.update(work_start=_hhmm(config.work_start), work_end=_hhmm(config.work_end))
    return answered


def calendar_of(settings, floor):
    """The calendars.Calendar of checked `settings` (the floor's work window on each day when they
    set no open hours)."""
    if "open_hours" in settings:
        hours = settings["open_hours"]
        days = tuple(tuple(sorted(calendars.interval(text) for text in hours.get(day, ()))) for day in calendars.DAYS)
    else:
        days = calendars.window_days(floor.work_start, floor.work_end)
    restricted = tuple((date.fromisoformat(item["date"]), date.fromisoformat(item["to"]), item["note"])
                       for item in settings.get("restricted_dates", ()))
    return calendars.Calendar(
        days=days, restricted=restricted,
        start_date=date.fromisoformat(settings["start_date"]) if "start_date" in settings else None,
        end_date=date.fromisoformat(settings["end_date"]) if "end_date" in settings else None)

