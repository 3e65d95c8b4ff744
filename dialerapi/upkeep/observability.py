"""Request logs, request ids and Prometheus metrics .

- Every response carries `X-Request-ID`: the request's own when it sent a sane one, else a new one.
- One JSON log line per request on the `dialerapi.access` logger: method, path (never the query
  string, which may hold `?key=`), status, duration_ms, client_ip, request_id. Never a body.
- GET /metrics (authenticated): request latency histograms by method, route and status, counters
  of pushed leads by result and of sweeps, and gauges read from the database at scrape time
  (pending rows by status, open missed activities, blocked agents, agent sockets per host). Under gunicorn the workers
  share their samples through PROMETHEUS_MULTIPROC_DIR (set by deploy/gunicorn.conf.py).
"""

import collections
import logging
import os
import re
import time
import uuid

import pymysql
from flask import g, request
from prometheus_client import REGISTRY, CollectorRegistry, Counter, Histogram, generate_latest, multiprocess
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

from dialerapi.plumbing import clock, socket_slots
from dialerapi.plumbing.db import connect, queries
from dialerapi.rules.events import webhooks
from dialerapi.rules.leads import dialstate
from dialerapi.rules.views import floor
from dialerapi.upkeep.health import caller_ids_report, compliance_report

access_log = logging.getLogger("dialerapi.access")
REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")
# The method label takes these values and "other": a label set a client can grow (any 3-20 letter
# token is a method to gunicorn and nginx) would grow /metrics and its files without bound.
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})

REQUEST_SECONDS = Histogram(
    "dialerapi_request_duration_seconds", "HTTP request latency in seconds", ["method", "route", "status"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5),
)
LEADS_PUSHED = Counter("dialerapi_leads_pushed_total", "Leads pushed, by result", ["status"])
SWEEPS = Counter("dialerapi_sweeps_total", "Sweep runs (one per tick across all processes)")
RESERVATIONS_RELEASED = Counter("dialerapi_reservations_released_total",
                                "Live reservations released by the sweep because their lease ran out")
CALLER_IDS_PRESENTED = Counter("dialerapi_caller_id_presented_total",
                               "Claims answered with a caller ID, by the campaign's pool and how it matched",
                               ["pool", "match"])


def init_app(app):
    """Install the request-id, access-log and metrics hooks. Call before any other before_request hook."""

    @app.before_request
    def start():
        g.started = time.perf_counter()
        offered = request.headers.get("X-Request-ID", "")
        g.request_id = offered if REQUEST_ID.fullmatch(offered) else uuid.uuid4().hex

    @app.after_request
    def finish(response):
        seconds = time.perf_counter() - g.get("started", time.perf_counter())
        request_id = g.get("request_id") or uuid.uuid4().hex
        response.headers["X-Request-ID"] = request_id
        route = request.url_rule.rule if request.url_rule else "unmatched"
        method = request.method if request.method in METHODS else "other"
        REQUEST_SECONDS.labels(method, route, str(response.status_code)).observe(seconds)
        access_log.info("request", extra={
            "method": request.method, "path": request.path, "status": response.status_code,
            "duration_ms": round(seconds * 1000, 2), "client_ip": request.remote_addr, "request_id": request_id,
        })
        return response


def count_presented(caller_id):
    """Count a committed claim's caller ID ({number, pool, match}, or None: nothing to count)."""
    if caller_id is not None:
        CALLER_IDS_PRESENTED.labels(caller_id["pool"], caller_id["match"]).inc()


def count_pushed(results):
    """Count a committed push's results by status (inserted, updated, skipped_in_flight)."""
    # One increment per status, not per lead: under gunicorn each one writes a shared mmap file.
    for status, count in collections.Counter(result["status"] for result in results).items():
        LEADS_PUSHED.labels(status).inc(count)


class DatabaseGauges:
    """Gauges read from the database when /metrics is scraped (a 2 s timeout; none when it is down)."""

    def __init__(self, database_url, tz):
        self.database_url = database_url
        self.tz = tz

    def collect(self):
        try:
            conn = connect(self.database_url, 2, 2)
        except (pymysql.MySQLError, OSError):
            return
        try:
            pending = GaugeMetricFamily("dialerapi_pending_actions", "CRM actions by status", labels=["status"])
            for row in queries.pending_actions_by_status(conn):
                pending.add_metric([row["status"]], row["n"])
            yield pending
            yield GaugeMetricFamily("dialerapi_open_missed_activities", "Uncleared missed activities",
                                    value=queries.count_open_missed_activities(conn))
            yield GaugeMetricFamily("dialerapi_agents_blocked", "Agents whose outbound is paused",
                                    value=queries.count_blocked_agents(conn))
            now = clock.now(self.tz)
            reservations = dialstate.live_reservations(conn, now, self.tz)
            yield GaugeMetricFamily("dialerapi_live_reservations", "Leads reserved live on a call (Calling + isReserved)",
                                    value=reservations["live"])
            yield GaugeMetricFamily("dialerapi_oldest_reservation_seconds",
                                    "Age of the oldest live reservation (0 when there is none)",
                                    value=reservations["oldest_seconds"] or 0)
            yield from socket_gauges(socket_slots.hosts_report(conn, now, self.tz))
            yield from compliance_gauges(compliance_report(conn, now, self.tz))
            yield abandon_gauge(floor.floor_state(conn, now, None, self.tz)["form_types"])
            yield from webhook_metrics(webhooks.endpoint_report(conn, clock.utcnow().replace(tzinfo=None)))
            yield from caller_id_gauges(caller_ids_report(conn, now)["pools"])
        finally:
            conn.close()


