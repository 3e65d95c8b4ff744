"""A simulated campaign's inputs: defaults, then a TOML or JSON file, then command-line options.

Every input is validated by `ScenarioSchema` (marshmallow) before a run costs any work; an error
names the field. Durations are in seconds and take three forms: a number (constant), `[low, high]`
(uniform), or `{"exponential": mean}`. The `dialer` table is written to the run's own
`sales_dialer_config` (never the live one). docs/simulator.md "The floor simulator" defines every field.
"""

import json
import math
import tomllib
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from datetime import date, time
from pathlib import Path

from marshmallow import RAISE, Schema, ValidationError, fields, post_load, validates_schema
from marshmallow.validate import Length, OneOf, Range, Regexp

from dialerapi.rules.caller_ids import numbers
from dialerapi.rules.campaigns import operations as campaigns
from dialerapi.rules.compliance import contact_caps, state_table
from dialerapi.rules.config import campaign_settings, ranges
from dialerapi.rules.core.vocabulary import OUTCOMES, RETRY_OUTCOMES
from dialerapi.simulate import caller_ids as sim_caller_ids

MODES = ("progressive", "predictive")
PACING_RULES = ("ratio", "abandon", "rate")
DIALED_OUTCOMES = tuple(outcome for outcome in OUTCOMES if outcome != "abandoned")


@dataclass(frozen=True)
class Duration:
    """Seconds drawn per call: `constant` (low), `uniform` (low..high) or `exponential` (mean low)."""

    kind: str
    low: float
    high: float = 0.0

    def sample(self, rng):
        """One draw, rounded to whole seconds (the service's clock and DATETIME columns hold seconds)."""
        if self.kind == "constant":
            value = self.low
        elif self.kind == "uniform":
            value = rng.uniform(self.low, self.high)
        else:
            value = rng.expovariate(1 / self.low)
        return int(round(value))

    @property
    def mean(self):
        return {"constant": self.low, "uniform": (self.low + self.high) / 2, "exponential": self.low}[self.kind]

    @property
    def variance(self):
        return {"constant": 0.0, "uniform": (self.high - self.low) ** 2 / 12, "exponential": self.low ** 2}[self.kind]

    def to_json(self):
        if self.kind == "constant":
            return self.low
        if self.kind == "uniform":
            return [self.low, self.high]
        return {"exponential": self.low}


class DurationField(fields.Field):
    # make_error formats the message: the braces of the JSON form are doubled
    default_error_messages = {"invalid": "a number of seconds, [low, high], or {{\"exponential\": mean}}"}

    def _deserialize(self, value, attr, data, **kwargs):
        def seconds(x):
            if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x) or not 0 <= x <= 86400:
                raise self.make_error("invalid")
            return float(x)

        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return Duration("constant", seconds(value))
        if isinstance(value, list) and len(value) == 2:
            low, high = seconds(value[0]), seconds(value[1])
            if low > high:
                raise ValidationError("low must not exceed high")
            return Duration("uniform", low, high)
        if isinstance(value, dict) and list(value) == ["exponential"] and seconds(value["exponential"]) > 0:
            return Duration("exponential", seconds(value["exponential"]))
        raise self.make_error("invalid")

    def _serialize(self, value, attr, obj, **kwargs):
        return None if value is None else value.to_json()


# Where leads' phones ring: the digits a lead's number starts with, then random digits
# to its length. IN: Asia/Kolkata; the US ones: New York, Chicago, Los Angeles, Honolulu; AE: Dubai.
PHONE_ZONES = {"IN": ("9", 10), "US-Eastern": ("12122", 11), "US-Central": ("13122", 11),
               "US-Pacific": ("14152", 11), "US-Hawaii": ("18082", 11), "AE": ("97150", 12),
               # States with a contact cap (florida-oklahoma-3-per-24h).
               "US-Florida": ("13052", 11), "US-Oklahoma": ("14052", 11),
               # States with calling rules of their own (Sunday bans, holidays, hours).
               "US-Alabama": ("12052", 11), "US-Louisiana": ("15042", 11), "US-Mississippi": ("16012", 11),
               "US-Texas": ("12142", 11), "US-RhodeIsland": ("14012", 11), "US-Utah": ("18012", 11)}


def _share():
    return fields.Float(validate=Range(0, 1), allow_nan=False)


def _weights(keys):
    return fields.Dict(keys=fields.String(validate=OneOf(keys) if keys else Length(1, 50)),
                       values=fields.Float(validate=Range(0, 1e6), allow_nan=False), validate=Length(1, 20))


