"""Deprecated: the dial state's former path, kept one major release so that a Python engine written
against it goes on working. Settle, release and the lead's lock live in dialerapi.rules.leads.dialstate;
the names it answered besides are now where their idea lives (docs/engine/library.md): the
vocabulary in rules.core.vocabulary, the pure transitions in rules.leads.transitions, the work
window in rules.config.work_window, the dialer config in rules.config.dialer and who may take a
call in rules.agents.availability.
"""

import warnings

from dialerapi.rules.agents.availability import *  # noqa: F403
from dialerapi.rules.config.dialer import *  # noqa: F403
from dialerapi.rules.config.work_window import *  # noqa: F403
from dialerapi.rules.core.vocabulary import *  # noqa: F403
from dialerapi.rules.leads.dialstate import *  # noqa: F403
from dialerapi.rules.leads.transitions import *  # noqa: F403

warnings.warn("dialerapi.rules.dialstate is dialerapi.rules.leads.dialstate now (docs/engine/library.md)",
              DeprecationWarning, stacklevel=2)