def caller_id_gauges(pools):
    """Each caller-ID pool's numbers by state and the calls it may still present today."""
    numbers = GaugeMetricFamily("dialerapi_caller_ids", "The floor's caller IDs per pool, by state (at_cap: active,"
                                " at today's cap)", labels=["pool", "state"])
    headroom = GaugeMetricFamily("dialerapi_caller_id_headroom", "Calls a pool's active caller IDs may still present"
                                 " today", labels=["pool"])
    for pool in pools:
        for state in ("active", "at_cap", "flagged", "retired"):
            numbers.add_metric([pool["pool"], state], pool[state])
        headroom.add_metric([pool["pool"]], pool["headroom_today"])
    yield numbers
    yield headroom


def compliance_gauges(report):
    """The do-not-call list's size and the leads each rule holds back now."""
    yield GaugeMetricFamily("dialerapi_dnc_numbers", "Phone numbers on the do-not-call list",
                            value=report["do_not_call"]["numbers"])
    held = GaugeMetricFamily("dialerapi_leads_held", "Unreserved leads in claim states that a rule holds back now",
                             labels=["rule"])
    held.add_metric(["do_not_call"], report["do_not_call"]["leads_held"])
    held.add_metric(["outside_calling_window"], report["calling_window"]["leads_outside"])
    for reason, count in report["calling_rules"]["leads_held"].items():  # Each calling rule's reason
        held.add_metric([reason], count)
    yield held


def abandon_gauge(form_types):
    """Each form_type's abandon rate per window, as POST /engine/floor answers it (the
    form_types some agent has: bounded by the floor, not by what a push may name)."""
    rate = GaugeMetricFamily("dialerapi_abandon_rate", "Abandoned share of live answers (rules.compliance.abandons), per"
                             " form_type and window (15m, today, period)", labels=["form_type", "window"])
    for group in form_types:
        for window, figures in group["abandons"]["windows"].items():
            rate.add_metric([group["form_type"], window], figures["rate"])
    return rate


def webhook_metrics(report):
    """Per webhook endpoint id: attempts by result (delivered, failed_status, error, gone; counted
    in the database, so every host shows the floor's), and the oldest undelivered event's age."""
    attempts = CounterMetricFamily("dialerapi_webhook_deliveries", "Webhook delivery attempts by endpoint and result",
                                   labels=["endpoint", "result"])
    oldest = GaugeMetricFamily("dialerapi_webhook_oldest_undelivered_seconds",
                               "Age of the oldest event not yet delivered to an enabled endpoint (0: none waits)",
                               labels=["endpoint"])
    failing = GaugeMetricFamily("dialerapi_webhook_endpoint_failing",
                                "1 while an endpoint is failing (an event was given up; cleared by its next 2xx)",
                                labels=["endpoint"])
    for row in report:
        endpoint = str(row["id"])
        for result, count in row["results"].items():
            attempts.add_metric([endpoint, result], count)
        oldest.add_metric([endpoint], row["oldest_undelivered_seconds"] or 0)
        failing.add_metric([endpoint], 1 if row["failing_since"] else 0)
    return attempts, oldest, failing


def socket_gauges(report):
    """The agent sockets of each live host: open, capacity left, and refused since its
    gunicorn started (a counter that restarts with it)."""
    open_sockets = GaugeMetricFamily("dialerapi_agent_sockets_open", "Open agent sockets (/ws) per host",
                                     labels=["host"])
    left = GaugeMetricFamily("dialerapi_agent_sockets_left", "Agent sockets a host can still take (WS_MAX_SOCKETS"
                             " less the open ones)", labels=["host"])
    refused = CounterMetricFamily("dialerapi_agent_sockets_refused", "Agent sockets refused at capacity (close 1013)",
                                  labels=["host"])
    for host in report["hosts"]:
        open_sockets.add_metric([host["host"]], host["open"])
        left.add_metric([host["host"]], host["left"])
        refused.add_metric([host["host"]], host["refused"])
    return open_sockets, left, refused


def exposition(database_url, tz):
    """The /metrics body in the Prometheus text format: process samples plus database gauges."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
    else:
        registry = REGISTRY
    gauges = CollectorRegistry()
    gauges.register(DatabaseGauges(database_url, tz))
    return generate_latest(registry) + generate_latest(gauges)