class DialerSchema(Schema):
    """The run's sales_dialer_config row (lead-intake-api.md, Claim and retry rules 4)."""

    class Meta:
        unknown = RAISE

    retry_pattern = fields.String(validate=Regexp(r"^\d{1,3}(,\d{1,3}){0,59}$"), load_default="4,4,3,2,1,1,1,1,1,1,1")
    retry_seconds = fields.Integer(validate=Range(0, 86400), load_default=3600)
    max_tries = fields.Integer(validate=Range(1, 100), load_default=20)
    work_start = fields.Time(format="%H:%M", load_default=time(9, 0))
    work_end = fields.Time(format="%H:%M", load_default=time(18, 0))
    outbound_obey_work_hours = fields.Boolean(load_default=True)
    # The customer's calling window, in each lead's own zone.
    obey_calling_window = fields.Boolean(load_default=False)
    calling_window_start = fields.Time(format="%H:%M", load_default=time(9, 0))
    calling_window_end = fields.Time(format="%H:%M", load_default=time(21, 0))
    # The abandon limit the service holds predictive claims to. Off by default here, so a
    # scenario plays what its pacing rule alone does (and theory holds it to Erlang-A); on, a group
    # refused with abandon_limit dials progressively until the refusals stop.
    enforce_abandon_limit = fields.Boolean(load_default=False)
    abandon_limit = fields.Float(validate=Range(0.0001, 0.2), load_default=0.03)
    abandon_period = fields.String(validate=OneOf(ranges.ABANDON_PERIODS), load_default="30d")
    abandon_min_answered = fields.Integer(validate=Range(0, 1_000_000), load_default=50)
    abandon_connect_seconds = fields.Integer(validate=Range(1, 30), load_default=2)
    # The calls a caller ID may present a day (the floor's caller_id_daily_cap).
    caller_id_daily_cap = fields.Integer(validate=Range(1, numbers.MAX_DAILY_CAP), load_default=75)


