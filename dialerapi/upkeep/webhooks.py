"""The webhook dispatcher: one process of the whole floor at a time sequences the lead
events, fans them out to the endpoints and sends them, off every request path.

Each host runs one `Dispatcher` in a process of its own (`dialerapi webhooks dispatch`, which the
HTTP pool's gunicorn master starts when JOBS_ENABLED: deploy/gunicorn.conf.py), never in a worker
that serves requests. The one holding the lease `webhooks` in dialerapi_job_runs (LEASE_SECONDS,
renewed when a third of it is gone) works, the others try again every LEASE_RETRY_SECONDS, so a
killed holder is replaced within LEASE_SECONDS + LEASE_RETRY_SECONDS (under 30 s). A round (every
GATHER_SECONDS, sooner when GATHER_SENDS sends have finished): one transaction sequences new
events (lead_events.sequence), fans them out (webhooks.fan_out) and takes as many due deliveries
as there are free sending places (SENDERS in all, at most PER_ENDPOINT in flight per endpoint),
shared fairly: a place at a time to the endpoint with the fewest in flight (webhooks.take_due), held
from any other sender for HOLD_SECONDS, longer than an attempt can take. A pool of SENDERS threads
POSTs them (plumbing.webhook_http, 10 s timeout, no transaction open) and the round after stores
every finished attempt in one transaction (webhooks.record_attempts). So a dead, slow or hostile
endpoint costs at most an equal share of the sending places while others have deliveries due
 and HEAD_BYTES of memory per attempt, and never a push, a claim or a settle.

A host killed mid-send leaves its deliveries `ready`: the next holder sends them again when their
hold ends (at least once; the receiver sees the same `webhook-id`).
"""

import collections
import logging
import os
import queue
import socket
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

from dialerapi.plumbing import clock
from dialerapi.plumbing.db import get_db
from dialerapi.plumbing.webhook_http import TIMEOUT_SECONDS, Sender
from dialerapi.rules.events import lead_events, webhooks

log = logging.getLogger(__name__)

LEASE_NAME = "webhooks"
LEASE_SECONDS = 15
LEASE_RETRY_SECONDS = 5
HOLD_SECONDS = TIMEOUT_SECONDS + 20
SENDERS = 64
PER_ENDPOINT = 32
# After a round the dispatcher gathers finished sends for GATHER_SECONDS, or until GATHER_SENDS have
# finished (a busy endpoint), before the next: the events and results of that time go through one
# round's two transactions, not a round each: the dispatcher's CPU, even at SCHED_IDLE, moves the
# settles' p99 on shared cores (rounds 50 ms apart: settle two-over-none 1.16x; these: 0.95x,
# docs/performance.md). An event waits at most GATHER_SECONDS for its first send.
GATHER_SECONDS = 0.2
GATHER_SENDS = PER_ENDPOINT // 2
# An endpoint whose last FAILING_STREAK attempts all failed gets one send in flight at a time until
# one is delivered: its retries otherwise cost the dispatcher's one interpreter and the host's cores
# many times a healthy endpoint's sends (a 500 and a 302 endpoint with 400 events each made about
# 2,400 requests in ten seconds beside the healthy one's 400), and that CPU is every endpoint's delay.
FAILING_STREAK = 4


def utc_now():
    """The service clock as naive UTC (the webhook tables' time)."""
    return clock.utcnow().replace(tzinfo=None)


