"""The database restarts under load: while it is down the service answers 5xx (and /health 503),
never stores part of a batch, and recovers by itself within 5 s of the database coming back,
without a gunicorn restart (issue: fault tests)."""

import threading
import time

import pytest
import requests

from conftest import SECRET, Sql, start_gunicorn

pytestmark = pytest.mark.faults
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
                response = session.post(server.url("/api/leads"), json=body, headers=AUTH, timeout=15)
                pushes.append((time.monotonic(), tag, response.status_code, response.json()))
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
        time.sleep(3)
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
    during = [p for p in pushes if down_at + 0.5 < p[0] < restart_at]
    assert during and all(status >= 500 for _, _, status, _ in during)
    assert all(body == {"ok": False, "error": "internal_error"} for _, _, status, body in during)
    assert any(status == 503 for t, status in health if down_at + 0.5 < t < restart_at)
    recovered = [t for t, _, status, _ in pushes if t > up_at and status == 201]
    assert recovered and recovered[0] - up_at < 5, "pushes succeed again within 5 s of the database coming back"
    assert health[-1][1] == 200

    sql = Sql(url)
    stored = {}
    for row in sql("SELECT client_name, COUNT(*) AS n FROM sales_master GROUP BY client_name"):
        stored[row["client_name"]] = row["n"]
    for _, tag, status, _ in pushes:
        if status == 201:
            assert stored.get(tag) == BATCH, f"acknowledged batch {tag} lost rows"
        else:
            assert stored.get(tag, 0) in (0, BATCH), f"batch {tag} was stored in part"
    sql.conn.close()
