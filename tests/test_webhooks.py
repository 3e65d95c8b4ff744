"""Webhooks (issue #48): every lead event delivered to each endpoint that takes it, signed as
Standard Webhooks says, at least once, in order per lead, retried with backoff for
WEBHOOK_RETRY_HOURS, a 410 disabling the endpoint, never to an inside address unless allowed, and
by one sender at a time across processes.

The dispatcher is stepped by hand (upkeep.webhooks.Dispatcher.step) with the service clock moved
by the test (decisions.md D2); its HTTP goes to real servers on loopback. Built on the events of
tests/test_lead_results.py (lead-intake-api.md "States and transitions"; decisions.md D6)."""

import json
import os
import queue
import subprocess
import sys
import threading
from datetime import timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import requests
from standardwebhooks.webhooks import Webhook
from test_busy_floor import at_once

import faketime
from conftest import (
    DEFAULT_NOW,
    ENGINE_SECRET,
    MONITOR_SECRET,
    ROOT,
    SECRET,
    TZ,
    aware,
    cli,
    free_port,
    make_app,
    release_version,
    start_gunicorn,
    start_nginx,
)
from dialerapi.plumbing import clock
from dialerapi.plumbing.db import get_db
from dialerapi.plumbing.webhook_http import HEAD_BYTES, Refused, Sender, resolve
from dialerapi.rules.events import webhooks
from dialerapi.rules.leads import dialstate
from dialerapi.upkeep import webhooks as dispatch

NOW = DEFAULT_NOW


@pytest.fixture(autouse=True)
def fixed_now(frozen_clock):
    frozen_clock(NOW)


@pytest.fixture(scope="module")
def hooks_app(database_url):
    """The app with loopback receivers allowed (WEBHOOK_ALLOWED_HOSTS=127.0.0.1)."""
    return make_app(database_url, WEBHOOK_ALLOWED_HOSTS="127.0.0.1")


class Backlogged(ThreadingHTTPServer):
    """With Python's default listen backlog of 5, a dispatcher's burst of connects on a loaded machine
    is partly reset, and a reset attempt is retried hours later on the frozen clock (as in
    examples/webhook_receiver.py)."""

    request_queue_size = 128


