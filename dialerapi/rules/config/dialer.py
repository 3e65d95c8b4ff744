"""The dialer config (decisions.md D1): sales_dialer_config row 1, the floor's settings, with the
campaigns that override them per form_type (config.campaign_config; docs/operations/campaigns.md). `load_config(conn)` reads
both in one statement (the campaigns themselves only when their generation moved); then
`config.of(form_type)` is the DialerConfig the rules apply to a lead of that form_type.
Times of day are wall-clock in DB_TIMEZONE.
"""

import json
import threading
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import datetime, time, timedelta

from dialerapi.plumbing.db import queries
from dialerapi.rules.config import campaign_config
from dialerapi.rules.config.calendars import Calendar
from dialerapi.rules.config.campaign_config import Campaign


@dataclass(frozen=True)
class DialerConfig:
    """The one row of sales_dialer_config (decisions.md D1); times of day are wall-clock in DB_TIMEZONE."""

    isMaintainance: bool
    outbound_obey_work_hours: bool
    retry_pattern: tuple
    retry_seconds: int
    max_tries: int
    work_start: time
    work_end: time
    disposed_priority_id: int
    # The customer's calling window (obeyed only when obey_calling_window), the region
    # that reads national numbers, the disposition reasons that list a phone, and whether an
    # inbound call of a listed phone may be claimed.
    obey_calling_window: bool = False
    calling_window_start: time = time(9)
    calling_window_end: time = time(21)
    phone_default_region: str = "IN"
    dnd_reasons: tuple = ("dnd",)
    dnc_allow_inbound: bool = False
    # The abandon rate's limit and how it is counted (compliance.abandons). The push reads
    # the config without them (get_push_context) and gets these defaults, which it never uses.
    enforce_abandon_limit: bool = True
    abandon_limit: float = 0.03
    abandon_period: str = "30d"
    abandon_min_answered: int = 50
    abandon_connect_seconds: int = 2
    # How long a due personal callback waits for its owner (leads.callbacks); None never.
    personal_callback_fallback_minutes: int = 30
    # {outcome: (delay_seconds or None, max_attempts or None)} of the outcomes with a
    # retry rule of their own, and the share of machine outcomes counted as live (Ofcom).
    outcome_retries: tuple = ()
    amd_false_positive_share: float = 0.0
    # The enabled contact caps (Cap), read with the config by every claim.
    contact_caps: tuple = ()
    # The names of the enabled rows of the state table (compliance.state_table) and the
    # restrictions (Restriction), read with the config by every claim.
    calling_rules: tuple = ()
    restrictions: tuple = ()
    # A campaign's consent_required (predictive or automated; None: the state rules' alone).
    consent_required: str | None = None
    # Caller IDs (rules.caller_ids): whether the floor has any number (then every outbound claim
    # presents one), the id of the last change of its numbers (a pool's directory is read again
    # when it moves), the floor's daily cap per number, default pool and the share of a pool's
    # headroom under which /health names it; a campaign's pool (None: the floor's default), its
    # match chain, what it does when no number is eligible (refuse, or its default number, E.164
    # digits), and whether a lead called before is presented the number it last saw.
    caller_ids_on: bool = False
    caller_ids_generation: int = 0
    caller_id_daily_cap: int = 75
    caller_id_default_pool: str = "default"
    caller_id_headroom_share: float = 0.1
    caller_id_pool: str | None = None
    caller_id_match: tuple = ("area_code", "state", "pool")
    caller_id_fallback: str = "refuse"
    caller_id_default: int | None = None
    caller_id_sticky: bool = False
    # A campaign's calendar (calendars.Calendar; None: the floor's work window, which
    # closes no claim), its Campaign (None: the floor), whether its leads may be
    # dialed predictively, and on the floor's config every campaign by form_type.
    calendar: Calendar | None = None
    campaign: Campaign | None = field(default=None, compare=False)
    predictive: bool = True
    campaigns: dict = field(default_factory=dict, compare=False, hash=False)
    # A campaign's config: the floor's it was worked out over, which `of` asks.
    floor: "DialerConfig | None" = field(default=None, compare=False, repr=False)

    def of(self, form_type):
        """The DialerConfig of the leads of `form_type`: its campaign's settings over the floor's, or
        the floor's own when it has no campaign (asked of a campaign's config, the same answer)."""
        floor = self.floor or self
        campaign = floor.campaigns.get(form_type)
        return floor if campaign is None else campaign.config_over(floor)

    def retry_rule(self, outcome):
        """(delay_seconds, max_attempts) of `outcome`'s own retry rule, each None when not set."""
        for name, delay, most in self.outcome_retries:
            if name == outcome:
                return delay, most
        return None, None


