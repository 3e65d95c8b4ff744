"""Deprecated: the claim rules' former path, kept one major release so that a Python engine written
against it goes on working. They live in dialerapi.rules.dialing.claims; the agent operations it
answered too (bridge, lock_agent, set_availability, wrapup_until, KEEP) in dialerapi.rules.agents.roster
(docs/engine/library.md).
"""

import warnings

from dialerapi.rules.agents.roster import KEEP, bridge, lock_agent, set_availability, wrapup_until  # noqa: F401
from dialerapi.rules.dialing.claims import *  # noqa: F403

warnings.warn("dialerapi.rules.claims is dialerapi.rules.dialing.claims now (docs/engine/library.md)",
              DeprecationWarning, stacklevel=2)
