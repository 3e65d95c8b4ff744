"""`dialerapi webhooks ...`: the CRM's webhook endpoints (docs/crm/results.md)."""

import json
import logging
import os
import signal
import threading
from datetime import timezone

import click
from flask import current_app

from dialerapi.cli.base import echo_json, main, service_tz
from dialerapi.plumbing import clock
from dialerapi.plumbing.db import get_db
from dialerapi.plumbing.webhook_http import Refused, Sender, resolve
from dialerapi.rules.events import lead_events, webhooks
from dialerapi.upkeep.keeper import die_with_parent
from dialerapi.upkeep.webhooks import Dispatcher, utc_now

log = logging.getLogger(__name__)

TEST_TYPE = "webhook.test"
# Where the kernel refuses SCHED_IDLE (some containers), the dispatcher runs at this niceness.
DISPATCH_NICENESS = 19


@main.group("webhooks")
def webhooks_group():
    """Endpoints that get every lead event as a signed webhook (Standard Webhooks).

    Events, in order per lead, at least once: lead.call_ended, lead.disposed,
    lead.callback_applied, lead.callback_fell_back, lead.released, lead.do_not_call,
    lead.do_not_call_removed, lead.held, lead.hold_ended.
    """


def _guarded(url):
    try:
        webhooks.check_url(url)
        resolve(url, current_app.config["WEBHOOK_ALLOWED_HOSTS"])
    except webhooks.InvalidEndpoint as exc:
        raise click.ClickException(str(exc)) from None
    except Refused as exc:
        raise click.ClickException(f"refused: {exc}") from None
    except OSError as exc:
        raise click.ClickException(f"{url}: the host does not resolve ({exc})") from None


def _endpoint_work(work, endpoint_id, *args):
    try:
        return get_db().run(work, endpoint_id, *args)
    except webhooks.UnknownEndpoint:
        raise click.ClickException(f"no webhook endpoint {endpoint_id} (dialerapi webhooks list)") from None


@webhooks_group.command("add")
@click.argument("url")
@click.option("--events", default="*", show_default=True,
              help=f"Comma-separated event types ({', '.join(lead_events.TYPES)}) or * for all.")
def webhooks_add(url, events):
    """Send events from now on to URL; prints the endpoint's id and its signing secret (whsec_...)."""
    _guarded(url)
    try:
        added = get_db().run(webhooks.add_endpoint, url, events.split(","), utc_now())
    except webhooks.InvalidEndpoint as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(f"endpoint {added['id']}: {url}")
    click.echo(f"secret: {added['secret']}")
    click.echo("Give the secret to the receiver; it verifies webhook-signature with it.")


@webhooks_group.command("list")
@click.option("--json", "as_json", is_flag=True, help="As JSON.")
def webhooks_list(as_json):
    """Every endpoint: state, event types, oldest undelivered event's age and results so far."""
    report = get_db().run(webhooks.endpoint_report, utc_now())
    if as_json:
        echo_json(report)
        return
    for row in report:
        state = "enabled" if row["enabled"] else f"disabled ({row['disabled_reason']})"
        if row["failing_since"]:
            state += f", failing since {clock.format_utc(row['failing_since'])}"
        waiting = row["oldest_undelivered_seconds"]
        click.echo(f"{row['id']}  {row['url']}  [{state}]  events={row['event_types']}  "
                   f"oldest_undelivered={'-' if waiting is None else f'{waiting}s'}  "
                   + " ".join(f"{name}={count}" for name, count in row["results"].items()))


@webhooks_group.command("disable")
@click.argument("endpoint_id", type=int)
def webhooks_disable(endpoint_id):
    """Stop sending to an endpoint (its undelivered events wait; new ones pass it by)."""
    _endpoint_work(webhooks.set_enabled, endpoint_id, False, "operator")
    click.echo(f"endpoint {endpoint_id} disabled")


@webhooks_group.command("enable")
@click.argument("endpoint_id", type=int)
def webhooks_enable(endpoint_id):
    """Send to an endpoint again (after `disable` or a 410 Gone); `replay` sends what it missed."""
    _endpoint_work(webhooks.set_enabled, endpoint_id, True)
    click.echo(f"endpoint {endpoint_id} enabled")


@webhooks_group.command("remove")
@click.argument("endpoint_id", type=int)
def webhooks_remove(endpoint_id):
    """Remove an endpoint and its undelivered events (the feed keeps them)."""
    _endpoint_work(webhooks.remove_endpoint, endpoint_id)
    click.echo(f"endpoint {endpoint_id} removed")


@webhooks_group.command("rotate-secret")
@click.argument("endpoint_id", type=int)
def webhooks_rotate(endpoint_id):
    """A new signing secret; for 24 hours each webhook carries a signature by the old one too."""
    secret = _endpoint_work(webhooks.rotate_secret, endpoint_id, utc_now())
    click.echo(f"secret: {secret}")