class Dispatcher:
    """One process's webhook dispatcher; `run(stop)` until the event `stop` is set, or `step()` by hand.

    `by` names this process in the lease (hostname:pid). Not thread-safe: one thread calls step().
    """

    def __init__(self, app, by=None, senders=SENDERS, per_endpoint=PER_ENDPOINT):
        self.app = app
        self.by = by or f"{socket.gethostname()}:{os.getpid()}"
        self.sender = Sender(app.config["WEBHOOK_ALLOWED_HOSTS"])
        self.pool = ThreadPoolExecutor(max_workers=senders, thread_name_prefix="webhook-send")
        self.senders = senders
        self.per_endpoint = per_endpoint
        self.in_flight = {}  # delivery id -> endpoint id
        self.results = queue.Queue()
        self.finished = []  # (delivery id, attempt) taken from `results`, not stored yet
        self.failed_in_a_row = collections.Counter()  # endpoint id -> attempts failed since its last delivery
        self.holding = False
        self.renew_at = 0.0  # monotonic: when the lease next needs writing
        self.rounds = 0

    def run(self, stop):
        """Work while holding the lease until `stop` (a threading.Event) is set."""
        while not stop.is_set():
            started = time.monotonic()
            try:
                self.step()
            except Exception:
                log.exception("webhook dispatcher round failed")
            if not self.holding:
                stop.wait(LEASE_RETRY_SECONDS)
                continue
            self.gather(started + GATHER_SECONDS)
        self.close()

    def gather(self, deadline):
        """Collect finished sends until GATHER_SENDS have finished or time.monotonic() reaches `deadline`."""
        while len(self.finished) < GATHER_SENDS:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            try:
                self.finished.append(self.results.get(timeout=remaining))
            except queue.Empty:
                return

    def wait_results(self, seconds):
        """Block until a send has finished or `seconds` pass (the tests step the dispatcher with it)."""
        if not self.finished:
            try:
                self.finished.append(self.results.get(timeout=seconds))
            except queue.Empty:
                pass

    def step(self):
        """One round: record finished sends, hold the lease, sequence, fan out, send what is due.
        Returns True when it did anything."""
        with self.app.app_context():
            db = get_db()
            done = self.record_results(db)
            now = utc_now()
            if not self.holding or time.monotonic() >= self.renew_at:
                self.holding = db.run(webhooks.take_lease, LEASE_NAME, self.by, now, LEASE_SECONDS)
                # Written again when a third of it is gone, well before another host may take it.
                self.renew_at = time.monotonic() + LEASE_SECONDS / 3
            if not self.holding:
                return done > 0
            self.rounds += 1
            round_work = db.run(prepare_round, now, self.places(), HOLD_SECONDS, self.rounds)
            sent = self.send(round_work["due"], now)
            return bool(done or round_work["sequenced"] or round_work["fanned"] or sent)

    def places(self):
        """What take_due shares out: {"room", "busy": {endpoint id: sends in flight}, "per_endpoint",
        "limits": {endpoint id: its own lower limit}} (one in flight for an endpoint failing FAILING_STREAK
        attempts in a row)."""
        busy = collections.Counter(self.in_flight.values())
        limits = {endpoint_id: 1 for endpoint_id, failed in self.failed_in_a_row.items() if failed >= FAILING_STREAK}
        return {"room": max(0, self.senders - len(self.in_flight)), "busy": busy, "per_endpoint": self.per_endpoint,
                "limits": limits}

    def send(self, taken, now):
        room = self.senders - len(self.in_flight)
        due = [item for item in taken if item["delivery"]["id"] not in self.in_flight][:max(0, room)]
        for item in due:
            delivery, endpoint = item["delivery"], item["endpoint"]
            self.in_flight[delivery["id"]] = endpoint["id"]
            body = self.app.json.dumps(lead_events.public_event(item["event"]))
            self.pool.submit(self._send, delivery["id"], endpoint["url"], webhooks.signing_secrets(endpoint, now),
                             f"{lead_events.EVENT_PREFIX}{item['event']['id']}", body)
        return len(due)

    def _send(self, delivery_id, url, secrets, msg_id, body):
        try:
            attempt = self.sender.send(url, secrets, msg_id, body)
        except Exception as exc:  # a bug must not lose the result: the delivery is retried
            log.exception("webhook send failed")
            attempt = {"status": None, "latency_ms": 0, "error": f"internal: {type(exc).__name__}",
                       "response_head": ""}
        self.results.put((delivery_id, attempt))

    def record_results(self, db):
        """Store every finished send in one transaction; returns how many."""
        finished, self.finished = self.finished, []
        while True:
            try:
                finished.append(self.results.get_nowait())
            except queue.Empty:
                break
        if finished:
            db.run(webhooks.record_attempts, finished, utc_now(), self.app.config["WEBHOOK_RETRY_HOURS"])
            for delivery_id, attempt in finished:
                endpoint_id = self.in_flight.pop(delivery_id, None)
                if webhooks.result_of(attempt["status"], attempt["error"]) == "delivered":
                    self.failed_in_a_row.pop(endpoint_id, None)
                elif endpoint_id is not None:
                    self.failed_in_a_row[endpoint_id] += 1
        return len(finished)

    def close(self):
        self.pool.shutdown(wait=True, cancel_futures=True)
        with self.app.app_context():
            try:
                self.record_results(get_db())
            except Exception:
                log.exception("webhook results could not be stored at shutdown; the deliveries are sent again")
        self.sender.close()


def prepare_round(conn, now, places, hold_seconds, first=0):
    """A round's database work in one transaction: sequence the new events, fan them out, take the
    due deliveries the sender has `places` for (webhooks.take_due, its turn `first`). Returns
    {"sequenced", "fanned", "due"}."""
    sequenced = lead_events.sequence(conn)
    endpoints = webhooks.lock_endpoints(conn)
    fanned = webhooks.fan_out(conn, now, endpoints)
    return {"sequenced": sequenced, "fanned": fanned,
            "due": webhooks.take_due(conn, now, endpoints, places, hold_seconds, first)}


def retention_cutoff(app):
    """Naive UTC before which lead events and the delivery log are pruned (LEAD_EVENTS_RETENTION_DAYS)."""
    return utc_now() - timedelta(days=app.config["LEAD_EVENTS_RETENTION_DAYS"])

