"""The attacks of issue #17 that are cheap to repeat, against a real gunicorn (one worker, so its memory
is the attack's): made-up HTTP methods against /metrics, /ws deflate bombs and oversized messages,
maximal batches of empty leads, slow clients through the shipped nginx, and a database proxy
injecting latency, a stall, resets and lost COMMIT replies under push and CRM load. After each, the
worker's peak resident memory (VmHWM) stays under 150 MB."""

import http.client
import json
import random
import socket
import string
import threading
import time
import zlib
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests

from conftest import SECRET, start_gunicorn, start_nginx
from dbproxy import DatabaseProxy
from wsclient import Client, ConnectionClosed, masked_frame, open_raw

pytestmark = pytest.mark.faults
AUTH = {"X-API-Key": SECRET}
PEAK_LIMIT_KB = 150 * 1024


@pytest.fixture(scope="module")
def server(database_url, tmp_path_factory):
    # 128 threads: the HTTP pool takes sockets up to half its threads (issue #27), and the bomb test
    # holds 40 at once (20 bombs still closing, 20 oversized messages), which must not meet the cap.
    server = start_gunicorn(database_url, tmp_path_factory.mktemp("attacks") / "gunicorn.log", workers=1,
                            GUNICORN_THREADS="128")
    yield server
    server.stop()


def port_of(server):
    return int(server.base_url.rsplit(":", 1)[1])


def worker_peaks_kb(server):
    """VmHWM (peak resident set, kB) of each worker: the children of the gunicorn master."""
    with open(f"/proc/{server.process.pid}/task/{server.process.pid}/children") as children:
        pids = children.read().split()
    peaks = []
    for pid in pids:
        with open(f"/proc/{pid}/status") as status:
            peaks += [int(line.split()[1]) for line in status if line.startswith("VmHWM:")]
    assert peaks, "no gunicorn worker found"
    return peaks


def assert_memory_bounded(server):
    peaks = worker_peaks_kb(server)
    assert max(peaks) < PEAK_LIMIT_KB, f"a worker peaked at {max(peaks) / 1024:.0f} MB"


def test_made_up_methods_do_not_grow_metrics(server):
    rng = random.Random(17)
    before = requests.get(server.url("/metrics"), headers=AUTH, timeout=10).text
    conn = http.client.HTTPConnection("127.0.0.1", port_of(server), timeout=10)
    for n in range(10_000):
        method = "".join(rng.choices(string.ascii_uppercase, k=rng.randint(3, 20)))
        conn.request(method, rng.choice(["/metrics", "/api/leads", f"/x{n}", "/healthz"]), headers=AUTH)
        response = conn.getresponse()
        response.read()
        assert response.status < 500
        if response.getheader("Connection") == "close":
            conn.close()
            conn = http.client.HTTPConnection("127.0.0.1", port_of(server), timeout=10)
    conn.close()
    after = requests.get(server.url("/metrics"), headers=AUTH, timeout=10).text
    assert len(after) < len(before) + 20_000, f"/metrics grew from {len(before)} to {len(after)} bytes"
    assert 'method="other"' in after
    assert_memory_bounded(server)


@pytest.fixture
def agent(sql):
    sql("INSERT INTO sales_agents (id, extension, name) VALUES (501, '4501', 'Kavya Iyer')")


def test_websocket_bombs(server, agent, sql):
    inflated = json.dumps({"event": "agent.pause", "data": {"code": "other", "note": " " * 50_000_000}}).encode()
    squeeze = zlib.compressobj(wbits=-15)
    bomb = squeeze.compress(inflated) + squeeze.flush(zlib.Z_SYNC_FLUSH)

    def deflate_bomb(_):
        conn, _, _ = open_raw(server.base_url, SECRET)
        try:
            conn.sendall(masked_frame(bomb[:-4], rsv1=True))
            conn.settimeout(10)
            while conn.recv(65536):
                pass
        except OSError:
            pass
        finally:
            conn.close()

    def oversized(_):
        client = Client.connect(server.base_url.replace("http://", "ws://") + "/ws?agentId=501", headers=AUTH)
        try:
            client.send(json.dumps({"event": "agent.pause", "data": {"code": "other", "note": "n" * 1_000_000}}))
            while client.receive(timeout=10) is not None:
                pass
            return None
        except ConnectionClosed as closed:
            return closed.reason
        finally:
            client.close()

    with ThreadPoolExecutor(20) as pool:
        list(pool.map(deflate_bomb, range(20)))
        assert set(pool.map(oversized, range(20))) == {1009}
    assert sql.one("SELECT pause_code FROM sales_agents WHERE id = 501")["pause_code"] is None
    assert_memory_bounded(server)


def test_maximal_batches_of_empty_leads(server, sql):
    body = b'{"leads": [' + b",".join([b"{}"] * 349_518) + b"]}"
    assert len(body) <= 1024 * 1024

    def push(_):
        return requests.post(server.url("/api/leads"), data=body, timeout=60,
                             headers={**AUTH, "Content-Type": "application/json"})

    with ThreadPoolExecutor(3) as pool:
        answers = list(pool.map(push, range(3)))
    for answer in answers:
        assert answer.status_code == 400
        assert answer.json()["details"] == [{"field": "body", "message": "more than 1024 JSON objects and arrays "
                                                                         "(a batch holds at most 500 leads)"}]
    assert sql.one("SELECT COUNT(*) AS n FROM sales_master")["n"] == 0
    assert_memory_bounded(server)


