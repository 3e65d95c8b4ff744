"""Never a change without its event, proved (issue #65 item 7): the stateful test of
tests/lead_feed_machine.py, bounded here (make test, about 5 s alone); tests/faults/test_lead_feed_long.py
runs it ten times longer (make faults). Examples are derived from the test's name (derandomize), so
a run is the same every time and a failure is found again by running it again. Here a failure is
reported as found, unshrunk: shrinking a sequence of HTTP steps can take hypothesis five minutes;
make faults shrinks its own."""

from collections import Counter

from hypothesis import HealthCheck, Phase, settings
from hypothesis.stateful import run_state_machine_as_test

from lead_feed_machine import LeadFeed


def run_feed_machine(app, sql, examples, steps, shrink=False):
    """Run LeadFeed for `examples` sequences of up to `steps` steps, a failing one shrunk when
    `shrink`; returns how many events of each type the CRM folded."""
    machine = type("CrmFoldingTheFeed", (LeadFeed,), {"app": app, "sql": sql, "seen": Counter()})
    phases = (Phase.explicit, Phase.generate) + ((Phase.shrink,) if shrink else ())
    run_state_machine_as_test(machine, settings=settings(
        max_examples=examples, stateful_step_count=steps, deadline=None, derandomize=True, database=None,
        phases=phases, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much]))
    return machine.seen


def test_folding_the_feed_gives_every_lead_as_its_read_shows_it(app, sql):
    seen = run_feed_machine(app, sql, examples=10, steps=25)
    print(dict(seen))
    assert {"lead.call_ended", "lead.disposed", "lead.do_not_call"} <= set(seen), seen
