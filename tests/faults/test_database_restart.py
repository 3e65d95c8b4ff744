"""The database restarts under load: while it is down a push waits up to the failover budget (8 s)
for it and then answers 503 `database_unavailable` with Retry-After, never 500 (issue #19), and
/health answers 503; no batch is stored in part, and pushes succeed again within 5 s of the
database coming back, without a gunicorn restart (issue: fault tests)."""

import threading
import time

import pytest
import requests

from conftest import SECRET, Sql, start_gunicorn

# Slow (setup.cfg `slow`): handed out first in a parallel run.
pytestmark = [pytest.mark.faults, pytest.mark.slow]
AUTH = {"X-API-Key": SECRET}
BATCH = 50


def test_database_restart_under_load(own_mariadb, tmp_path):
    url, devdb = own_mariadb
    server = start_gunicorn(url, tmp_path / "gunicorn.log", workers=2)
    pushes, health, errors = [], [], []
    stop = threading.Event()

    def pusher(worker):
        session = requests.Session()
        n = 0
        while not stop.is_set():
            n += 1
            tag = f"R{worker}-{n}"
            body = {"leads": [{"oli_id": f"{tag}-{i}", "phone_number": "9876543210", "client_name": tag,
                               "form_type": "loan", "priority_id": 2} for i in range(BATCH)]}
            try:
                started = time.monotonic()
                response = session.post(server.url("/api/leads"), json=body, headers=AUTH, timeout=30)
                pushes.append((time.monotonic(), tag, response.status_code, response.json(), started,
                               response.headers.get("Retry-After")))
            except (requests.RequestException, ValueError) as exc:
                errors.append((tag, repr(exc)))

    def health_poller():
        while not stop.is_set():
            response = requests.get(server.url("/health"), headers=AUTH, timeout=5)
            health.append((time.monotonic(), response.status_code))
            time.sleep(0.2)

    threads = [threading.Thread(target=pusher, args=(w,)) for w in range(4)] + [threading.Thread(target=health_poller)]
    try:
        for thread in threads:
            thread.start()
        time.sleep(2)
        down_at = time.monotonic()
        devdb("stop")
        time.sleep(12)  # longer than the failover budget, so that pushes give up
        restart_at = time.monotonic()
        devdb("start")
        up_at = time.monotonic()
        time.sleep(8)
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=30)
        server.stop()

    assert errors == [], "the service answered every request while the database was away"
    answers = {(status, body.get("error"), retry) for _, _, status, body, _, retry in pushes}
    assert answers <= {(201, None, None), (503, "database_unavailable", "2"), (503, "commit_unknown", "1")}, answers
    gave_up = [p for p in pushes if p[2] == 503 and p[3]["error"] == "database_unavailable"]
    assert gave_up and all(answered - max(started, down_at) >= 7 for answered, _, _, _, started, _ in gave_up), \
        "a push waits out the failover budget (8 s) for the database before its 503"
    waited = [p for p in pushes if p[2] == 201 and down_at + 0.5 < p[4] < restart_at]
    assert all(answered > restart_at for answered, *_ in waited), "a 201 while the database was down is impossible"
    assert any(status == 503 for t, status in health if down_at + 0.5 < t < restart_at)
    recovered = [t for t, _, status, *_ in pushes if t > up_at and status == 201]
    assert recovered and recovered[0] - up_at < 5, "pushes succeed again within 5 s of the database coming back"
    assert health[-1][1] == 200

    sql = Sql(url)
    stored = {}
    for row in sql("SELECT client_name, COUNT(*) AS n FROM sales_master GROUP BY client_name"):
        stored[row["client_name"]] = row["n"]
    for _, tag, status, *_ in pushes:
        if status == 201:
            assert stored.get(tag) == BATCH, f"acknowledged batch {tag} lost rows"
        else:
            assert stored.get(tag, 0) in (0, BATCH), f"batch {tag} was stored in part"
    sql.conn.close()