def _time_of_day(value):
    # PyMySQL returns TIME columns as timedelta since midnight.
    if isinstance(value, timedelta):
        return (datetime.min + value).time()
    return value


# The DialerConfig that load_config answers without a read, inside fixed_config.
_fixed_config = ContextVar("dialerapi_fixed_config", default=None)


# {the columns of a config row: (that row as last read, its DialerConfig)}: an unchanged row is not
# parsed again, and the campaigns' configs worked out over it stay good
# (campaign_config.Campaign.config_over). The claim's read and the push's have columns of their own.
_floors = {}
_floor_lock = threading.Lock()


def floor_config(row):
    """The DialerConfig of a config `row` (get_dialer_config's or get_push_context's columns), the
    same object as long as the row reads the same."""
    key = frozenset(row)
    with _floor_lock:
        known_row, config = _floors.get(key, (None, None))
    if known_row != row:
        config = config_from_row(row)
        with _floor_lock:
            _floors[key] = (row, config)
    return config


def load_config(conn):
    """Read sales_dialer_config row 1 as a DialerConfig with the campaigns (inside `fixed_config`,
    its config, unread). Raises LookupError when the row is missing."""
    fixed = _fixed_config.get()
    if fixed is not None:
        return fixed
    row = queries.get_dialer_config(conn)
    if row is None:
        raise missing_config()
    generation = row.pop("campaigns_generation", None)
    config = floor_config(row)
    return campaign_config.attach(conn, config, generation)


@contextmanager
def fixed_config(config):
    """Inside the block, in this thread, load_config answers the DialerConfig `config` without
    reading it. For a caller that knows nobody changes the settings meanwhile: the floor simulator
    in its own schema (docs/simulator.md; a read in every transaction was a fifth of a run). The service
    itself reads them in each transaction, so a `dialerapi config set` applies at once."""
    token = _fixed_config.set(config)
    try:
        yield config
    finally:
        _fixed_config.reset(token)


def missing_config():
    return LookupError("sales_dialer_config has no row with id = 1: run `dialerapi db upgrade`")


# The abandon settings of sales_dialer_config (migration 0014) and their Python types.
ABANDON_SETTINGS = {"enforce_abandon_limit": bool, "abandon_limit": float, "abandon_period": str,
                    "abandon_min_answered": int, "abandon_connect_seconds": int}


# The floor's caller-ID settings of sales_dialer_config (migration 0027), whether it has numbers and
# the last change of them.
CALLER_ID_SETTINGS = {"caller_ids_on": bool, "caller_ids_generation": int, "caller_id_daily_cap": int, "caller_id_default_pool": str,
                      "caller_id_headroom_share": float}


