"""Webhook endpoints and the delivery rules: which event goes to which endpoint, in
what order, when it is retried, when it is given up and when an endpoint is failing or disabled.

Each event of the feed (rules.events.lead_events) that an enabled endpoint takes becomes one delivery
row (`fan_out`). A lead's events reach an endpoint in feed order: a delivery is `ready` only
when no earlier one of the same lead and endpoint is undelivered, else `queued`, and the next one
becomes ready when the one before it is delivered or given up (`record_attempts`). Other leads'
events go on meanwhile. A 2xx delivers; 410 Gone disables the endpoint; anything else (another
status, a timeout, a refused connection) is retried with exponential backoff and jitter until
WEBHOOK_RETRY_HOURS after the event was fanned out, then given up (`failed`), and the endpoint is
marked failing until its next 2xx. The HTTP itself is upkeep.webhooks' (plumbing.webhook_http).

Functions take the connection first and never commit. Times are naive UTC datetimes.
"""

import base64
import collections
import heapq
import random
import secrets
from datetime import timedelta
from urllib.parse import urlsplit

import pymysql

from dialerapi.plumbing.db import Conflict, inserted_id, queries
from dialerapi.rules.events import lead_events

QUEUED, READY, DELIVERED, FAILED = "queued", "ready", "delivered", "failed"
ALL_TYPES = "*"
URL_MAX = 2000
SECRET_PREFIX = "whsec_"
# After a rotation the old secret signs beside the new one this long, so receivers can switch.
PREVIOUS_SECRET_HOURS = 24
FAN_OUT_BATCH = 2000
# Backoff: the n-th failure waits a random share (50-100%) of FIRST_RETRY_SECONDS * 2**(n-1), at most
# RETRY_CAP_SECONDS; over 24 hours that is about 30 attempts (Svix: 8 over 27 hours, Stripe: 3 days).
FIRST_RETRY_SECONDS = 5
RETRY_CAP_SECONDS = 3600
RESULTS = ("delivered", "failed_status", "error", "gone")


class UnknownEndpoint(LookupError):
    """No webhook endpoint has this id."""


class InvalidEndpoint(ValueError):
    """A URL or event list the service will not send to; the message says why."""


def new_secret():
    """A signing secret as Standard Webhooks writes it: `whsec_` and 24 random bytes in base64."""
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(24)).decode()


def check_url(url):
    """Raise InvalidEndpoint unless `url` is an absolute http(s) URL with a host, at most URL_MAX long."""
    if len(url) > URL_MAX:
        raise InvalidEndpoint(f"the URL is longer than {URL_MAX} characters")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InvalidEndpoint(f"{url!r} is not an http:// or https:// URL with a host")


def parse_types(types):
    """The event types an endpoint takes, as stored: "*" for every type, else a comma list of known
    ones (lead_events.TYPES). Raises InvalidEndpoint naming an unknown type."""
    wanted = sorted({t.strip() for t in types if t.strip()}) or [ALL_TYPES]
    if wanted == [ALL_TYPES] or ALL_TYPES in wanted:
        return ALL_TYPES
    unknown = [t for t in wanted if t not in lead_events.TYPES]
    if unknown:
        raise InvalidEndpoint(f"unknown event type {unknown[0]!r}: one of {', '.join(lead_events.TYPES)} or *")
    return ",".join(wanted)


def takes(endpoint, event_type):
    return endpoint["event_types"] == ALL_TYPES or event_type in endpoint["event_types"].split(",")


def add_endpoint(conn, url, types, now):
    """Register an endpoint for events from now on (its feed position is the newest event's).
    Returns {"id", "secret"}. Raises InvalidEndpoint."""
    check_url(url)
    secret = new_secret()
    queries.insert_endpoint(conn, url=url, secret=secret, event_types=parse_types(types),
                            fanned_seq=int(queries.last_seq(conn)), created_at=now)
    return {"id": inserted_id(conn), "secret": secret}


def lock_endpoint(conn, endpoint_id):
    endpoint = queries.lock_endpoint(conn, id=endpoint_id)
    if endpoint is None:
        raise UnknownEndpoint(endpoint_id)
    return endpoint


def set_enabled(conn, endpoint_id, enabled, reason=None):
    """Enable or disable an endpoint (`reason`: why, e.g. "operator", "gone"). Raises UnknownEndpoint.
    A disabled endpoint gets no deliveries for the events of its time off (replay sends them)."""
    lock_endpoint(conn, endpoint_id)
    queries.set_endpoint_enabled(conn, id=endpoint_id, enabled=int(enabled), reason=None if enabled else reason)