class ScenarioSchema(Schema):
    """A campaign: its floor, its leads, how calls go, the CRM's habits and the dialer config."""

    class Meta:
        unknown = RAISE

    agents = fields.Integer(validate=Range(1, 1000), load_default=50)
    leads = fields.Integer(validate=Range(1, 200000), load_default=5000)
    days = fields.Integer(validate=Range(1, 60), load_default=1)
    hours = fields.Float(validate=Range(0.1, 24), allow_none=True, load_default=None)
    start_date = fields.Date(load_default=date(2026, 1, 5))
    seed = fields.Integer(load_default=1)
    replications = fields.Integer(validate=Range(1, 200), load_default=3)
    mode = fields.String(validate=OneOf(MODES), load_default="progressive")
    pacing = fields.String(validate=OneOf(PACING_RULES), load_default="ratio")
    dial_ratio = fields.Float(validate=Range(0.1, 5), load_default=1.5)
    target_abandon = fields.Float(validate=Range(0.001, 0.5), load_default=0.03)
    calls_per_hour = fields.Float(validate=Range(1, 100000), load_default=600)
    outcomes = _weights(DIALED_OUTCOMES)
    ring_seconds = DurationField(load_default=Duration("uniform", 8, 30))
    talk_seconds = DurationField(load_default=Duration("uniform", 60, 420))
    wrapup_seconds = DurationField(load_default=Duration("uniform", 15, 90))
    wrapup_after = fields.String(validate=OneOf(("answered", "every")), load_default="answered")
    patience_seconds = DurationField(allow_none=True, load_default=Duration("exponential", 30))
    files_outcome = _share()
    during_call = _share()
    callback_share = _share()
    late_filing_minutes = DurationField(load_default=Duration("uniform", 5, 30))
    callback_in_minutes = DurationField(load_default=Duration("uniform", 30, 240))
    pushed_callbacks = _share()
    personal_callback_share = _share()
    listed_share = _share()
    phone_zones = _weights(PHONE_ZONES)
    form_types = _weights(None)
    skills = fields.Raw(load_default="all")
    claim_retry_seconds = fields.Integer(validate=Range(1, 3600), load_default=30)
    grace_minutes = fields.Integer(validate=Range(0, 1440), load_default=10)
    engine = fields.String(validate=OneOf(("library", "http")), load_default="library")
    dialer = fields.Nested(DialerSchema, load_default=lambda: DialerSchema().load({}))
    # Contact caps (a preset's name, or {name, max, per, region?, form_type?}), retries
    # per outcome ({outcome: {delay?, max?}}), and the share of leads that reuse an earlier lead's
    # phone number (one person, two products).
    contact_caps = fields.List(fields.Raw(), validate=Length(0, 20), load_default=list)
    retries = fields.Dict(keys=fields.String(validate=OneOf(RETRY_OUTCOMES)), values=fields.Dict(),
                          load_default=dict)
    shared_phone_share = _share()
    # Campaigns, {form_type: its settings over the dialer's}, as `dialerapi campaigns set`
    # takes them (calendar, abandon rule, retries, ...), with an optional state.
    campaigns = fields.Dict(keys=fields.String(validate=Length(1, 64)), values=fields.Raw(), validate=Length(0, 50),
                            load_default=dict)
    # The rows of the state calling rules' table to switch on (`dialerapi rules enable`).
    # The floor's caller-ID pools, {pool: {NANP area code ("+1 212"): numbers}}: the run adds them
    # (docs/simulator.md, "Caller IDs").
    caller_ids = fields.Dict(
        keys=fields.String(validate=Regexp(ranges.CALLER_ID_POOL, error="a pool's name is 1-64 lower-case letters, "
                                                                        "digits, - and _")),
        values=fields.Dict(keys=fields.String(validate=Regexp(sim_caller_ids.AREA_CODE,
                                                              error='a US area code, "+1 212"')),
                           values=fields.Integer(validate=Range(1, sim_caller_ids.MAX_PER_AREA_CODE)),
                           validate=Length(1, 100)),
        validate=Length(0, numbers.MAX_POOLS), load_default=dict)
    calling_rules = fields.List(fields.String(validate=OneOf(
        tuple(rule.name for rule in state_table.RULES), error="a calling rule is one of `dialerapi rules list`")),
        validate=Length(0, len(state_table.RULES)), load_default=list)

    @validates_schema
    def _consistent(self, data, **kwargs):
        if data.get("during_call", 0.2) > data.get("files_outcome", 0.85):
            raise ValidationError("during_call is a share of all answered calls: it cannot exceed files_outcome",
                                  "during_call")
        form_types = data.get("form_types") or DEFAULT_FORM_TYPES
        skills = data.get("skills", "all")
        if skills != "all":
            if not isinstance(skills, dict) or not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0
                                                       for n in skills.values()):
                raise ValidationError('"all", or {form_type: number of agents with that skill}', "skills")
            uncovered = [t for t, weight in form_types.items() if weight > 0 and not skills.get(t)]
            if uncovered:
                raise ValidationError(f"no agent has the skill {', '.join(uncovered)}: its leads could never be "
                                      "dialed", "skills")
            if max(skills.values(), default=0) > data.get("agents", 50):
                raise ValidationError("more agents with a skill than agents", "skills")
            if set(skills) - set(form_types):
                raise ValidationError("a skill that no lead has", "skills")
        _check_campaigns(data.get("campaigns") or {}, form_types)
        _check_caps(data.get("contact_caps") or [])
        _check_retries(data.get("retries") or {})
        if not any((data.get("outcomes") or DEFAULT_OUTCOMES).values()):
            raise ValidationError("at least one outcome needs a weight", "outcomes")
        if not any(form_types.values()):
            raise ValidationError("at least one form_type needs a weight", "form_types")
        if not any((data.get("phone_zones") or {"IN": 1}).values()):
            raise ValidationError("at least one phone zone needs a weight", "phone_zones")

    @post_load
    def _scenario(self, data, **kwargs):
        data.setdefault("outcomes", dict(DEFAULT_OUTCOMES))
        data.setdefault("form_types", dict(DEFAULT_FORM_TYPES))
        data.setdefault("phone_zones", {"IN": 1})
        for name, value in SHARES.items():
            data.setdefault(name, value)
        return Scenario(**data)


DEFAULT_OUTCOMES = {"answered": 35, "no_answer": 33, "busy": 10, "congestion": 3, "rejected": 7, "cancelled": 5,
                    "originate_failed": 2}
DEFAULT_FORM_TYPES = {"home_loan": 1, "credit_card": 1, "health_insurance": 1}
SHARES = {"files_outcome": 0.85, "during_call": 0.2, "callback_share": 0.45, "pushed_callbacks": 0.05,
          "personal_callback_share": 0.0, "listed_share": 0.0, "shared_phone_share": 0.0}
CAP_KEYS = {"name", "max", "per", "region", "form_type"}
RULE_KEYS = {"delay", "max"}


