"""Health probes (decisions.md D8).

/healthz answers from `HealthState`, which background jobs refresh (database every 5 s, AMI every
10 s), so it never waits on a dead database or AMI. /health and /api/health add a live database
check with a 2 s timeout, the cached AMI result, metrics and the last warning or error log lines.
"""

import collections
import logging
import threading
import time
from urllib.parse import urlsplit

import pymysql

from dialerapi.plumbing import ami, clock, release, socket_slots
from dialerapi.plumbing.clock import format_utc
from dialerapi.plumbing.db import connect, queries
from dialerapi.rules.caller_ids import pools as caller_id_pools
from dialerapi.rules.campaigns import operations
from dialerapi.rules.compliance import calling_rules, claim_checks, do_not_call
from dialerapi.rules.config import dialer as dialer_config
from dialerapi.rules.events import webhooks
from dialerapi.rules.leads import dialstate
from dialerapi.upkeep import webhooks as dispatch

log = logging.getLogger(__name__)

DB_CHECK_SECONDS = 5
DB_CHECK_TIMEOUT = 2
AMI_CHECK_SECONDS = 10
LOG_LINES = 20


class RecentLogs(logging.Handler):
    """The last LOG_LINES warning or error lines of this process, for /health."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.lines = collections.deque(maxlen=LOG_LINES)
        self.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))

    def emit(self, record):
        # The first line only: a traceback stays in the real log, not in a health body.
        self.lines.append(self.format(record).splitlines()[0])


recent_logs = RecentLogs()


class HealthState:
    """The last result of each background check; read by /healthz, written by the jobs."""

    def __init__(self):
        self._lock = threading.Lock()
        self.started = time.monotonic()
        self.db = False
        self.db_error = "not checked yet"
        self.db_latency_ms = None
        self.ami = False
        self.ami_error = "not checked yet"
        self.ami_latency_ms = None
        self.requests = collections.Counter()

    def count_response(self, status):
        with self._lock:
            self.requests[f"{status // 100}xx"] += 1

    def record_ami(self, ok, latency_ms=None, error=None):
        with self._lock:
            if ok != self.ami:
                (log.info if ok else log.warning)("AMI %s", "answering" if ok else f"not answering: {error}")
            self.ami, self.ami_latency_ms, self.ami_error = ok, latency_ms, error

    def record_db(self, ok, latency_ms=None, error=None):
        with self._lock:
            if ok != self.db:
                (log.info if ok else log.warning)("database %s", "reachable" if ok else f"unreachable: {error}")
            self.db, self.db_latency_ms, self.db_error = ok, latency_ms, error

    def snapshot(self):
        """The /healthz body: {"ok": True, "ami": bool, "db": bool}."""
        with self._lock:
            return {"ok": True, "ami": self.ami, "db": self.db}


def check_database(app):
    """Connect to the first ready node of DATABASE_URL and run SELECT 1, each step bounded by 2 s;
    record the result on the app. A Galera node that is up but refuses work (wsrep_ready OFF: cut
    off from the cluster, or still joining) does not count (docs/operations/galera.md "Scale out")."""
    state = app.extensions["dialerapi.health"]
    started = time.monotonic()
    try:
        conn = connect(app.config["DATABASE_URL"], DB_CHECK_TIMEOUT, DB_CHECK_TIMEOUT)
        try:
            queries.ping(conn)
        finally:
            conn.close()
    except (pymysql.MySQLError, OSError) as exc:
        state.record_db(False, error=str(exc))
        return False
    state.record_db(True, latency_ms=round((time.monotonic() - started) * 1000, 2))
    return True


def check_ami(app):
    """Log in to AMI, ping and log off (timeout 1.5 s); record the result. False when AMI is not configured."""
    state = app.extensions["dialerapi.health"]
    config = app.config
    if not config["AMI_HOST"]:
        state.record_ami(False, error="not configured (AMI_HOST is empty)")
        return False
    try:
        latency = ami.ping(config["AMI_HOST"], config["AMI_PORT"], config["AMI_USERNAME"], config["AMI_SECRET"])
    except ami.AmiError as exc:
        state.record_ami(False, error=str(exc))
        return False
    state.record_ami(True, latency_ms=latency)
    return True


def _metrics(conn, tz):
    sweep = queries.job_run(conn, name="sweep")
    now = clock.now(tz)
    reservations = dialstate.live_reservations(conn, now, tz)
    return {
        "pending_actions": {row["status"]: row["n"] for row in queries.pending_actions_by_status(conn)},
        "open_missed_activities": queries.count_open_missed_activities(conn),
        "blocked_agents": queries.count_blocked_agents(conn),
        # A reservation older than RESERVATION_LEASE_SECONDS is released by the next sweep; one
        # without reserved_at (reserved in SQL by an engine) never is (docs/engine/api.md, "Reservation lease").
        "live_reservations": reservations["live"],
        "unleased_reservations": reservations["unleased"],
        "oldest_reservation_seconds": reservations["oldest_seconds"],
        "last_sweep_at": format_utc(sweep["last_started_at"], tz) if sweep else None,
        "last_sweep_result": sweep["last_result"] if sweep else None,
        "agent_sockets": socket_slots.hosts_report(conn, now, tz),
        **compliance_report(conn, now, tz),
        "webhooks": webhooks_report(conn),
        "caller_ids": caller_ids_report(conn, now),
    }


def caller_ids_report(conn, now):
    """Caller IDs: {pools: rules.caller_ids.pools.report for every form_type the floor knows}."""
    config = dialer_config.load_config(conn)
    return {"pools": caller_id_pools.report(conn, now, config, operations.form_types(conn, config))}


def webhooks_check(conn, config, report=None):
    """Whether the floor's webhooks are leaving. {ok, endpoints (enabled), dispatcher:
    {running (a dispatcher holds the sending lease now), holder (hostname:pid), lease_until (ISO 8601
    UTC)}, oldest_undelivered_seconds (of the enabled endpoints that are not failing: a failing
    endpoint's backlog is its receiver's, under metrics.webhooks.failing), limit_seconds
    (WEBHOOK_BACKLOG_ALERT_SECONDS), error (why not ok, or None)}. Ok when no endpoint is enabled."""
    now = clock.utcnow().replace(tzinfo=None)
    report = webhooks.endpoint_report(conn, now) if report is None else report
    lease = queries.lease(conn, name=dispatch.LEASE_NAME)
    running = bool(lease and lease["lease_until"] and lease["lease_until"] > now)
    enabled = [row for row in report if row["enabled"]]
    waits = [row["oldest_undelivered_seconds"] for row in enabled
             if row["oldest_undelivered_seconds"] is not None and not row["failing_since"]]
    oldest = max(waits) if waits else None
    limit = config["WEBHOOK_BACKLOG_ALERT_SECONDS"]
    error = None
    if enabled and not running:
        error = "no webhook dispatcher holds the sending lease: none is running on any host with JOBS_ENABLED"
    elif enabled and oldest is not None and oldest > limit:
        error = f"an event has waited {oldest} s for its webhook (WEBHOOK_BACKLOG_ALERT_SECONDS is {limit})"
    return {"ok": error is None, "endpoints": len(enabled),
            "dispatcher": {"running": running, "holder": lease["run_by"] if lease else None,
                           "lease_until": format_utc(lease["lease_until"]) if lease and lease["lease_until"] else None},
            "oldest_undelivered_seconds": oldest, "limit_seconds": limit, "error": error}


def webhooks_report(conn):
    """Webhooks: {endpoints (how many), enabled, failing: [{id, host, failing_since (ISO 8601 UTC)}],
    disabled: [{id, host, reason}], oldest_undelivered_seconds (the most of any enabled endpoint,
    None when nothing waits)}. Hosts only: a URL's path or query may hold a receiver's token."""
    report = webhooks.endpoint_report(conn, clock.utcnow().replace(tzinfo=None))
    waits = [row["oldest_undelivered_seconds"] for row in report if row["oldest_undelivered_seconds"] is not None]
    return {
        "endpoints": len(report), "enabled": sum(row["enabled"] for row in report),
        "failing": [{"id": row["id"], "host": urlsplit(row["url"]).hostname,
                     "failing_since": format_utc(row["failing_since"])} for row in report if row["failing_since"]],
        "disabled": [{"id": row["id"], "host": urlsplit(row["url"]).hostname, "reason": row["disabled_reason"]}
                     for row in report if not row["enabled"]],
        "oldest_undelivered_seconds": max(waits) if waits else None,
    }


def compliance_report(conn, now, tz):
    """Compliance: {"do_not_call": {numbers listed, leads held}, "calling_window": {obeyed, window,
    leads outside it now}}; "calling_rules": {enabled (the table's rows on),
    restrictions_active [{id, region, note}], leads_held {reason: n}, by_form_type {form_type:
    {reason: n}} (do_not_call and outside_calling_window too)}; leads are those
    claim_checks.held_leads counts."""
    config = dialer_config.load_config(conn)
    held = claim_checks.held_leads(conn, now, tz, config)
    window = f"{config.calling_window_start:%H:%M}-{config.calling_window_end:%H:%M}"
    return {
        "do_not_call": {"numbers": do_not_call.count(conn), "leads_held": held[claim_checks.DO_NOT_CALL]},
        "calling_window": {"obeyed": config.obey_calling_window, "window": window,
                           "leads_outside": held[claim_checks.OUTSIDE_CALLING_WINDOW]},
        "calling_rules": {
            "enabled": list(config.calling_rules),
            "restrictions_active": [{"id": r.id, "region": r.region, "note": r.note} for r in config.restrictions
                                    if r.active(clock.to_utc(now, tz))],
            "leads_held": {reason: held[reason] for reason in calling_rules.REASONS},
            "by_form_type": held["by_form_type"]},
    }


def _node(conn):
    """The node a connection is on, "host:port", and its Galera cluster's state (None off Galera)."""
    state = queries.node_state(conn)
    cluster = None
    if state["wsrep_on"]:
        cluster = {"wsrep_cluster_size": int(state["wsrep_cluster_size"] or 0),
                   "wsrep_local_state_comment": state["wsrep_local_state_comment"],
                   "wsrep_ready": state["wsrep_ready"] == "ON"}
    host = f"[{conn.host}]" if ":" in conn.host else conn.host
    return {"node": f"{host}:{conn.port}", "cluster": cluster}


def report(app):
    """The /health body and status (D8): 200 when the database answers now, when AMI is configured
    the last AMI check passed, the webhooks are leaving (webhooks_check), every socket host's
    fan-out keeps up (socket_slots.fanout_check), every campaign's caller-ID pool has an active
    number, and the database has every migration this release expects (all newer than D8:
    docs/operations/health.md); otherwise 503.

    Body: {ok, status (healthy|unhealthy), checks: {db: {ok, host (DATABASE_URL's first node), node
    (the "host:port" answering now, the first ready node), cluster (null off Galera, else
    wsrep_cluster_size, wsrep_local_state_comment, wsrep_ready), latency_ms, error}, ami: {ok,
    configured, host, latency_ms, error}, webhooks: webhooks_check, agent_sockets: fanout_check}, metrics: {uptime_seconds, requests (by status class),
    pending_actions (by status), open_missed_activities, blocked_agents, last_sweep_at (ISO 8601
    UTC), last_sweep_result, agent_sockets (socket_slots.hosts_report: open sockets, capacity left
    and refusals per host), do_not_call and calling_window (compliance_report),
    webhooks (webhooks_report)}, logs (last 20 warning/error lines of this process), version (this
    release's, plumbing.release), schema (release.schema: {applied, expected, pending, current};
    pending and current null when the database did not answer)}. Never a password or the secret.
    """
    state = app.extensions["dialerapi.health"]
    config = app.config
    metrics = {}
    node = {"node": None, "cluster": None}
    hooks = {"ok": True, "error": "not checked: the database did not answer"}
    fanout = {"ok": True, "error": "not checked: the database did not answer"}
    caller_ids = {"ok": True, "empty": [], "low": [], "error": "not checked: the database did not answer"}
    schema = {"applied": None, "expected": release.migrations()[-1], "pending": None, "current": None}
    started = time.monotonic()
    try:
        conn = connect(config["DATABASE_URL"], DB_CHECK_TIMEOUT, DB_CHECK_TIMEOUT)
        try:
            node = _node(conn)
            schema = release.schema(conn)
            metrics = _metrics(conn, config["DB_TIMEZONE"])
            hooks = webhooks_check(conn, config)
            fanout = socket_slots.fanout_check(metrics["agent_sockets"], config["SOCKET_FANOUT_ALERT_SECONDS"])
            caller_ids = caller_id_pools.check(metrics["caller_ids"]["pools"])
        finally:
            conn.close()
        state.record_db(True, latency_ms=round((time.monotonic() - started) * 1000, 2))
    except (pymysql.MySQLError, OSError) as exc:
        state.record_db(False, error=str(exc))
    ami_configured = bool(config["AMI_HOST"])
    healthy = (state.db and (state.ami or not ami_configured) and hooks["ok"] and fanout["ok"] and caller_ids["ok"]
               and schema["current"] is not False)
    with state._lock:
        body = {
            "ok": healthy,
            "status": "healthy" if healthy else "unhealthy",
            "checks": {
                "db": {"ok": state.db, "host": app.extensions["dialerapi.db"].host, **node,
                       "latency_ms": state.db_latency_ms, "error": state.db_error},
                "ami": {"ok": state.ami, "configured": ami_configured, "host": config["AMI_HOST"] or None,
                        "latency_ms": state.ami_latency_ms, "error": state.ami_error},
                "webhooks": hooks,
                "agent_sockets": fanout,
                "caller_ids": caller_ids,
            },
            "metrics": {"uptime_seconds": round(time.monotonic() - state.started), "requests": dict(state.requests),
                        **metrics},
            "logs": list(recent_logs.lines),
            "version": release.VERSION,
            "schema": schema,
        }
    return body, 200 if healthy else 503
