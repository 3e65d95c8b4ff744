"""Why not now (issue #68 item 6): whether a lead may be claimed at this moment, what holds it, and
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
  (rules.calling_rules; `rule` and `source` name it), and outside_calling_window: the campaign's
  window (next_at: the first moment none of these holds it, within calling_rules.HORIZON_DAYS).
Times are 'YYYY-MM-DD HH:MM:SS' DB_TIMEZONE.
"""

from dialerapi.plumbing import clock
from dialerapi.rules import calling_rules, campaigns, compliance
from dialerapi.rules.states import is_live

NOT_DUE = "not_due"
LEAD_IN_FLIGHT = "lead_in_flight"
CONTACT_CAP = "contact_cap"


def _answer(reason=None, next_at=None, held=None):
    return {"now": reason is None, "reason": reason, "rule": held.rule if held else None,
            "source": held.source if held else None, "note": held.note if held else None, "next_at": next_at}


def of_lead(row, now, tz, floor):
    """{"place", "consent", "callable"} of the sales_master `row` (with region, postal_code,
    consent_type, consent_at, consent_source, claim_bucket, claim_due, contact_cap_until) at `now`
    (wall-clock `tz`, DB_TIMEZONE), by the floor's DialerConfig `floor` (dialer_config.load_config,
    with the campaigns), its calling profile worked out once for both."""
    config = floor.of(row["form_type"])
    _, names, source = compliance.lead_profile(row, config)
    return {"place": {"regions": list(calling_rules.split(names)[1]), "source": source,
                      "region": row["region"], "postal_code": row["postal_code"]},
            "consent": consent(row), "callable": callable_now(row, names, now, tz, floor)}


def callable_now(row, names, now, tz, floor):
    """{now (bool), reason, rule, source, note, next_at} of `row`, whose calling profile is `names`
    (compliance.lead_profile); see the module's docstring for the reasons."""
    config = floor.of(row["form_type"])
    if row["do_not_call"]:
        return _answer(compliance.DO_NOT_CALL)
    if is_live(row):
        return _answer(LEAD_IN_FLIGHT)
    if row["claim_bucket"] is None or (row["claim_bucket"] == 4 and row["claim_due"] is None):
        return _answer(NOT_DUE)
    refused = campaigns.refusal(floor, row["form_type"], now)
    if refused:
        return _answer(refused, campaigns.status(floor, row["form_type"], now, tz)["next_open_at"])
    due = row["claim_due"] if row["claim_due"] is not None and row["claim_due"] > now else None
    cap = row["contact_cap_until"] if row["contact_cap_until"] is not None and row["contact_cap_until"] > now else None
    start = max(at for at in (now, due, cap) if at is not None)
    moment = clock.instant(start, tz)
    if start > now:
        return _answer(CONTACT_CAP if cap is not None and start == cap else NOT_DUE,
                       compliance.next_at(names, moment, tz, config))
    held = calling_rules.held(names, moment, config, calling_rules.PROGRESSIVE, tz)
    if held is not None:
        return _answer(held.reason, compliance.next_at(names, moment, tz, config), held)
    if not compliance.zone_open(names, moment, tz, config, calling_rules.PROGRESSIVE):
        return _answer(compliance.OUTSIDE_CALLING_WINDOW, compliance.next_at(names, moment, tz, config))
    return _answer()


def consent(row):
    """{type, at, source} of the consent the CRM pushed with the lead, or None."""
    if row["consent_type"] is None:
        return None
    return {"type": row["consent_type"], "at": clock.format_wall_clock(row["consent_at"]),
            "source": row["consent_source"]}
