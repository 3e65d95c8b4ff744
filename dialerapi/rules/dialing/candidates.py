"""The due leads a claim may take, read without locks in claim order (lead-intake-api.md "Claim
and retry rules"; docs/performance.md): rules.dialing.claims locks them one at a time.

`due` reads, per form_type, a window of candidates in the order of the claim's index
(ix_claim_due), and zone by zone (ix_claim_zone) where the calling window leaves most of the due
order asleep, so the cost of a claim does not grow with the leads it may not call now.
"""

import threading

from dialerapi.plumbing.db import queries, union_all
from dialerapi.rules.config import work_window
from dialerapi.rules.leads import callbacks

# Candidates read per form_type (and call zone) in the first window; each later window is
# WINDOW_GROWTH times larger, until the candidates run out.
CANDIDATES = 5
WINDOW_GROWTH = 8
# {form_type: open zone ids} of the form_types whose due order held too few lawful leads with the
# calling window obeyed: read zone by zone while those zones are open.
_by_zone = {}
_by_zone_lock = threading.Lock()


def due(conn, wanted, now, config, max_rows, zones, tz=None, agent_id=None):
    """Unlocked candidate lead ids in claim order, and whether they are all there are.

    `wanted`: (form_type, allowed priority_ids) pairs; an empty priority list allows every priority.
    Bucket by bucket, due-first within a bucket across form_types and call zones; the first
    `max_rows` of each form_type at least. The second value is True when no read was cut.
    Due callbacks wait for the work window when outbound_obey_work_hours = 1 (Claim and retry
    rules 2). `zones`: {form_type: the ids of the call zones open now by its campaign's calling window
    (claim_checks.open_zones), None for every zone}, or one such value for them all.

    With the window obeyed, a form_type's due order is read as far as without it, each lead marked
    lawful or not: where its first due leads are in open zones, that is all it takes. A form_type
    whose read holds fewer than half `max_rows` lawful leads (`_enough`) is read zone by zone instead
    (ix_claim_zone: a closed zone costs nothing, however many of its leads are due), in a second
    statement, and from the first statement on while the same zones are open (`_by_zone`). So the
    cost does not grow with the leads asleep.

    Personal callbacks are left out until their fallback (rules.leads.callbacks); with
    `agent_id` (a progressive claim), that agent's own due ones of these form_types are read in the
    same statement and come first (bucket 0), whatever the agent's priority list.
    """
    if not isinstance(zones, dict):
        zones = {form_type: zones for form_type, _ in wanted}
    own_configs = {form_type: config.of(form_type) for form_type, _ in wanted}
    common = {form_type: {"form_type": form_type, "now": now, "callbacks_open": _callbacks_open(now, own_configs[form_type]),
                          "all_priorities": not priorities, "priorities": tuple(priorities) or (0,),
                          "max_rows": max_rows, **callbacks.fallback_params(now, own_configs[form_type], tz)}
              for form_type, priorities in wanted}
    # The owner's read starts at one row (the first is nearly always taken) and grows as the others do.
    open_skills = [form_type for form_type in common if common[form_type]["callbacks_open"]]
    owner_zones = {zones[form_type] for form_type in open_skills}
    own = callbacks.owner_read(agent_id, open_skills, now, bool(open_skills),
                               owner_zones.pop() if len(owner_zones) == 1 else None, max(1, max_rows // CANDIDATES))
    zoned = [form_type for form_type in common if zones[form_type] is not None]
    by_zone = [form_type for form_type in zoned if _by_zone.get(form_type) == zones[form_type]]
    heads = [(queries.due_candidates, {**params, "any_zone": zones[form_type] is None,
                                       "zone_ids": zones[form_type] or (0,)})
             for form_type, params in common.items() if form_type not in by_zone]
    candidates, complete, sparse = _read(conn, own + heads + _zone_reads(common, by_zone, zones), max_rows)
    if None in sparse:
        sparse.remove(None)
        candidates += _own_lawful(conn, own)
    if sparse:
        with _by_zone_lock:
            _by_zone.update((form_type, zones[form_type]) for form_type in sparse)
        more, more_complete, _ = _read(conn, _zone_reads(common, sparse, zones), max_rows)
        candidates += more
        complete = complete and more_complete
    return _in_claim_order(candidates, now), complete


def _own_lawful(conn, own):
    """The owner's due personal callbacks read on, in larger windows, past those in closed call
    zones, until a lawful one is found or there are no more: they go before the owner's other work."""
    ((query, params),) = own
    limit = params["max_rows"]
    while True:
        limit *= WINDOW_GROWTH
        rows = union_all(conn, [(query, {**params, "max_rows": limit, "part": 0})])
        lawful = [row for row in rows if row["lawful"]]
        if lawful or len(rows) < limit:
            return lawful


def _callbacks_open(now, config):
    return not config.outbound_obey_work_hours or work_window.in_work_window(now, config)


def _zone_reads(common, form_types, zones):
    """A form_type's due order read zone by zone. Its first lawful lead is the first of some open
    zone's, so each zone's read takes its share of the window (at least 1 row; zone 0, leads not yet
    worked out, not counted): with a zone per state a window's rows, not one per zone."""
    return [(queries.due_candidates_in_zone, {**common[form_type], "zone_id": zone_id, "max_rows": max(
        1, common[form_type]["max_rows"] // max(1, len(zones[form_type]) - 1))})
            for form_type in form_types for zone_id in zones[form_type]]


def _read(conn, reads, max_rows):
    """Run `reads`, (query, params) pairs, in one statement. Returns their lawful rows, whether no
    read was cut at its max_rows, and the form_types whose read was cut with fewer than `_enough`
    lawful rows (a head mostly asleep: to be read zone by zone), with None among them when the
    owner's read (callbacks.owner_read) was cut with none lawful."""
    rows = union_all(conn, [(query, {**params, "part": number}) for number, (query, params) in enumerate(reads)])
    found = [[] for _ in reads]
    for row in rows:
        found[row["part"]].append(row)
    candidates, complete, sparse = [], True, []
    for (_, params), read in zip(reads, found):
        lawful = [row for row in read if row["lawful"]]
        if params.get("form_type") is None:  # the agent's own callbacks (callbacks.owner_read)
            candidates += lawful
            if not lawful and len(read) == params["max_rows"]:
                sparse.append(None)  # all in closed call zones: read on (_own_lawful)
            continue
        cut = len(read) == params["max_rows"]
        if cut and len(lawful) < _enough(max_rows) and "zone_id" not in params:
            sparse.append(params["form_type"])
        else:
            candidates += lawful
            complete = complete and not cut
    return candidates, complete, sparse


def _enough(max_rows):
    """The lawful leads a head read must hold to be used as it is: half its window (at least 1), the
    first in claim order and spares for claims that take them first. A head with fewer is read zone
    by zone, a part per open zone (about one per state)."""
    return max(1, max_rows // 2)


def _in_claim_order(rows, now):
    rows.sort(key=lambda row: (row["bucket"], row["due"] is not None, row["due"] or now, row["id"]))
    return [row["id"] for row in rows]
