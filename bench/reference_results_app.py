"""The reference of the results-read benchmark (issue #48): the least code that answers the lead read
and a feed page with the service's statements, sharing no code with the service.

GET /lead/<oli_id>?limit=N: the lead's row with its calling zones, and N+1 of its call attempts
newest first (two plain statements; the service makes one, the calls written as JSON by the
database), as JSON.
GET /lead-events?after=S&limit=N: the events after feed place S (events_after), each body parsed
and the page written as JSON. No validation, authentication, limits, request log or metrics.
Plain PyMySQL, one connection per thread, autocommit.

    gunicorn -c deploy/gunicorn.conf.py bench.reference_results_app:app
"""

import json
import os
import threading
from urllib.parse import unquote, urlsplit

import pymysql
import pymysql.cursors
from flask import Flask, request

app = Flask(__name__)
local = threading.local()

LEAD = ("SELECT m.*, m.callback_agent_id, m.contact_cap, m.contact_cap_until, z.zones AS call_zones"
        " FROM sales_master AS m LEFT JOIN dialerapi_call_zones AS z ON z.id = m.call_zone_id WHERE m.oli_id = %s")
CALLS = ("SELECT id, agent_id, call_type, started_at, ended_at, result, hangup_by, hangup_cause, form_type,"
         " answered_at, agent_connected_at, connect_seconds, late_connect FROM sales_call_attempts"
         " WHERE lead_id = %s AND id < %s ORDER BY id DESC LIMIT %s")
EVENTS = ("SELECT id, seq, type, oli_id, data_id, occurred_at, occurred_at_utc, body FROM dialerapi_lead_events"
          " WHERE seq > %s ORDER BY seq LIMIT %s")


def connection():
    if not hasattr(local, "conn"):
        url = urlsplit(os.environ["DATABASE_URL"])
        local.conn = pymysql.connect(
            host=url.hostname, port=url.port or 3306, user=unquote(url.username or "root"),
            password=unquote(url.password or ""), database=url.path.lstrip("/"), charset="utf8mb4",
            autocommit=True, cursorclass=pymysql.cursors.DictCursor)
    return local.conn


@app.get("/lead/<oli_id>")
def lead(oli_id):
    limit = int(request.args.get("limit", 50))
    with connection().cursor() as cur:
        cur.execute(LEAD, (oli_id,))
        row = cur.fetchone()
        cur.execute(CALLS, (row["id"], 2 ** 63 - 1, limit + 1))
        calls = cur.fetchall()
    return app.response_class(json.dumps({"ok": True, "lead": row, "calls": calls[:limit]}, default=str),
                              mimetype="application/json")


@app.get("/lead-events")
def events():
    with connection().cursor() as cur:
        cur.execute(EVENTS, (int(request.args.get("after", 0)), int(request.args.get("limit", 100))))
        rows = cur.fetchall()
    for row in rows:
        row["body"] = json.loads(row["body"])
    return app.response_class(json.dumps({"ok": True, "events": rows}, default=str), mimetype="application/json")
