"""Lead push: validate a body and upsert it into sales_master (lead-intake-api.md, POST /api/leads; D4).

A batch costs five statements inside its transaction, however many leads it carries: read the
priority catalog and the dialer config, lock every oli_id of the batch in one SELECT ... FOR
UPDATE, look up the batch's numbers on the do-not-call list and their call zones (two
more the first time a zone is met), write every row in one multi-row INSERT ... ON DUPLICATE KEY
UPDATE.

What depends on the batch alone is done once per batch: the push reset's next_retry_at
and the reset values of a Pending lead, escaped once with `now` into one db.Literal (one
placeholder for the 13 of them); each lead adds only its own values and phone facts, as a tuple in
the statement's column order. A lead whose phone_number did not change keeps its stored phone facts
(claim_checks.lead_facts).
"""

import uuid

from dialerapi.plumbing.db import Conflict, Literal, queries
from dialerapi.rules.compliance import claim_checks
from dialerapi.rules.core import vocabulary
from dialerapi.rules.events import lead_events
from dialerapi.rules.events.outbox import notify
from dialerapi.rules.leads import catalog, transitions

# upsert_leads' columns after each lead's own (oli_id, data_id, phone_number, client_name, form_type,
# priority_id), in the statement's order; created_at and updated_at follow.
RESET_COLUMNS = ("dial_status", "disposeRemark", "last_dial_result", "hangup_by", "hangup_cause", "last_attempt_at",
                 "first_attempt_at", "next_retry_at", "callback_scheduled_at", "call_count", "isReserved")

# Where a row tuple holds the lead's phone facts (claim_checks.lead_facts): after its six own values.
E164_AT, LISTED_AT = 6, 7

INSERTED = "inserted"
UPDATED = "updated"
SKIPPED_IN_FLIGHT = "skipped_in_flight"


def push(conn, load, now, tz):
    """Validate a push with `load` and upsert it, inside the caller's transaction.

    `load(priorities)` is the CRM side's validation of the body (sides.crm.schemas.push_loader):
    it gets the priority catalog as this transaction reads it, so a batch is validated and written
    against one state of the catalog, and returns the loaded leads. Returns push_leads' results;
    raises marshmallow.ValidationError (nothing written) with every problem of the body.
    """
    priorities, config = catalog.push_context(conn)
    return push_leads(conn, load(priorities), now, tz, config)


def push_leads(conn, leads, now, tz, config):
    """Upsert `leads` in order, inside the caller's transaction; return one result per lead.

    `leads` are dicts as loaded by sides.crm.schemas.load_push: oli_id, phone_number (digits),
    client_name, form_type, priority_id, callback_scheduled_at (naive DB_TIMEZONE datetime or
    None) and callback_scheduled_at_sent (the raw value, echoed back), and when pushed region,
    postal_code and consent ({type, at, source}), which decide the lead's calling profile. `now` is wall-clock time in
    `tz` (DB_TIMEZONE); `config` is the dialer_config.DialerConfig with the campaigns: each lead's own
    (config.of its form_type) gives its next_retry_at and the region its number is read in.

    A new oli_id is inserted with the push reset; an existing one that is not live gets its contact
    fields and the push reset; a live one (Calling + isReserved) is not touched and reports its
    existing data_id. The same oli_id twice is applied in order (D4): the later entry reports
    `updated`. Each result is {oli_id, status, data_id, callback_scheduled_at}, plus
    `do_not_call: true` when the lead's phone is on the do-not-call list (it is stored
    and never claimed; `status` is what the specification says all the same).

    A lead's personal callback ends with the reset, and its owner is told (events.notify).
    A lead whose number is listed and was not marked before gets a lead.do_not_call event.

    Raises db.Conflict when a concurrent push inserted one of the new oli_ids first; Database.run
    then retries the whole batch, which will see the row and lock it.
    """
    if not leads:  # a list import's batch whose every row was refused
        return []
    existing = {row["oli_id"]: row for row in queries.lock_leads(conn, oli_ids=sorted({l["oli_id"] for l in leads}))}
    stamps = (now, now)
    pending_tails = {}

    def pending_tail(form_type):
        # The push reset of a lead without a callback time depends on its campaign's calendar only.
        if form_type not in pending_tails:
            reset = transitions.push_reset(data_id=None, callback_scheduled_at=None,
                                         next_retry_at=transitions.push_next_retry_at(now, config.of(form_type), tz))
            pending_tails[form_type] = (Literal.joined(tuple(reset[column] for column in RESET_COLUMNS) + stamps),)
        return pending_tails[form_type]

    for lead in leads:
        consent = lead.get("consent")
        lead["consent_type"] = consent["type"] if consent else None
    facts = claim_checks.lead_facts(conn, leads, config, existing)
    rows = {}
    results = []
    for lead, lead_facts in zip(leads, facts):
        oli_id = lead["oli_id"]
        current = existing.get(oli_id)
        if current is not None and vocabulary.is_live(current):
            results.append(_result(oli_id, SKIPPED_IN_FLIGHT, current["data_id"], lead, lead_facts[1]))
            continue
        data_id = str(uuid.uuid4())
        status = UPDATED if current is not None or oli_id in rows else INSERTED
        if lead["callback_scheduled_at"] is None:
            tail = pending_tail(lead["form_type"])
        else:
            reset = transitions.push_reset(data_id=data_id, callback_scheduled_at=lead["callback_scheduled_at"],
                                         next_retry_at=None)
            tail = (Literal.joined(tuple(reset[column] for column in RESET_COLUMNS) + stamps),)
        rows[oli_id] = (oli_id, data_id, lead["phone_number"], lead["client_name"], lead["form_type"],
                        lead["priority_id"]) + lead_facts + tail + _place(lead)
        results.append(_result(oli_id, status, data_id, lead, lead_facts[1]))
    if rows:
        expected = sum(2 if oli_id in existing else 1 for oli_id in rows)
        affected = queries.upsert_leads(conn, [rows[oli_id] for oli_id in sorted(rows)])
        if affected != expected:
            raise Conflict(f"a concurrent push inserted some of these oli_ids first ({affected} != {expected})")
        notify(conn, [existing[oli_id]["callback_agent_id"] for oli_id in rows
                      if oli_id in existing and existing[oli_id]["callback_agent_id"]], now)
        newly_listed = sorted(oli_id for oli_id, row in rows.items()
                              if row[LISTED_AT] and not (oli_id in existing and existing[oli_id]["do_not_call"]))
        if newly_listed:
            lead_events.listed(conn, [{**lead, "phone_e164": rows[lead["oli_id"]][E164_AT]} for lead in
                                      queries.leads_by_oli_ids(conn, oli_ids=newly_listed)], now, "push")
    return results


def _place(lead):
    """(region, postal_code, consent_type, consent_at, consent_source) of a loaded lead."""
    consent = lead.get("consent") or {}
    return (lead.get("region"), lead.get("postal_code"), consent.get("type"), consent.get("at"),
            consent.get("source"))


def _result(oli_id, status, data_id, lead, do_not_call=False):
    result = {
        "oli_id": oli_id,
        "status": status,
        "data_id": data_id,
        "callback_scheduled_at": lead["callback_scheduled_at_sent"],
    }
    if do_not_call:
        result["do_not_call"] = True
    return result