def config_from_row(row):
    """A DialerConfig from a row holding the columns of sales_dialer_config."""
    return DialerConfig(
        isMaintainance=bool(row["isMaintainance"]),
        outbound_obey_work_hours=bool(row["outbound_obey_work_hours"]),
        retry_pattern=tuple(int(n) for n in str(row["retry_pattern"]).split(",") if n.strip()),
        retry_seconds=int(row["retry_seconds"]),
        max_tries=int(row["max_tries"]),
        work_start=_time_of_day(row["work_start"]),
        work_end=_time_of_day(row["work_end"]),
        disposed_priority_id=int(row["disposed_priority_id"]),
        obey_calling_window=bool(row["obey_calling_window"]),
        calling_window_start=_time_of_day(row["calling_window_start"]),
        calling_window_end=_time_of_day(row["calling_window_end"]),
        phone_default_region=str(row["phone_default_region"]).strip().upper(),
        dnd_reasons=tuple(r.strip().lower() for r in str(row["dnd_reasons"]).split(",") if r.strip()),
        dnc_allow_inbound=bool(row["dnc_allow_inbound"]),
        **{name: kind(row[name]) for name, kind in ABANDON_SETTINGS.items() if name in row},
        **({"personal_callback_fallback_minutes": row["personal_callback_fallback_minutes"]}
           if "personal_callback_fallback_minutes" in row else {}),
        outcome_retries=parse_outcome_retries(row.get("outcome_retries")),
        amd_false_positive_share=float(row.get("amd_false_positive_share") or 0),
        contact_caps=caps_from_json(row.get("contact_caps")),
        calling_rules=tuple(name for name in (row.get("calling_rules") or "").split(";") if name),
        restrictions=restrictions_from_json(row.get("restrictions")),
        **{name: kind(row[name]) for name, kind in CALLER_ID_SETTINGS.items() if name in row},
    )


def restrictions_from_json(text):
    """The Restrictions of get_dialer_config's JSON array (None: none), by start."""
    found = [Restriction(id=int(item["id"]), region=item["region"], note=item["note"],
                         starts_at=datetime.fromisoformat(item["starts_at"]),
                         ends_at=datetime.fromisoformat(item["ends_at"]))
             for item in json.loads(text or "[]")]
    return tuple(sorted(found, key=lambda restriction: (restriction.starts_at, restriction.id)))


def parse_outcome_retries(text):
    """((outcome, delay_seconds or None, max_attempts or None), ...) from the
    "outcome:delay:max;..." that get_dialer_config reads dialerapi_outcome_retries into."""
    rules = []
    for part in (text or "").split(";"):
        if part:
            outcome, delay, most = part.split(":")
            rules.append((outcome, int(delay) if delay else None, int(most) if most else None))
    return tuple(sorted(rules))


@dataclass(frozen=True)
class Restriction:
    """A ban of calls to a region: from `starts_at` to `ends_at` (naive UTC, whole minutes), with
    the operator's `note` (`state of emergency`). `region` is `US-LA`, or a country (`US`: every
    state)."""

    id: int
    region: str
    starts_at: datetime
    ends_at: datetime
    note: str

    def applies_to(self, region):
        return region == self.region or region.startswith(self.region + "-")

    def active(self, utc):
        return self.starts_at <= utc < self.ends_at


DAY_SECONDS = 24 * 3600


@dataclass(frozen=True)
class Cap:
    """One cap: `max_attempts` in `window_seconds` (elapsed), for numbers of `regions` (() = all)
    and of leads of `form_type` (None = all); a call made within `consent_days` days after the
    lead's consent is neither held nor counted by it (None: every call counts)."""

    name: str
    max_attempts: int
    window_seconds: int
    regions: tuple = ()
    form_type: str = None
    consent_days: int = None

    def exempts(self, consent_epoch, call_epoch):
        """Whether a call at `call_epoch` made with consent given at `consent_epoch` (epoch seconds
        UTC, None: no consent) is left out of this cap."""
        return (self.consent_days is not None and consent_epoch is not None
                and 0 <= call_epoch - consent_epoch < self.consent_days * DAY_SECONDS)


def _cap(row):
    regions = tuple(part for part in (row["region"] or "").split(",") if part)
    days = row.get("consent_days")
    return Cap(row["name"], int(row["max_attempts"]), int(row["window_seconds"]), regions, row["form_type"],
               None if days is None else int(days))


def caps_from_json(text):
    """The enabled caps, as Cap, in name order, from the JSON array get_dialer_config reads them
    into (the claim reads them with the dialer config, at no round trip of their own); () for none."""
    return tuple(sorted((_cap(row) for row in json.loads(text)), key=lambda cap: cap.name)) if text else ()