class Receiver:
    """An HTTP server on loopback that records every request and answers with `answer(request)`
    ((status, body, headers)); `arrived` gets each request as it comes."""

    def __init__(self, answer=None):
        self.requests = []
        self.arrived = queue.Queue()
        self.answer = answer or (lambda request: (200, b"ok", {}))
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                request = {"path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()},
                           "body": body.decode(), "event": json.loads(body)}
                receiver.requests.append(request)
                receiver.arrived.put(request)
                status, data, headers = receiver.answer(request)
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = Backlogged(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/hooks"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def ids(self):
        return [r["headers"]["webhook-id"] for r in self.requests]

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver():
    made = []

    def make(answer=None):
        made.append(Receiver(answer))
        return made[-1]

    yield make
    for server in made:
        server.close()


@pytest.fixture
def dispatcher(hooks_app):
    made = []

    def make(by="host-a:1", **kwargs):
        made.append(dispatch.Dispatcher(hooks_app, by=by, **kwargs))
        return made[-1]

    yield make
    for one in made:
        one.pool.shutdown(wait=True)
        one.sender.close()


def until_quiet(dispatcher, rounds=200):
    """Step until nothing is in flight and a round does nothing; a send is waited for, not slept on."""
    for _ in range(rounds):
        busy = dispatcher.step()
        if dispatcher.in_flight:
            dispatcher.wait_results(15)
        elif not busy:
            return
    raise AssertionError("the dispatcher never went quiet")


@pytest.fixture
def endpoint(hooks_app):
    def add(url, types=("*",)):
        with hooks_app.app_context():
            return get_db().run(webhooks.add_endpoint, url, list(types), dispatch.utc_now())

    return add


@pytest.fixture
def settle(hooks_app, new_lead, make_live, sql):
    """Play one call of a lead to its settle (pushing the lead first if new): one lead.call_ended."""
    sql("INSERT IGNORE INTO sales_agents (id, extension, name) VALUES (501, '4501', 'Kavya')")

    def play(oli_id, outcome="busy"):
        if not sql("SELECT id FROM sales_master WHERE oli_id = %s", oli_id):
            new_lead(oli_id)
        make_live(oli_id)
        with hooks_app.app_context():
            get_db().run(dialstate.settle, oli_id, outcome, clock.now(TZ), tz=TZ, grace_minutes=10,
                         release_retry_ms=60000)

    return play


def move_clock(frozen_clock, **delta):
    frozen_clock(clock.utcnow() + timedelta(**delta))


def test_an_event_is_delivered_signed_and_the_standard_webhooks_verifier_accepts_it(
        receiver, endpoint, settle, dispatcher, tmp_path, client, auth):
    """The docs' receiver (examples/webhook_receiver.py) verifies with standardwebhooks' own
    Webhook.verify, under a clock at the service's moment, and stores what it accepted."""
    url = f"http://127.0.0.1:{free_port()}/"
    added = endpoint(url)
    out = tmp_path / "events.jsonl"
    environment = faketime.environment({**os.environ, "WEBHOOK_SECRET": added["secret"]}, at=aware(NOW))
    process = subprocess.Popen([sys.executable, str(ROOT / "examples" / "webhook_receiver.py"), "--port",
                                url.split(":")[2].rstrip("/"), "--out", str(out)], env=environment,
                               stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout.readline().split()[-1] == url
        settle("OLI-1")
        until_quiet(dispatcher())
        stored = [json.loads(line) for line in out.read_text().splitlines()]
        feed = client.get("/api/lead-events", headers=auth).get_json()["events"]
        assert [s["event"] for s in stored] == feed and len(feed) == 1
        assert stored[0]["webhook_id"] == feed[0]["id"]
        # A forged signature is refused by the same receiver.
        body = json.dumps(feed[0])
        forged = requests.post(url, data=body, headers={
            "webhook-id": feed[0]["id"], "webhook-timestamp": str(int(clock.utcnow().timestamp())),
            "webhook-signature": Webhook("whsec_" + "A" * 32).sign(feed[0]["id"], clock.utcnow(), body)}, timeout=5)
        assert forged.status_code == 401
    finally:
        process.terminate()
        process.wait(10)


def test_the_headers_follow_standard_webhooks(receiver, endpoint, settle, dispatcher):
    hook = receiver()
    added = endpoint(hook.url)
    settle("OLI-1")
    until_quiet(dispatcher())
    [request] = hook.requests
    headers = request["headers"]
    assert headers["webhook-id"] == request["event"]["id"]
    assert headers["webhook-timestamp"] == str(int(aware(NOW).timestamp()))
    assert headers["content-type"] == "application/json"
    assert headers["user-agent"] == f"dialerapi/{release_version()} (webhooks)"
    sent_at = clock.utcnow().replace(microsecond=0)
    assert headers["webhook-signature"] == Webhook(added["secret"]).sign(headers["webhook-id"], sent_at, request["body"])


def test_a_lead_waits_for_its_earlier_event_while_other_leads_go_on(receiver, endpoint, settle, dispatcher,
                                                                    frozen_clock, sql):
    failures = {"OLI-A": 1}

    def answer(request):
        oli_id = request["event"]["oli_id"]
        if failures.get(oli_id):
            failures[oli_id] -= 1
            return 500, b"try later", {}
        return 200, b"ok", {}

    hook = receiver(answer)
    endpoint(hook.url)
    settle("OLI-A")
    settle("OLI-A")
    settle("OLI-B")
    sender = dispatcher()
    until_quiet(sender)
    sent = [(r["event"]["oli_id"], r["headers"]["webhook-id"]) for r in hook.requests]
    assert sorted(oli for oli, _ in sent) == ["OLI-A", "OLI-B"]  # OLI-A's second waits for its first
    states = sql("SELECT d.state, e.oli_id FROM dialerapi_webhook_deliveries AS d"
                 " JOIN dialerapi_lead_events AS e ON e.id = d.event_id ORDER BY d.id")
    assert [(s["oli_id"], s["state"]) for s in states] == [("OLI-A", "ready"), ("OLI-A", "queued"),
                                                           ("OLI-B", "delivered")]
    move_clock(frozen_clock, seconds=webhooks.FIRST_RETRY_SECONDS)
    until_quiet(sender)
    a_ids = [r["headers"]["webhook-id"] for r in hook.requests if r["event"]["oli_id"] == "OLI-A"]
    assert a_ids[0] == a_ids[1] and a_ids[2] != a_ids[1]  # the retry carries the same id, then the next event
    assert int(a_ids[1][4:]) < int(a_ids[2][4:])
    assert {s["state"] for s in sql("SELECT state FROM dialerapi_webhook_deliveries")} == {"delivered"}


def test_failures_back_off_then_give_up_after_the_retry_hours_and_mark_the_endpoint_failing(
        receiver, endpoint, settle, dispatcher, frozen_clock, sql, client):
    healthy = {"on": False}
    hook = receiver(lambda request: (200, b"ok", {}) if healthy["on"] else (503, b"down", {}))
    added = endpoint(hook.url)
    settle("OLI-1")
    sender = dispatcher()
    waits = []
    for _ in range(100):
        until_quiet(sender)
        row = sql.one("SELECT state, next_attempt_at, attempts FROM dialerapi_webhook_deliveries")
        if row["state"] != "ready":
            break
        now = clock.utcnow().replace(tzinfo=None)
        waits.append((row["next_attempt_at"] - now).total_seconds())
        frozen_clock(aware(row["next_attempt_at"], timezone.utc))
    assert row["state"] == "failed"
    assert waits[0] <= webhooks.FIRST_RETRY_SECONDS and max(waits) <= webhooks.RETRY_CAP_SECONDS
    assert waits[5] > waits[0] * 4  # exponential
    assert clock.utcnow() - aware(NOW) >= timedelta(hours=24)
    endpoint_row = sql.one("SELECT failing_since FROM dialerapi_webhook_endpoints")
    assert endpoint_row["failing_since"] is not None
    health = client.get("/health", headers={"Authorization": f"Bearer {MONITOR_SECRET}"}).get_json()
    assert health["metrics"]["webhooks"]["failing"][0]["id"] == added["id"]
    # The event stays in the feed; the next 2xx clears the failing mark.
    healthy["on"] = True
    settle("OLI-2")
    until_quiet(sender)
    assert sql.one("SELECT failing_since FROM dialerapi_webhook_endpoints")["failing_since"] is None
    metrics = client.get("/metrics", headers={"Authorization": f"Bearer {MONITOR_SECRET}"}).get_data(as_text=True)
    assert f'dialerapi_webhook_deliveries_total{{endpoint="{added["id"]}",result="delivered"}} 1.0' in metrics
    assert f'dialerapi_webhook_deliveries_total{{endpoint="{added["id"]}",result="failed_status"}} {len(waits) + 1}.0' \
        in metrics


def test_gone_disables_the_endpoint(receiver, endpoint, settle, dispatcher, sql, frozen_clock):
    hook = receiver(lambda request: (410, b"gone", {}))
    endpoint(hook.url)
    settle("OLI-1")
    settle("OLI-2")
    sender = dispatcher()
    until_quiet(sender)
    assert sql.one("SELECT enabled, disabled_reason FROM dialerapi_webhook_endpoints") == {
        "enabled": 0, "disabled_reason": "gone (410)"}
    sent = len(hook.requests)
    move_clock(frozen_clock, hours=1)
    settle("OLI-3")
    until_quiet(sender)
    assert len(hook.requests) == sent <= 2


def test_redirects_are_not_followed(receiver, endpoint, settle, dispatcher, sql):
    target = receiver()
    hook = receiver(lambda request: (307, b"", {"location": target.url}))
    endpoint(hook.url)
    settle("OLI-1")
    until_quiet(dispatcher())
    assert len(hook.requests) == 1 and target.requests == []
    assert sql.one("SELECT state, attempts FROM dialerapi_webhook_deliveries") == {"state": "ready", "attempts": 1}
    assert sql.one("SELECT status FROM dialerapi_webhook_attempts")["status"] == 307


def test_a_slow_endpoint_does_not_hold_up_another_and_a_long_answer_is_cut(receiver, endpoint, settle, dispatcher,
                                                                          sql):
    release = threading.Event()
    slow = receiver(lambda request: (release.wait(30), (200, b"late", {}))[1])
    chatty = receiver(lambda request: (200, b"x" * 5_000_000, {}))
    endpoint(slow.url)
    endpoint(chatty.url)
    settle("OLI-1")
    sender = dispatcher()
    for _ in range(100):
        sender.step()
        if sql("SELECT * FROM dialerapi_webhook_deliveries WHERE state = 'delivered'"):
            break
        sender.wait_results(5)
    delivered = sql.one("SELECT endpoint_id FROM dialerapi_webhook_deliveries WHERE state = 'delivered'")
    assert slow.requests and delivered["endpoint_id"] != sql("SELECT id FROM dialerapi_webhook_endpoints"
                                                             " ORDER BY id")[0]["id"]
    head = sql.one("SELECT response_head FROM dialerapi_webhook_attempts")["response_head"]
    assert head == "x" * HEAD_BYTES
    release.set()
    until_quiet(sender)
    assert len(sql("SELECT * FROM dialerapi_webhook_deliveries WHERE state = 'delivered'")) == 2


def test_hanging_endpoints_get_an_equal_share_of_the_places_and_nothing_is_held_unsent(receiver, endpoint, settle,
                                                                                      dispatcher, sql):
    """Issue #64 item 2: three endpoints that never answer, registered first, hold three shares of
    the sender's places; the good one registered after them gets its share in the first round and
    again as soon as its sends finish, and no delivery is held without being sent (the old take held
    the good one's behind the bad ones' for HOLD_SECONDS)."""
    release = threading.Event()
    try:
        hanging = [receiver(lambda request: (release.wait(30), (200, b"late", {}))[1]) for _ in range(3)]
        good = receiver()
        bad_ids = [endpoint(one.url)["id"] for one in hanging]
        good_id = endpoint(good.url)["id"]
        for n in range(12):
            settle(f"OLI-{n}")
        sender = dispatcher(senders=8, per_endpoint=6)

        def in_flight():
            return {endpoint_id: list(sender.in_flight.values()).count(endpoint_id) for endpoint_id in bad_ids + [good_id]}

        def held_unsent():
            held = sql("SELECT id FROM dialerapi_webhook_deliveries WHERE state = 'ready' AND attempts = 0"
                       " AND next_attempt_at > %s", dispatch.utc_now())
            return {row["id"] for row in held} - set(sender.in_flight)

        sender.step()
        assert in_flight() == dict.fromkeys(bad_ids + [good_id], 2)
        assert held_unsent() == set()
        for round_ in range(2, 5):
            goods = {delivery_id for delivery_id, endpoint_id in sender.in_flight.items() if endpoint_id == good_id}
            while not goods <= {delivery_id for delivery_id, _ in sender.finished}:  # the others hang
                sender.finished.append(sender.results.get(timeout=15))
            assert len(good.requests) == 2 * (round_ - 1)
            sender.step()
            assert in_flight() == dict.fromkeys(bad_ids + [good_id], 2), "the good one's share, again"
            assert held_unsent() == set()
    finally:
        release.set()


def test_an_endpoint_failing_in_a_row_gets_one_send_at_a_time_until_one_is_delivered(receiver, endpoint, settle,
                                                                                      dispatcher):
    """Issue #64 item 2: an endpoint whose last FAILING_STREAK attempts failed (here a 500) keeps one
    send in flight, not its share, so its retries do not cost every other endpoint the dispatcher's
    CPU; its first delivery gives its share back."""
    answer = {"status": 500}
    failing = receiver(lambda request: (answer["status"], b"no", {}))
    good = receiver()
    failing_id = endpoint(failing.url)["id"]
    good_id = endpoint(good.url)["id"]
    for n in range(16):
        settle(f"OLI-{n}")
    sender = dispatcher(senders=8, per_endpoint=6)

    def in_flight(endpoint_id):
        return list(sender.in_flight.values()).count(endpoint_id)

    def finish_all():
        while sender.in_flight.keys() - {delivery_id for delivery_id, _ in sender.finished}:
            sender.finished.append(sender.results.get(timeout=15))

    sender.step()
    assert in_flight(failing_id) == in_flight(good_id) == 4 == dispatch.FAILING_STREAK
    finish_all()
    sender.step()
    assert (in_flight(failing_id), in_flight(good_id)) == (1, 6), "one for the failing endpoint, not its share"
    finish_all()
    sender.step()
    assert in_flight(failing_id) == 1
    answer["status"] = 204
    finish_all()
    sender.step()
    assert in_flight(failing_id) > 1, "a delivery gives the share back"
    assert len(failing.requests) == 4 + 1 + 1


@pytest.mark.long
def test_inside_addresses_are_refused_unless_named(hooks_app, database_url, sql):
    for url in ("http://10.1.2.3/hook", "http://169.254.169.254/latest/meta-data/", "http://[::1]:8080/x",
                "http://192.168.0.10/", "http://0.0.0.0/", "http://[::ffff:127.0.0.1]/"):
        with pytest.raises(Refused):
            resolve(url, frozenset())
        result = cli(database_url, "webhooks", "add", url)
        assert result.returncode != 0 and "refused" in result.stderr, (url, result.stderr)
    assert resolve("http://127.0.0.1:9/x", frozenset({"127.0.0.1"})) == ["127.0.0.1"]
    assert sql("SELECT * FROM dialerapi_webhook_endpoints") == []
    for url in ("ftp://crm.example.com/", "not a url", "http:///nohost"):
        result = cli(database_url, "webhooks", "add", url)
        assert result.returncode != 0 and "http:// or https://" in result.stderr
    # Checked again at each send, on the addresses resolved then: the sender refuses without sending.
    attempt = Sender(frozenset()).send("http://127.0.0.1:9/x", ["whsec_" + "A" * 32], "evt_1", "{}")
    assert attempt["status"] is None and attempt["error"].startswith("refused")


@pytest.mark.slow
@pytest.mark.parametrize("allowed, url, sent", [
    ("127.0.0.1:8443", "http://127.0.0.1:8443/hooks", True),
    ("127.0.0.1:8443", "http://127.0.0.1:3306/", False),
    ("127.0.0.1:80", "http://127.0.0.1/hooks", True),
    ("127.0.0.1", "http://127.0.0.1:3306/", True),
    ("[::1]:8443", "http://[::1]:8443/hooks", True),
    ("[::1]:8443", "http://[::1]:8000/engine/claim", False),
    ("localhost:8443, 10.0.0.7", "http://localhost:8443/", True),
])
def test_the_allow_list_names_a_receiver_by_host_and_port(allowed, url, sent):
    """Issue #64: allowing 127.0.0.1 for a receiver allowed MariaDB's and the service's own ports too;
    `host:port` allows that port only (a host alone still allows every port)."""
    from dialerapi.plumbing.config import ConfigError, _host_names

    allowed_hosts = _host_names("WEBHOOK_ALLOWED_HOSTS", allowed)
    if sent:
        assert resolve(url, allowed_hosts)
    else:
        with pytest.raises(Refused, match="WEBHOOK_ALLOWED_HOSTS"):
            resolve(url, allowed_hosts)
    for bad in ("127.0.0.1:0", "127.0.0.1:65536", "crm:http", "[::1]:x", "a/b:80"):
        with pytest.raises(ConfigError, match="WEBHOOK_ALLOWED_HOSTS"):
            _host_names("WEBHOOK_ALLOWED_HOSTS", bad)


def test_sixteen_dispatchers_at_once_send_each_event_once(receiver, endpoint, settle, dispatcher, sql):
    hook = receiver()
    endpoint(hook.url)
    for n in range(20):
        settle(f"OLI-{n}")
    senders = [dispatcher(by=f"host-{n}:1") for n in range(16)]
    holders = at_once(lambda one: (one.step(), one.holding)[1], senders)
    assert sum(holders) == 1
    holder = senders[holders.index(True)]
    until_quiet(holder)
    at_once(lambda one: one.step(), senders)
    failed = sql("SELECT delivery_id, status, error FROM dialerapi_webhook_attempts WHERE status IS NULL OR status <> 200")
    assert failed == []
    assert len(hook.requests) == 20 and len(set(hook.ids())) == 20
    assert {r["state"] for r in sql("SELECT state FROM dialerapi_webhook_deliveries")} == {"delivered"}


def test_a_killed_holder_is_replaced_and_its_sends_repeated_with_the_same_id(receiver, endpoint, settle, dispatcher,
                                                                            frozen_clock, sql):
    hook = receiver(lambda request: (200, b"ok", {}))
    endpoint(hook.url)
    settle("OLI-1")
    first = dispatcher(by="host-a:1")
    first.step()  # takes the lease and the delivery; then "dies" before storing the result
    hook.arrived.get(timeout=15)
    first.in_flight.clear()
    first.results = queue.Queue()
    second = dispatcher(by="host-b:1")
    second.step()
    assert not second.holding
    move_clock(frozen_clock, seconds=dispatch.LEASE_SECONDS + 1)
    second.step()
    assert second.holding and not second.in_flight  # the delivery is still held for the first sender's try
    move_clock(frozen_clock, seconds=dispatch.HOLD_SECONDS)
    until_quiet(second)
    assert len(hook.requests) == 2 and hook.ids()[0] == hook.ids()[1]
    assert sql.one("SELECT state FROM dialerapi_webhook_deliveries")["state"] == "delivered"


def test_an_endpoint_takes_only_its_event_types(receiver, endpoint, settle, dispatcher, run):
    calls = receiver()
    disposals = receiver()
    endpoint(calls.url, ["lead.call_ended"])
    endpoint(disposals.url, ["lead.disposed"])
    settle("OLI-1")
    until_quiet(dispatcher())
    assert [r["event"]["type"] for r in calls.requests] == ["lead.call_ended"] and disposals.requests == []


@pytest.mark.long
def test_the_operator_commands(receiver, database_url, settle, dispatcher, sql, frozen_clock):
    hook = receiver()
    env = {"WEBHOOK_ALLOWED_HOSTS": "127.0.0.1"}
    added = cli(database_url, "webhooks", "add", hook.url, "--events", "lead.call_ended,lead.disposed", **env)
    assert added.returncode == 0, added.stderr
    endpoint_id = int(added.stdout.split()[1].rstrip(":"))
    secret = added.stdout.split("secret: ")[1].split()[0]
    assert secret.startswith("whsec_")
    bad = cli(database_url, "webhooks", "add", hook.url, "--events", "lead.nope", **env)
    assert bad.returncode != 0 and "unknown event type 'lead.nope'" in bad.stderr
    tested = cli(database_url, "webhooks", "test", str(endpoint_id), **env)
    assert tested.returncode == 0 and "status=200" in tested.stdout, tested.stderr
    assert hook.requests[-1]["event"]["type"] == "webhook.test"
    rotated = cli(database_url, "webhooks", "rotate-secret", str(endpoint_id), **env)
    new_secret = rotated.stdout.split("secret: ")[1].split()[0]
    settle("OLI-1")
    until_quiet(dispatcher())
    request = hook.requests[-1]
    signatures = request["headers"]["webhook-signature"].split(" ")
    sent_at = clock.utcnow().replace(microsecond=0)
    assert signatures == [Webhook(key).sign(request["headers"]["webhook-id"], sent_at, request["body"])
                          for key in (new_secret, secret)]
    listed = cli(database_url, "webhooks", "list", "--json", **env)
    [row] = json.loads(listed.stdout)
    assert row["results"]["delivered"] == 1 and row["event_types"] == "lead.call_ended,lead.disposed"
    log = cli(database_url, "webhooks", "log", str(endpoint_id), **env)
    assert "status=200" in log.stdout and "lead.call_ended" in log.stdout
    replayed = cli(database_url, "webhooks", "replay", "--endpoint", str(endpoint_id), "--since", "2026-11-21 09:00",
                   **env)
    assert replayed.stdout.strip() == f"queued 1 events again for endpoint {endpoint_id}"
    until_quiet(dispatcher())
    assert hook.requests[-1]["headers"]["webhook-id"] == request["headers"]["webhook-id"]
    assert cli(database_url, "webhooks", "disable", str(endpoint_id), **env).returncode == 0
    settle("OLI-2")
    until_quiet(dispatcher())
    assert hook.requests[-1]["headers"]["webhook-id"] == request["headers"]["webhook-id"]
    assert cli(database_url, "webhooks", "remove", str(endpoint_id), **env).returncode == 0
    assert sql("SELECT * FROM dialerapi_webhook_endpoints") == [] == sql("SELECT * FROM dialerapi_webhook_deliveries")
    missing = cli(database_url, "webhooks", "disable", "999", **env)
    assert missing.returncode != 0 and "no webhook endpoint 999" in missing.stderr


@pytest.mark.slow
def test_the_results_through_gunicorn_and_nginx(database_url, tmp_path, receiver, new_lead, make_live, sql):
    """The shipped serving: nginx in front of gunicorn with jobs on. The CRM reads the lead (an oli_id
    with a slash, sent as %2F) and the feed through nginx, and the host's dispatcher delivers the
    settle's event to the receiver, from a process whose every thread is SCHED_IDLE, so a woken request
    worker takes the core from it at once."""
    hook = receiver()
    new_lead("CRM/7")
    make_live("CRM/7")
    server = start_gunicorn(database_url, tmp_path / "gunicorn.log", JOBS_ENABLED="true",
                            WEBHOOK_ALLOWED_HOSTS="127.0.0.1")
    nginx = start_nginx(server, tmp_path)
    try:
        added = cli(database_url, "webhooks", "add", hook.url, WEBHOOK_ALLOWED_HOSTS="127.0.0.1")
        assert added.returncode == 0, added.stderr
        base = f"http://127.0.0.1:{nginx.port}"
        settled = requests.post(base + "/engine/settle", headers={"X-API-Key": ENGINE_SECRET}, timeout=30,
                                json={"oli_id": "CRM/7", "outcome": "busy", "started_at": "2026-11-21 09:59:00"})
        assert settled.status_code == 200, settled.text
        lead = requests.get(base + "/api/leads/CRM%2F7", headers={"X-API-Key": SECRET}, timeout=30).json()
        assert lead["lead"]["oli_id"] == "CRM/7" and [c["outcome"] for c in lead["calls"]] == ["busy"]
        feed = requests.get(base + "/api/lead-events", headers={"X-API-Key": SECRET}, timeout=30).json()
        [event] = feed["events"]
        assert (event["type"], event["oli_id"], event["data"]["call_id"]) == ("lead.call_ended", "CRM/7",
                                                                              lead["calls"][0]["id"])
        delivered = hook.arrived.get(timeout=dispatch.LEASE_RETRY_SECONDS + 30)
        assert delivered["event"] == event and delivered["headers"]["webhook-id"] == event["id"]
        holder = int(sql.one("SELECT run_by FROM dialerapi_job_runs WHERE name = 'webhooks'")["run_by"].rsplit(":", 1)[1])
        threads = [int(task) for task in os.listdir(f"/proc/{holder}/task")]
        assert len(threads) > 1 and {os.sched_getscheduler(task) for task in threads} == {os.SCHED_IDLE}
    finally:
        nginx.stop()
        server.stop()


def test_health_says_when_no_dispatcher_runs_or_an_event_waits_too_long(receiver, endpoint, settle, dispatcher,
                                                                        frozen_clock, client, hooks_app):
    """Issue #64: a dead dispatcher left /health healthy while no webhook left the floor. /health
    answers 503 with checks.webhooks when an enabled endpoint exists and no dispatcher holds the
    sending lease, or an event of an endpoint that is not failing has waited longer than
    WEBHOOK_BACKLOG_ALERT_SECONDS; a failing endpoint's backlog is its receiver's (metrics.webhooks)."""
    monitor = {"Authorization": f"Bearer {MONITOR_SECRET}"}

    def health():
        answer = client.get("/health", headers=monitor)
        return answer.status_code, answer.get_json()["checks"]["webhooks"]

    status, check = health()
    assert (status, check["ok"], check["endpoints"]) == (200, True, 0)
    hook = receiver(lambda request: (200, b"ok", {}))
    endpoint(hook.url)
    status, check = health()
    assert status == 503 and not check["ok"] and not check["dispatcher"]["running"]
    assert "no webhook dispatcher holds the sending lease" in check["error"]
    sender = dispatcher(by="host-a:7")
    settle("OLI-1")
    until_quiet(sender)
    status, check = health()
    assert (status, check["ok"], check["dispatcher"]["running"], check["dispatcher"]["holder"]) == (
        200, True, True, "host-a:7")
    # The lease lapses: the dispatcher died.
    move_clock(frozen_clock, seconds=dispatch.LEASE_SECONDS + 1)
    assert health()[0] == 503
    # A dispatcher holds the lease again, but an event (not yet sent) has waited past the limit.
    limit = hooks_app.config["WEBHOOK_BACKLOG_ALERT_SECONDS"]
    settle("OLI-2")
    move_clock(frozen_clock, seconds=limit + 1)
    with hooks_app.app_context():
        assert get_db().run(webhooks.take_lease, dispatch.LEASE_NAME, "host-a:7", dispatch.utc_now(),
                            dispatch.LEASE_SECONDS)
    status, check = health()
    assert status == 503 and check["dispatcher"]["running"] and check["oldest_undelivered_seconds"] > limit
    assert "WEBHOOK_BACKLOG_ALERT_SECONDS" in check["error"]
    until_quiet(sender)
    assert health()[0] == 200
