"""Why not now: whether a lead may be claimed at this moment, what holds it, and
when it will be free, as GET /api/leads/{oli_id} and `dialerapi leads why OLI_ID` tell it.

The answer is worked out from the lead as it stands, with the rules the claim applies (a
progressive claim's view: the consent a predictive claim alone needs is not asked):
- do_not_call: its number is listed (next_at None: until it is removed);
- lead_in_flight: it is on a call now;
- not_due: nothing will claim it (a final state: next_at None), or it is due later (next_at: its
  due time, or the first lawful moment after it);
- campaign_paused, campaign_ended, campaign_closed: its campaign refuses claims (next_at: when its
  calendar opens, when it has one);
- contact_cap: a cap holds its number (next_at: when the cap frees it, or the first lawful moment
  after);
- emergency, state_holiday, state_sunday, state_hours, consent_required: a calling rule
  (rules.compliance.calling_rules; `rule` and `source` name it), and outside_calling_window: the campaign's
  window (next_at: the first moment none of these holds it, within calling_rules.LAWFUL_SEARCH_DAYS).

`callable.predictive` is the same answer for a predictive claim (an engine dialing ahead of its
free agents): the progressive one when that holds the lead, else not_predictive (its campaign
dials no lead predictively), a rule's consent_required for predictive calls, or abandon_limit (its
campaign's abandon rate holds predictive claims back, as the claim judges it: rules.compliance.abandons.held
with the calls pending now; next_at None, since only the calls to come lower it).
Times are 'YYYY-MM-DD HH:MM:SS' DB_TIMEZONE.
"""

from dialerapi.plumbing import clock
from dialerapi.plumbing.db import queries
from dialerapi.rules.campaigns import operations
from dialerapi.rules.compliance import abandons, calling_rules, claim_checks
from dialerapi.rules.core.vocabulary import is_live
from dialerapi.rules.events import lead_events

NOT_DUE = "not_due"
NOT_PREDICTIVE = "not_predictive"
LEAD_IN_FLIGHT = "lead_in_flight"
CONTACT_CAP = "contact_cap"


def _answer(reason=None, next_at=None, held=None):
    return {"now": reason is None, "reason": reason, "rule": held.rule if held else None,
            "source": held.source if held else None, "note": held.note if held else None, "next_at": next_at}


def of_lead(conn, row, now, tz, floor):
    """{"place", "consent", "callable"} of the sales_master `row` (with region, postal_code,
    consent_type, consent_at, consent_source, claim_bucket, claim_due, contact_cap_until) at `now`
    (wall-clock `tz`, DB_TIMEZONE), by the floor's DialerConfig `floor` (dialer_config.load_config,
    with the campaigns), its calling profile worked out once for both. `callable` has `predictive`
    too (predictive_now), which reads the abandon counts only when nothing else holds the lead."""
    config = floor.of(row["form_type"])
    _, names, source = claim_checks.lead_profile(row, config)
    found = callable_now(row, names, now, tz, floor)
    return {"place": {"regions": list(calling_rules.split(names)[1]), "source": source,
                      "region": row["region"], "postal_code": row["postal_code"]},
            "consent": lead_events.consent_of(row),
            "callable": {**found, "predictive": predictive_now(conn, row, names, found, now, tz, floor)}}


def predictive_now(conn, row, names, progressive, now, tz, floor):
    """{now, reason, rule, source, note, next_at} of a predictive claim of `row`, whose progressive
    answer is `progressive` (callable_now); see the module's docstring."""
    if not progressive["now"]:
        return progressive
    config = floor.of(row["form_type"])
    if not config.predictive:
        return _answer(NOT_PREDICTIVE)
    moment = clock.instant(now, tz)
    held = calling_rules.held(names, moment, config, calling_rules.PREDICTIVE, tz)
    if held is not None:
        return _answer(held.reason, claim_checks.next_at(names, moment, tz, config, calling_rules.PREDICTIVE), held)
    if config.enforce_abandon_limit and _abandon_held(conn, row["form_type"], now, floor):
        return _answer(abandons.ABANDON_LIMIT)
    return progressive


def _abandon_held(conn, form_type, now, floor):
    """Whether the abandon limit holds `form_type`'s predictive claims back now (abandons.held, with
    its campaign's rule and the calls pending now, as /engine/floor reports it)."""
    config = floor.of(form_type)
    windows = abandons.windows(conn, now, floor).get(form_type)
    if windows is None:
        return False
    calls = {row["form_type"]: row for row in queries.floor_calls(conn, **abandons.connect_params(floor))}
    pending = int(calls[form_type]["pending"]) if form_type in calls else 0
    return abandons.held(windows, pending, config)


def callable_now(row, names, now, tz, floor):
    """{now (bool), reason, rule, source, note, next_at} of `row`, whose calling profile is `names`
    (claim_checks.lead_profile); see the module's docstring for the reasons."""
    config = floor.of(row["form_type"])
    if row["do_not_call"]:
        return _answer(claim_checks.DO_NOT_CALL)
    if is_live(row):
        return _answer(LEAD_IN_FLIGHT)
    if row["claim_bucket"] is None or (row["claim_bucket"] == 4 and row["claim_due"] is None):
        return _answer(NOT_DUE)
    refused = operations.refusal(floor, row["form_type"], now)
    if refused:
        return _answer(refused, operations.status(floor, row["form_type"], now, tz)["next_open_at"])
    due = row["claim_due"] if row["claim_due"] is not None and row["claim_due"] > now else None
    cap = row["contact_cap_until"] if row["contact_cap_until"] is not None and row["contact_cap_until"] > now else None
    start = max(at for at in (now, due, cap) if at is not None)
    moment = clock.instant(start, tz)
    if start > now:
        return _answer(CONTACT_CAP if cap is not None and start == cap else NOT_DUE,
                       claim_checks.next_at(names, moment, tz, config))
    held = calling_rules.held(names, moment, config, calling_rules.PROGRESSIVE, tz)
    if held is not None:
        return _answer(held.reason, claim_checks.next_at(names, moment, tz, config), held)
    if not claim_checks.zone_open(names, moment, tz, config, calling_rules.PROGRESSIVE):
        return _answer(claim_checks.OUTSIDE_CALLING_WINDOW, claim_checks.next_at(names, moment, tz, config))
    return _answer()