def remove_endpoint(conn, endpoint_id):
    """Remove an endpoint and its deliveries (its attempts log is pruned with age). Raises UnknownEndpoint."""
    lock_endpoint(conn, endpoint_id)
    queries.delete_endpoint_deliveries(conn, id=endpoint_id)
    queries.delete_endpoint(conn, id=endpoint_id)


def rotate_secret(conn, endpoint_id, now):
    """A new secret; the old one keeps signing beside it for PREVIOUS_SECRET_HOURS. Returns the new one."""
    endpoint = lock_endpoint(conn, endpoint_id)
    secret = new_secret()
    queries.set_endpoint_secret(conn, id=endpoint_id, secret=secret, previous_secret=endpoint["secret"],
                                previous_secret_until=now + timedelta(hours=PREVIOUS_SECRET_HOURS))
    return secret


def signing_secrets(endpoint, now):
    """The secrets a delivery is signed with at `now`: the current one, and the previous one while it lasts."""
    keys = [endpoint["secret"]]
    if endpoint["previous_secret"] and endpoint["previous_secret_until"] and endpoint["previous_secret_until"] > now:
        keys.append(endpoint["previous_secret"])
    return keys


def _queue(conn, endpoint_id, events, now):
    """Delivery rows for `events` (id, lead_id; in feed order) to one endpoint: ready for a lead's
    first undelivered event, queued behind it for the rest."""
    if not events:
        return 0
    waiting = {row["lead_id"] for row in queries.waiting_leads(
        conn, endpoint_id=endpoint_id, lead_ids=sorted({e["lead_id"] for e in events}))}
    rows = []
    for event in events:
        state = QUEUED if event["lead_id"] in waiting else READY
        waiting.add(event["lead_id"])
        rows.append((endpoint_id, event["id"], event["lead_id"], state, now, now))
    queries.insert_deliveries(conn, rows)
    return len(rows)


def lock_endpoints(conn):
    """Every endpoint row, locked: two hosts never fan out the same events (on Galera one of two at
    once conflicts and runs again)."""
    return list(queries.lock_endpoints(conn))


def fan_out(conn, now, endpoints, max_rows=FAN_OUT_BATCH):
    """Give every endpoint of `endpoints` (lock_endpoints) the feed's new events it takes (a disabled
    one passes over them). Returns how many deliveries were made."""
    made = 0
    if not endpoints:
        return 0
    start = min(e["fanned_seq"] for e in endpoints)
    events = list(queries.events_from_seq(conn, after=start, max_rows=max_rows))
    if not events:
        return 0
    for endpoint in endpoints:
        mine = [e for e in events if e["seq"] > endpoint["fanned_seq"]]
        if not mine:
            continue
        if endpoint["enabled"]:
            made += _queue(conn, endpoint["id"], [e for e in mine if takes(endpoint, e["type"])], now)
        queries.set_fanned(conn, id=endpoint["id"], fanned_seq=mine[-1]["seq"])
    return made


def take_due(conn, now, endpoints, places, hold_seconds, first=0):
    """The ready deliveries due at `now` of the enabled ones of `endpoints` (their rows) that the
    sender has places for, shared fairly, held from other senders for `hold_seconds` (naive UTC).

    `places`: {"room": sending places free in all, "busy": {endpoint id: sends in flight},
    "per_endpoint": the most one endpoint may have in flight, "limits" (optional): {endpoint id: a
    lower most of its own}}. The room goes a place at a time to
    the endpoint with the fewest sends in flight (those running plus those given this round; ties
    to the earlier in `endpoints` rotated by `first`, the round's number), so an endpoint that
    hangs or fails holds at most an equal share of the places while others have deliveries due,
    and nothing is held that is not sent this round (taking each endpoint's free
    places in id order held a good endpoint's deliveries unsent for `hold_seconds` behind three bad
    ones). Returns [{"delivery": row, "endpoint": row, "event": row}] in the order given.
    """
    room, busy = places["room"], places["busy"]
    enabled = [endpoint for endpoint in endpoints if endpoint["enabled"]]
    if room <= 0 or not enabled:
        return []
    turn = first % len(enabled)
    due = {}
    for endpoint in enabled[turn:] + enabled[:turn]:
        most = places.get("limits", {}).get(endpoint["id"], places["per_endpoint"])
        limit = min(room, most - busy.get(endpoint["id"], 0))
        if limit > 0:
            rows = list(queries.due_deliveries(conn, endpoint_id=endpoint["id"], now=now, max_rows=limit))
            if rows:
                due[endpoint["id"]] = (endpoint, collections.deque(rows))
    fewest_first = [(busy.get(endpoint_id, 0), position, endpoint_id) for position, endpoint_id in enumerate(due)]
    heapq.heapify(fewest_first)
    taken = []
    while room and fewest_first:
        in_flight, position, endpoint_id = heapq.heappop(fewest_first)
        endpoint, rows = due[endpoint_id]
        taken.append({"delivery": rows.popleft(), "endpoint": endpoint})
        room -= 1
        if rows:
            heapq.heappush(fewest_first, (in_flight + 1, position, endpoint_id))
    if not taken:
        return []
    queries.hold_deliveries(conn, ids=[t["delivery"]["id"] for t in taken], until=now + timedelta(seconds=hold_seconds))
    events = {row["id"]: row for row in queries.events_by_ids(conn, ids=sorted({t["delivery"]["event_id"] for t in taken}))}
    ready = []
    for item in taken:
        event = events.get(item["delivery"]["event_id"])
        if event is None:  # pruned before it could be sent
            _finish(conn, {DELIVERED: [], FAILED: [item["delivery"]]}, now)
            continue
        ready.append({**item, "event": event})
    return ready