def _check_caps(caps):
    """Each contact cap of a scenario: a shipped preset's name, or a cap `dialerapi caps add` would take."""
    for cap in caps:
        if isinstance(cap, str):
            if cap not in contact_caps.PRESETS:
                raise ValidationError(f"{cap!r}: a preset is one of {', '.join(contact_caps.PRESETS)}", "contact_caps")
            continue
        if not isinstance(cap, dict) or set(cap) - CAP_KEYS or not {"name", "max", "per"} <= set(cap):
            raise ValidationError("a preset's name, or {name, max, per, region?, form_type?}", "contact_caps")
        if not isinstance(cap["name"], str) or not contact_caps.NAME.match(cap["name"]):
            raise ValidationError(f"name {cap['name']!r}: lowercase letters, digits and '-'", "contact_caps")
        if isinstance(cap["max"], bool) or not isinstance(cap["max"], int) or not 1 <= cap["max"] <= 1000:
            raise ValidationError(f"{cap['name']}: max is a whole number from 1 to 1000", "contact_caps")
        try:
            contact_caps.window_seconds(cap["per"])
            if cap.get("region") is not None:
                contact_caps.check_regions(cap["region"])
        except contact_caps.InvalidCap as exc:
            raise ValidationError(f"{cap['name']}: {exc}", "contact_caps") from None


def _check_campaigns(settings_of, form_types):
    """Each campaign of a scenario: a form_type of its leads, settings `dialerapi campaigns set` takes."""
    for form_type, settings in settings_of.items():
        if form_type not in form_types:
            raise ValidationError(f"{form_type}: a campaign is a form_type of the scenario's leads", "campaigns")
        settings = dict(settings) if isinstance(settings, dict) else settings
        state = settings.pop("state", campaigns.ACTIVE) if isinstance(settings, dict) else None
        if state not in campaigns.STATES:
            raise ValidationError(f"{form_type}: state is one of {', '.join(campaigns.STATES)}", "campaigns")
        try:
            campaign_settings.check(settings)
        except campaign_settings.InvalidSettings as exc:
            raise ValidationError(f"{form_type}: {exc}", "campaigns") from None


def _check_retries(retries):
    for outcome, rule in retries.items():
        if set(rule) - RULE_KEYS or not rule:
            raise ValidationError(f"{outcome}: {{delay?, max?}}, at least one", "retries")
        try:
            if "delay" in rule:
                contact_caps.window_seconds(rule["delay"])
        except contact_caps.InvalidCap:
            raise ValidationError(f"{outcome}: delay is a number and a unit, s, m, h or d (15m)", "retries") from None
        most = rule.get("max", 1)
        if isinstance(most, bool) or not isinstance(most, int) or not 1 <= most <= 100:
            raise ValidationError(f"{outcome}: max is a whole number from 1 to 100", "retries")


@dataclass(frozen=True)
class Scenario:
    """A validated campaign; build one with `load_scenario`. Field meanings: docs/simulator.md "The floor simulator"."""

    agents: int
    leads: int
    days: int
    hours: float | None
    start_date: date
    seed: int
    replications: int
    mode: str
    pacing: str
    dial_ratio: float
    target_abandon: float
    calls_per_hour: float
    outcomes: dict
    ring_seconds: Duration
    talk_seconds: Duration
    wrapup_seconds: Duration
    wrapup_after: str
    patience_seconds: Duration | None
    files_outcome: float
    during_call: float
    callback_share: float
    late_filing_minutes: Duration
    callback_in_minutes: Duration
    pushed_callbacks: float
    personal_callback_share: float
    listed_share: float
    phone_zones: dict
    form_types: dict
    skills: object
    claim_retry_seconds: int
    grace_minutes: int
    engine: str
    dialer: dict
    contact_caps: list
    retries: dict
    shared_phone_share: float
    campaigns: dict
    calling_rules: list = ()
    caller_ids: dict = dataclass_field(default_factory=dict)

    def to_json(self):
        """The scenario as plain JSON values, in the file format `load_scenario` reads."""
        return ScenarioSchema().dump(self)


def read_file(path):
    """The mapping in a .toml or .json scenario file. Raises ValueError with the file's problem."""
    path = Path(path)
    try:
        if path.suffix == ".toml":
            return tomllib.loads(path.read_text())
        if path.suffix == ".json":
            data = json.loads(path.read_text())
            if not isinstance(data, dict):
                raise ValueError("a JSON scenario is an object")
            return data
    except (tomllib.TOMLDecodeError, json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: {exc}") from None
    raise ValueError(f"{path}: a scenario file ends in .toml or .json")


def load_scenario(file_values=None, **options):
    """A Scenario from defaults, then `file_values` (a mapping, as `read_file` returns), then `options`
    (the fields given, None included: `patience_seconds=None` is patience without end). `options` may
    hold dialer fields (retry_pattern, work_start, ...) at the top level, as the command line gives
    them. Raises marshmallow.ValidationError naming each bad field."""
    values = dict(file_values or {})
    dialer = dict(values.pop("dialer", None) or {})
    for name, value in options.items():
        if name in DialerSchema._declared_fields:
            dialer[name] = value
        else:
            values[name] = value
    if dialer:
        values["dialer"] = dialer
    return ScenarioSchema().load(values)