def test_slow_clients_through_nginx_do_not_starve_gunicorn(database_url, tmp_path):
    """200 clients each sending a request a byte every 2 s, through the shipped nginx, to a gunicorn of 8
    threads: every normal request meanwhile is answered, and nginx cuts the slow ones off."""
    gunicorn = start_gunicorn(database_url, tmp_path / "gunicorn.log", workers=1, GUNICORN_THREADS="8")
    nginx = start_nginx(gunicorn, tmp_path)
    stop = threading.Event()
    cut_off = []

    def slow_client():
        try:
            with socket.create_connection(("127.0.0.1", nginx.port), timeout=5) as conn:
                for byte in b"POST /api/leads HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n" + b"{" * 100:
                    if stop.is_set():
                        return
                    conn.sendall(bytes([byte]))
                    time.sleep(2)
        except OSError:
            cut_off.append(1)

    try:
        slow = [threading.Thread(target=slow_client) for _ in range(200)]
        for thread in slow:
            thread.start()
        time.sleep(3)
        statuses = [requests.get(f"http://127.0.0.1:{nginx.port}/healthz", timeout=10).status_code for _ in range(50)]
        assert statuses == [200] * 50
        for thread in slow:
            thread.join(timeout=40)
        assert len(cut_off) == 200, f"{200 - len(cut_off)} slow clients were still connected after 40 s"
        assert_memory_bounded(gunicorn)
    finally:
        stop.set()
        nginx.stop()
        gunicorn.stop()


@pytest.mark.slow
def test_database_faults_under_push_and_crm_load(database_url, sql, tmp_path):
    """Through a proxy that adds latency, stalls, resets connections and loses COMMIT replies: every 2xx
    is stored, every 503 commit_unknown is stored whole or not at all, every other answer stored nothing."""
    proxy = DatabaseProxy.for_url(database_url)
    # Each request names its own client, so the CRM rate limit (120 a minute per client) stays out of the way.
    gunicorn = start_gunicorn(proxy.url(database_url), tmp_path / "gunicorn.log", workers=2, TRUSTED_PROXY_COUNT="1")
    stop = threading.Event()
    pushes, callbacks = [], []

    def client(worker):
        session = requests.Session()
        n = 0
        while not stop.is_set():
            n += 1
            batch = [{"oli_id": f"DBF-{worker}-{n}-{i}", "phone_number": f"98765{worker:02d}{n % 1000:03d}",
                      "client_name": f"w{worker} b{n}", "form_type": "loan", "priority_id": 2} for i in range(20)]
            answer = session.post(gunicorn.url("/api/leads"), json={"leads": batch}, headers=AUTH, timeout=90)
            pushes.append((batch, answer.status_code, answer.text[:200]))
            if answer.status_code == 201:
                body = {"oliId": batch[0]["oli_id"], "scheduledAt": "2026-11-25 10:30"}
                forwarded = {**AUTH, "X-Forwarded-For": f"10.{worker}.{n // 250 % 250}.{n % 250 + 1}"}
                answer = session.post(gunicorn.url("/api/pending-callbacks"), json=body, headers=forwarded, timeout=90)
                callbacks.append((body["oliId"], answer.status_code, answer.text[:200]))

    def faults():
        steps = [lambda: setattr(proxy, "latency", 0.02), lambda: setattr(proxy, "latency", 0.0),
                 lambda: proxy.stall(3), proxy.reset, lambda: setattr(proxy, "drop_commits", 3)]
        while not stop.is_set():
            for step in steps:
                step()
                time.sleep(2)

    workers = [threading.Thread(target=client, args=(w,)) for w in range(16)] + [threading.Thread(target=faults)]
    try:
        for thread in workers:
            thread.start()
        time.sleep(30)
        stop.set()
        for thread in workers:
            thread.join(timeout=120)
        assert_memory_bounded(gunicorn)
    finally:
        stop.set()
        gunicorn.stop()
        proxy.close()

    stored = {row["oli_id"]: row for row in sql("SELECT oli_id, phone_number, client_name, dial_status FROM sales_master")}
    statuses = {}
    for batch, status, text in pushes:
        statuses[status] = statuses.get(status, 0) + 1
        present = [lead for lead in batch if lead["oli_id"] in stored]
        if status == 201:
            assert len(present) == 20 and all(stored[lead["oli_id"]]["client_name"] == lead["client_name"]
                                               for lead in batch), (status, text)
        elif status == 503 and json.loads(text)["error"] == "commit_unknown":
            assert len(present) in (0, 20), f"a batch stored in part: {len(present)} of 20"
        else:
            assert present == [], f"answered {status} {text} but {len(present)} leads were stored"
    for oli_id, status, text in callbacks:
        statuses[status] = statuses.get(status, 0) + 1
        state = stored[oli_id]["dial_status"]
        if status == 200:
            assert state == "Callback", (oli_id, state)
        elif not (status == 503 and json.loads(text)["error"] == "commit_unknown"):
            assert state != "Callback", f"answered {status} {text} but the callback was applied"
    assert statuses.get(201, 0) > 20, statuses
    assert proxy.commit_drops > 0 and statuses.get(503, 0) > 0, (proxy.commit_drops, statuses)
    assert set(statuses) <= {200, 201, 500, 503}, statuses