def backoff_seconds(attempts, rng=random.random):
    """Seconds before the next try after `attempts` failed ones: exponential, capped, with jitter."""
    ceiling = min(RETRY_CAP_SECONDS, FIRST_RETRY_SECONDS * 2 ** min(attempts - 1, 20))
    return ceiling * (0.5 + rng() / 2)


def result_of(status, error):
    """The attempt's result for the counts: delivered, gone, failed_status or error."""
    if status is not None and 200 <= status < 300:
        return "delivered"
    if status == 410:
        return "gone"
    return "error" if status is None else "failed_status"


def record_attempts(conn, finished, now, retry_hours):
    """Store what a round's HTTP attempts got and decide what follows each, in a few statements.

    `finished`: [(delivery id, {status (int or None), latency_ms, error (text or None),
    response_head (text)})]. A 2xx delivers and makes the lead's next event for the endpoint due;
    410 disables the endpoint (the delivery waits); anything else is retried after
    backoff_seconds, or given up once `retry_hours` have passed since the delivery was made (the
    lead's next event becomes due and the endpoint is marked failing). A delivery already finished
    (another sender's duplicate) only gets its log line. Returns {delivery id: result_of}.
    """
    deliveries = {row["id"]: row for row in queries.lock_deliveries(conn, ids=sorted({d for d, _ in finished}))}
    logs, counts, results = [], collections.Counter(), {}
    done, retries, gone, cleared, failing = {DELIVERED: [], FAILED: []}, [], set(), set(), set()
    for delivery_id, attempt in finished:
        delivery = deliveries.get(delivery_id)
        if delivery is None:
            continue
        result = results[delivery_id] = result_of(attempt["status"], attempt["error"])
        logs.append((delivery_id, delivery["endpoint_id"], delivery["event_id"], now, attempt["status"],
                     attempt["latency_ms"], attempt["error"], attempt["response_head"]))
        counts[f"webhook:{delivery['endpoint_id']}:{result}"] += 1
        if delivery["state"] != READY:
            continue
        if result == "delivered":
            done[DELIVERED].append(delivery)
            cleared.add(delivery["endpoint_id"])
        elif result == "gone":
            gone.add(delivery["endpoint_id"])
            retries.append((now, delivery_id))
        elif now - delivery["created_at"] >= timedelta(hours=retry_hours):
            done[FAILED].append(delivery)
            failing.add(delivery["endpoint_id"])
        else:
            retries.append((now + timedelta(seconds=backoff_seconds(delivery["attempts"] + 1)), delivery_id))
    if logs:
        queries.insert_attempts(conn, logs)
    for name, delta in sorted(counts.items()):
        queries.change_counter(conn, name=name, delta=delta)
    if retries:
        queries.schedule_retries(conn, retries)
    _finish(conn, done, now)
    for endpoint_id in sorted(cleared - failing):
        queries.clear_failing(conn, id=endpoint_id)
    for endpoint_id in sorted(failing):
        queries.set_failing(conn, id=endpoint_id, since=now)
    for endpoint_id in sorted(gone):
        queries.set_endpoint_enabled(conn, id=endpoint_id, enabled=0, reason="gone (410)")
    return results