@webhooks_group.command("test")
@click.argument("endpoint_id", type=int)
def webhooks_test(endpoint_id):
    """Send one signed `webhook.test` event to the endpoint now and print what it answered."""
    endpoint = _endpoint_work(webhooks.lock_endpoint, endpoint_id)
    now = utc_now()
    msg_id = f"{lead_events.EVENT_PREFIX}test_{int(now.replace(tzinfo=timezone.utc).timestamp())}"
    body = json.dumps({"id": msg_id, "type": TEST_TYPE, "occurred_at": clock.format_utc(now),
                       "occurred_at_local": clock.format_wall_clock(clock.wall(now.replace(tzinfo=timezone.utc),
                                                                               service_tz())),
                       "oli_id": None, "data_id": None, "data": {}}, separators=(",", ":"))
    sender = Sender(current_app.config["WEBHOOK_ALLOWED_HOSTS"])
    try:
        attempt = sender.send(endpoint["url"], webhooks.signing_secrets(endpoint, now), msg_id, body)
    finally:
        sender.close()
    click.echo(f"status={attempt['status']} latency_ms={attempt['latency_ms']}"
               + (f" error={attempt['error']}" if attempt["error"] else "")
               + f" response={attempt['response_head']!r}")
    if attempt["status"] is None or not 200 <= attempt["status"] < 300:
        raise SystemExit(1)


@webhooks_group.command("replay")
@click.option("--endpoint", "endpoint_id", type=int, required=True, help="The endpoint's id.")
@click.option("--since", required=True,
              help="From this moment: 'YYYY-MM-DD HH:MM[:SS]' in DB_TIMEZONE, or ISO 8601 with an offset.")
def webhooks_replay(endpoint_id, since):
    """Send an endpoint again every event it takes since a moment, in order per lead."""
    try:
        moment = clock.parse_wall_clock(since, service_tz())
    except ValueError as exc:
        raise click.ClickException(f"--since {since!r}: {exc}") from None
    since_utc = clock.to_utc(moment, service_tz())
    total, after = 0, 0
    while after is not None:
        made, after = _endpoint_work(webhooks.replay, endpoint_id, since_utc, utc_now(), after)
        total += made
    click.echo(f"queued {total} events again for endpoint {endpoint_id}")


@webhooks_group.command("log")
@click.argument("endpoint_id", type=int)
@click.option("--limit", type=click.IntRange(1, 1000), default=50, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="As JSON.")
def webhooks_log(endpoint_id, limit, as_json):
    """The endpoint's latest attempts: time (UTC), event, status, latency and the answer's first bytes."""
    rows = get_db().run(lambda conn: list(webhooks.attempts_log(conn, endpoint_id, limit)))
    if as_json:
        echo_json([{**row, "attempted_at": clock.format_utc(row["attempted_at"])} for row in rows])
        return
    for row in rows:
        click.echo(f"{clock.format_utc(row['attempted_at'])}  {lead_events.EVENT_PREFIX}{row['event_id']}  "
                   f"{row['type'] or '-'}  status={row['status'] or '-'}  {row['latency_ms']}ms  "
                   + (f"error={row['error']}  " if row["error"] else "") + repr(row["response_head"] or ""))


@webhooks_group.command("dispatch")
def webhooks_dispatch():
    """Send the floor's webhooks until SIGTERM or Ctrl-C: this host's dispatcher.

    The HTTP pool's gunicorn starts one per host when JOBS_ENABLED (deploy/gunicorn.conf.py); of all
    the hosts' dispatchers one holds the sending lease at a time and the others stand by. Run it
    yourself only where no gunicorn runs with jobs on.
    """
    die_with_parent()
    background()
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    log.info("webhook dispatcher started")
    Dispatcher(current_app._get_current_object()).run(stop)


def background():
    """Make this process (and the threads it starts after) background work: SCHED_IDLE, so a request
    worker or the database that wakes up takes the core from it at once, and sending never slows a
    push, a claim or a settle; an idle core is still used. At nice 10 it cost settle
    1.26x p99 with a healthy endpoint taking 100 events a second: the kernel (EEVDF) lets a niced
    task finish its slice before a woken one runs (docs/performance.md)."""
    try:
        # Per thread in Linux: every thread started so far (the app's), and new ones inherit it.
        for task in os.listdir("/proc/self/task"):
            os.sched_setscheduler(int(task), os.SCHED_IDLE, os.sched_param(0))
    except OSError:
        log.warning("SCHED_IDLE refused: the webhook dispatcher runs at nice %d", DISPATCH_NICENESS)
        os.nice(DISPATCH_NICENESS)
