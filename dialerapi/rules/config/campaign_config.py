"""The campaigns attached to the floor's config: each campaign's settings over the floor's
sales_dialer_config (docs/operations/campaigns.md), worked out once per floor config and read again
only when the campaigns' generation moved, so every host sees a change at its next claim.

`attach(conn, config, generation)` answers the floor's DialerConfig with `campaigns`
({form_type: Campaign}); `config.of(form_type)` is then a lead's config. The campaign operations
(pause, resume, change, history) are rules.campaigns.operations'.
"""

import dataclasses
import threading

from dialerapi.plumbing.db import queries
from dialerapi.rules.config import campaign_settings

# Floor configs a process keeps a campaign's config over at once (the claim's, the push's, and one
# or two left from a change of the floor's settings).
ATTACHED_KEPT = 8


class Campaign:
    """One campaign as stored: form_type, state, settings (checked JSON object), updated_at, updated_by.
    `config_over(floor)` is its DialerConfig, worked out once per floor config."""

    def __init__(self, row):
        self.form_type = row["form_type"]
        self.state = row["state"]
        self.settings = campaign_settings.parse(row["settings"])
        self.updated_at = row["updated_at"]
        self.updated_by = row["updated_by"]
        self._derived = {}
        self._lock = threading.Lock()

    def config_over(self, floor):
        with self._lock:
            base, derived = self._derived.get(id(floor), (None, None))
        if base is floor:
            return derived
        values, calendar, predictive = campaign_settings.overrides(self.settings, floor)
        derived = dataclasses.replace(floor, **values, calendar=calendar, campaign=self, predictive=predictive,
                                      floor=floor)
        with self._lock:
            kept = dict(list(self._derived.items())[-(ATTACHED_KEPT - 1):])
            kept[id(floor)] = (floor, derived)
            self._derived = kept
        return derived


# (generation, {form_type: Campaign}, {id of a floor DialerConfig: (it, it with the campaigns)}) as
# this process last read them: the claim's and the push's floor configs each keep theirs.
_known = (None, {}, {})


_known_lock = threading.Lock()


def attach(conn, config, generation):
    """`config` (the floor's DialerConfig) with the campaigns of `generation` (the highest change id
    the config read saw), read again only when it differs from this process's. The same floor and
    generation give the same object, so each campaign's config is worked out once."""
    global _known
    # A process may serve more than one database (the tests, the simulator's schemas).
    generation = (getattr(conn, "host", None), getattr(conn, "port", None), getattr(conn, "db", None), generation)
    with _known_lock:
        known_generation, known, attached = _known
    if known_generation == generation:
        floor, config_with = attached.get(id(config), (None, None))
        if floor is config:
            return config_with
    else:
        known, attached = {row["form_type"]: Campaign(row) for row in queries.all_campaigns(conn)}, {}
    config_with = dataclasses.replace(config, campaigns=known)
    kept = dict(list(attached.items())[-(ATTACHED_KEPT - 1):])
    kept[id(config)] = (config, config_with)
    with _known_lock:
        _known = (generation, known, kept)
    return config_with