def _finish(conn, done, now):
    """Mark deliveries delivered or failed ({state: [delivery rows]}) and make each one's lead's next
    queued event for its endpoint due."""
    if done[DELIVERED]:
        queries.mark_delivered(conn, ids=[d["id"] for d in done[DELIVERED]], at=now)
    if done[FAILED]:
        queries.mark_failed(conn, ids=[d["id"] for d in done[FAILED]])
    leads = collections.defaultdict(set)
    for delivery in done[DELIVERED] + done[FAILED]:
        leads[delivery["endpoint_id"]].add(delivery["lead_id"])
    for endpoint_id, lead_ids in sorted(leads.items()):
        heads = [row["id"] for row in queries.queued_heads(conn, endpoint_id=endpoint_id, lead_ids=sorted(lead_ids))]
        if heads:
            queries.make_ready(conn, ids=heads, now=now)


def replay(conn, endpoint_id, since, now, after_seq=0, max_rows=FAN_OUT_BATCH):
    """Queue again, for one endpoint, the events it takes that occurred at or after `since` (naive
    UTC) and that it was already given (feed position up to its fanned_seq), from feed position
    `after_seq`, at most `max_rows`; they follow the lead's undelivered ones. Returns (how many,
    the last feed position read or None when done). Raises UnknownEndpoint."""
    endpoint = lock_endpoint(conn, endpoint_id)
    events = [e for e in queries.events_since(conn, since=since, upto=after_seq, max_rows=max_rows)
              if e["seq"] <= endpoint["fanned_seq"]]
    if not events:
        return 0, None
    made = _queue(conn, endpoint_id, [e for e in events if takes(endpoint, e["type"])], now)
    return made, events[-1]["seq"]


def attempts_log(conn, endpoint_id, max_rows):
    """The endpoint's latest `max_rows` attempts, newest first, with their event's type."""
    return queries.attempts_log(conn, endpoint_id=endpoint_id, max_rows=max_rows)


def endpoint_report(conn, now):
    """Per endpoint, for /metrics, /health and `webhooks list`: {id, url, event_types, enabled,
    disabled_reason, failing_since, oldest_undelivered_seconds (None: nothing waits), results:
    {delivered, failed_status, error, gone}}."""
    counts = {}
    for row in queries.counters_like(conn, pattern="webhook:%"):
        _, endpoint_id, result = row["name"].split(":")
        counts.setdefault(int(endpoint_id), {})[result] = int(row["value"])
    report = []
    unsequenced = queries.first_unsequenced(conn)
    for endpoint in queries.endpoints(conn):
        oldest = [moment for moment in (queries.oldest_waiting(conn, endpoint_id=endpoint["id"]),
                                        queries.first_unfanned(conn, after=endpoint["fanned_seq"]), unsequenced)
                  if moment is not None and endpoint["enabled"]]
        report.append({
            "id": endpoint["id"], "url": endpoint["url"], "event_types": endpoint["event_types"],
            "enabled": bool(endpoint["enabled"]), "disabled_reason": endpoint["disabled_reason"],
            "failing_since": endpoint["failing_since"],
            "oldest_undelivered_seconds": max(0, round((now - min(oldest)).total_seconds())) if oldest else None,
            "results": {name: counts.get(endpoint["id"], {}).get(name, 0) for name in RESULTS},
        })
    return report


def take_lease(conn, name, by, now, lease_seconds):
    """Hold the job `name`'s lease for `by` until `now` + `lease_seconds` when it is free, lapsed or
    already `by`'s. Returns True when `by` holds it. A lease ending more than twice its length
    after `now` (the clock went back) counts as lapsed. The row is locked, so of two takers on one
    node the second sees the first's lease; on Galera the second fails certification and runs
    again (Database.run), and two first inserts meet on the key (Conflict: run again)."""
    lease = {"name": name, "started_at": now, "lease_until": now + timedelta(seconds=lease_seconds), "run_by": by}
    row = queries.lock_lease(conn, name=name)
    if row is None:
        try:
            queries.insert_lease(conn, **lease)
        except pymysql.err.IntegrityError:
            raise Conflict(f"the lease {name} was taken first by another process") from None
        return True
    left = None if row["lease_until"] is None else (row["lease_until"] - now).total_seconds()
    if row["run_by"] != by and left is not None and 0 < left <= 2 * lease_seconds:
        return False
    # The holder writes the row when a third of its lease is gone, not every round: on Galera each
    # write is replicated to every node.
    if row["run_by"] != by or left is None or not 2 * lease_seconds / 3 < left <= lease_seconds:
        queries.renew_lease(conn, **lease)
    return True


def prune_deliveries(conn, before):
    """Delete up to a batch of deliveries made before `before` (naive UTC); return how many."""
    return queries.prune_deliveries(conn, before=before, max_rows=lead_events.PRUNE_BATCH)


def prune_attempts(conn, before):
    """Delete up to a batch of attempts logged before `before` (naive UTC); return how many."""
    return queries.prune_attempts(conn, before=before, max_rows=lead_events.PRUNE_BATCH)
