"""The CRM's lead read (GET /api/leads/{oli_id}, `dialerapi leads why`): the lead as it stands, a
page of its calls, where it is, its consent and whether it may be called now (rules.views.why).
"""

from dialerapi.plumbing import clock
from dialerapi.plumbing.db import queries
from dialerapi.rules.compliance import calling_rules
from dialerapi.rules.config import dialer as dialer_config
from dialerapi.rules.core.vocabulary import CALLBACK, UnknownLead, is_live
from dialerapi.rules.events.lead_events import LEAD_TIMES, wall_text
from dialerapi.rules.leads import callbacks
from dialerapi.rules.views import why


def _waiting_on_cap(row):
    """{"cap", "frees_at"} while the lead waits on the contact cap a claim held it for (its due time
    is still the one the hold set), else None."""
    until = row["contact_cap_until"]
    due = row["callback_scheduled_at"] if row["dial_status"] == CALLBACK else row["next_retry_at"]
    if until is None or row["isReserved"] or due != until:
        return None
    return {"cap": row["contact_cap"], "frees_at": wall_text(until)}


def read_lead(conn, oli_id, before, limit, tz, now=None):
    """GET /api/leads/{oli_id}: the lead as it stands and a page of its calls, newest first.

    `before`: the call attempt id to page below (None: from the newest); `limit`: calls per page.
    Returns {"lead": {...}, "calls_json": the page as a JSON array (text, written by the database:
    each call {id, outcome, result, agent_id, call_type, form_type, started_at, ended_at,
    answered_at, agent_connected_at ('YYYY-MM-DD HH:MM:SS' DB_TIMEZONE), connect_seconds,
    late_connect (bool or null), hangup_by, hangup_cause}), "next" (str cursor or None)}. A
    personal callback's `callback_fallback_at` follows its campaign's personal_callback_fallback_minutes
    (None: never); `contact_cap` {cap, frees_at} says why a held lead waits, else None.
    `place` {regions, source (region, postal_code or area_code), region, postal_code},
    `consent` {type, at, source} or None, and `callable` {now, reason, rule, source, note,
    next_at} at `now` (wall-clock `tz`; the service's clock when None), as rules.views.why works them out.
    Raises states.UnknownLead.
    """
    now = now or clock.now(tz)
    row = queries.read_lead(conn, oli_id=oli_id, before=before or 2 ** 63 - 1, max_rows=limit, page_rows=limit + 1)
    if row is None:
        raise UnknownLead(oli_id)
    config = dialer_config.load_config(conn)
    fallback_minutes = (None if row["callback_agent_id"] is None
                        else config.of(row["form_type"]).personal_callback_fallback_minutes)
    owner = row["callback_agent_id"]
    fallback_at = None
    if owner is not None and row["callback_scheduled_at"] is not None:
        fallback_at = callbacks.fallback_at(row["callback_scheduled_at"], fallback_minutes, tz)
    lead = {
        "oli_id": row["oli_id"], "data_id": row["data_id"], "phone_number": row["phone_number"],
        "client_name": row["client_name"], "form_type": row["form_type"], "priority_id": row["priority_id"],
        "dial_status": row["dial_status"], "disposeRemark": row["disposeRemark"],
        "last_dial_result": row["last_dial_result"], "hangup_by": row["hangup_by"],
        "hangup_cause": row["hangup_cause"], "call_count": row["call_count"], "isReserved": bool(row["isReserved"]),
        **{name: wall_text(row[name]) for name in LEAD_TIMES},
        "live": is_live(row), "do_not_call": bool(row["do_not_call"]),
        "phone_e164": None if row["phone_e164"] is None else str(row["phone_e164"]),
        "call_zones": list(calling_rules.split(row["call_zones"].split(";"))[0]) if row["call_zones"] else [],
        "callback_agent_id": owner, "callback_fallback_at": wall_text(fallback_at),
        "contact_cap": _waiting_on_cap(row),
        **why.of_lead(conn, row, now, tz, config),
    }
    return {"lead": lead, "calls_json": row["calls"] or "[]", "next": row["last_id"] if row["more"] else None}
