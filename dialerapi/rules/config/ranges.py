"""The bounds of the floor's and the campaigns' settings, where `dialerapi config set` and a
campaign's settings check them (docs/operations/configuration.md; docs/compliance/abandon-rate.md).
"""

import re

# The legal periods an abandon rate is counted over: Ofcom's 24 hours, the TSR's 30 days.
ABANDON_PERIODS = ("24h", "30d")
# abandon_limit, a share of live calls (0 excluded: a limit of nothing would hold every claim).
ABANDON_LIMIT_RANGE = (0.0, 0.2)
# abandon_connect_seconds: how long an answered customer may wait for an agent before the call counts.
ABANDON_CONNECT_SECONDS_RANGE = (1, 30)
# personal_callback_fallback_minutes: up to a week.
FALLBACK_MINUTES_RANGE = (0, 7 * 24 * 60)
# A caller-ID pool's name (rules.caller_ids): 1-64 lower-case letters, digits, - and _.
CALLER_ID_POOL = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
