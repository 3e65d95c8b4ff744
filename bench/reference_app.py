"""The reference of the lead-push benchmark (issue #33): the least code that makes the service's
writes, sharing no code with the service, so a cost added to the service cannot hide in it.

POST /push takes a batch as POST /api/leads does ({"leads": [...]}) and, in one READ COMMITTED
transaction with autocommit off, makes the service's statements: read the work window of
sales_dialer_config, lock the batch's oli_ids (SELECT ... FOR UPDATE in oli_id order), and write
every lead with one multi-row INSERT ... ON DUPLICATE KEY UPDATE of the same columns and values
as the service, `next_retry_at` included: NULL inside working hours, else the next work_start
(lead-intake-api.md, "Dial-state reset"), computed once per batch. Then it answers {"ok": true}.
No validation, authentication, priority catalog, live-lead check, request log or metrics.
"Now" is UTC wall-clock time, as the service's with DB_TIMEZONE=UTC (the benchmark's setting; the
reference knows no other zone). Plain PyMySQL, one connection per thread.

    gunicorn -c deploy/gunicorn.conf.py bench.reference_app:app
"""

import json
import os
import threading
import uuid
from datetime import datetime, timedelta, timezone
from urllib.parse import unquote, urlsplit

import pymysql
import pymysql.cursors
from flask import Flask, request

app = Flask(__name__)
local = threading.local()

WINDOW = "SELECT work_start, work_end FROM sales_dialer_config WHERE id = 1"
LOCK = ("SELECT id, oli_id, data_id, dial_status, isReserved FROM sales_master FORCE INDEX (uq_sales_master_oli_id)"
        " WHERE oli_id IN %s ORDER BY oli_id FOR UPDATE")
UPSERT = """INSERT INTO sales_master
  (oli_id, data_id, phone_number, client_name, form_type, priority_id, dial_status, disposeRemark,
   last_dial_result, hangup_by, hangup_cause, last_attempt_at, first_attempt_at, next_retry_at,
   callback_scheduled_at, call_count, isReserved, created_at, updated_at)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)
ON DUPLICATE KEY UPDATE
  data_id = VALUES(data_id), phone_number = VALUES(phone_number), client_name = VALUES(client_name),
  form_type = VALUES(form_type), priority_id = VALUES(priority_id), dial_status = VALUES(dial_status),
  disposeRemark = VALUES(disposeRemark), last_dial_result = VALUES(last_dial_result),
  hangup_by = VALUES(hangup_by), hangup_cause = VALUES(hangup_cause),
  last_attempt_at = VALUES(last_attempt_at), first_attempt_at = VALUES(first_attempt_at),
  next_retry_at = VALUES(next_retry_at), callback_scheduled_at = VALUES(callback_scheduled_at),
  call_count = VALUES(call_count), isReserved = VALUES(isReserved), updated_at = VALUES(updated_at)"""


def utcnow():
    """The current instant, aware UTC (tests put the service's frozen clock here)."""
    return datetime.now(timezone.utc)


def connection():
    if not hasattr(local, "conn"):
        url = urlsplit(os.environ["DATABASE_URL"])
        local.conn = pymysql.connect(
            host=url.hostname, port=url.port or 3306, user=unquote(url.username or "root"),
            password=unquote(url.password or ""), database=url.path.lstrip("/"), charset="utf8mb4",
            autocommit=False, init_command="SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED")
    return local.conn


def as_time(value):
    """A TIME column as PyMySQL reads it (a timedelta) as a time of day."""
    return (datetime.min + value).time() if isinstance(value, timedelta) else value


def next_retry_at(now, start, end):
    """NULL inside [start, end) (a window may cross midnight), else the next work_start."""
    inside = start <= now.time() < end if start <= end else (now.time() >= start or now.time() < end)
    if inside:
        return None
    today = datetime.combine(now.date(), start)
    return today if now < today else today + timedelta(days=1)


@app.post("/push")
def push():
    leads = json.loads(request.get_data())["leads"]
    now = utcnow().replace(tzinfo=None, microsecond=0)
    conn = connection()
    try:
        with conn.cursor(pymysql.cursors.DictCursor) as cur:
            cur.execute(WINDOW)
            window = cur.fetchone()
            retry_at = next_retry_at(now, as_time(window["work_start"]), as_time(window["work_end"]))
            rows = {}
            for lead in leads:
                rows[lead["oli_id"]] = (
                    lead["oli_id"], str(uuid.uuid4()), "".join(c for c in str(lead["phone_number"]) if c.isdigit()),
                    lead["client_name"], lead["form_type"], lead["priority_id"], "Pending", None, None, None, None,
                    None, None, retry_at, None, 0, 0, now, now)
            cur.execute(LOCK, (sorted(rows),))
            cur.fetchall()
            cur.executemany(UPSERT, [rows[oli_id] for oli_id in sorted(rows)])
        conn.commit()
    except BaseException:
        conn.rollback()
        raise
    return {"ok": True}, 201


@app.get("/healthz")
def healthz():
    return {"ok": True}

