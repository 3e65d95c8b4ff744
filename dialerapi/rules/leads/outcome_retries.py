"""Retries per outcome (docs/compliance/contact-caps.md "Retries per outcome").

Each of busy, no_answer, congestion, machine and abandoned may have a rule of its own in
dialerapi_outcome_retries: `delay_seconds`, retried that long after the hangup (at the next
work_start when that falls outside the work window) instead of the retry pattern (or
retry_seconds for abandoned); `max_attempts`, the lead is Disposed (`Dialer system: max busy
attempts reached`) once that many attempts of its cycle ended with the outcome. An outcome with
no rule follows lead-intake-api.md "Claim and retry rules" 4 exactly. The settle reads the rules
with the dialer config (DialerConfig.retry_rule) and applies them in states.hangup_changes.
"""

from dialerapi.plumbing.db import queries
from dialerapi.rules.compliance import contact_caps
from dialerapi.rules.core.vocabulary import RETRY_OUTCOMES

OUTCOMES = RETRY_OUTCOMES
MAX_ATTEMPTS = 100


class InvalidRule(ValueError):
    """A rule that cannot be stored; the message names what is wrong."""


def listing(conn):
    """[{"outcome", "delay_seconds", "max_attempts"}] for every outcome, None where the spec's rule holds."""
    rules = {row["outcome"]: row for row in queries.outcome_retries(conn)}
    return [{"outcome": outcome, "delay_seconds": rules.get(outcome, {}).get("delay_seconds"),
             "max_attempts": rules.get(outcome, {}).get("max_attempts")} for outcome in OUTCOMES]


def set_rule(conn, outcome, delay=None, max_attempts=None):
    """Store `outcome`'s rule: `delay` as `--per` takes it (120s, 15m, 2h), `max_attempts` 1 to
    MAX_ATTEMPTS; a part not given keeps its value. Raises InvalidRule."""
    if outcome not in OUTCOMES:
        raise InvalidRule(f"outcome {outcome!r}: one of {', '.join(OUTCOMES)}")
    if delay is None and max_attempts is None:
        raise InvalidRule("give --delay, --max or both")
    try:
        seconds = None if delay is None else contact_caps.window_seconds(delay)
    except contact_caps.InvalidCap:
        raise InvalidRule(f"--delay {delay!r}: a number and a unit, s, m, h or d (120s, 15m), at most 31d") from None
    if max_attempts is not None and not 1 <= max_attempts <= MAX_ATTEMPTS:
        raise InvalidRule(f"--max {max_attempts}: a whole number from 1 to {MAX_ATTEMPTS}")
    queries.set_outcome_retry(conn, outcome=outcome, delay_seconds=seconds, max_attempts=max_attempts)


def reset(conn, outcome):
    """Back to the specification's rule for `outcome`."""
    queries.reset_outcome_retry(conn, outcome=outcome)
