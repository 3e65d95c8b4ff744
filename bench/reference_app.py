"""The reference of the lead-push benchmark (issue #33): the least code that makes the service's
writes, sharing no code with the service, so a cost added to the service cannot hide in it.

POST /push takes a batch as POST /api/leads does ({"leads": [...]}) and, in one READ COMMITTED
transaction with autocommit off, makes the service's statements: read the work window and the
phone region of sales_dialer_config, lock the batch's oli_ids (SELECT ... FOR UPDATE in oli_id
order), look the batch's numbers up on the do-not-call list and their zone sets in
dialerapi_call_zones (adding a new one), and write every lead with one multi-row INSERT ... ON
DUPLICATE KEY UPDATE of the same columns and values as the service (ending a personal callback,
issue #40, as it does), `next_retry_at` included: NULL
inside working hours, else the next work_start (lead-intake-api.md, "Dial-state reset"), computed
once per batch; phone_e164, do_not_call and call_zone_id as issues #30 and #68 have them (phonenumbers: the
number read with the region, or with a `+` when that is not valid; the zone set with its regions). Then it answers {"ok": true}.
No validation, authentication, priority catalog, live-lead check, request log or metrics.
"Now" is UTC wall-clock time, as the service's with DB_TIMEZONE=UTC (the benchmark's setting; the
reference knows no other zone). Plain PyMySQL, one connection per thread.

POST /raw (issue #51) is the database's own speed: the same rows written with one plain multi-row
INSERT ... ON DUPLICATE KEY UPDATE through PyMySQL and nothing else: no config read, no lock, no
phone parsing and no list or zone lookups (phone_e164 is the digits as a number, do_not_call 0,
call_zone_id 0, the column's default, next_retry_at NULL), in a transaction of its own.

    gunicorn -c deploy/gunicorn.conf.py bench.reference_app:app
"""

import hashlib
import json
import os
import threading
import uuid
from datetime import datetime, timedelta, timezone
from urllib.parse import unquote, urlsplit

import phonenumbers
import pymysql
import pymysql.cursors
from flask import Flask, request

from dialerapi.rules.compliance.us_area_codes import AREA_CODES

app = Flask(__name__)
local = threading.local()

WINDOW = "SELECT work_start, work_end, phone_default_region FROM sales_dialer_config WHERE id = 1"
LISTED = "SELECT phone FROM dialerapi_dnc WHERE phone IN %s"
ZONES = "SELECT id, zones_key FROM dialerapi_call_zones WHERE zones_key IN %s"
NEW_ZONE = "INSERT IGNORE INTO dialerapi_call_zones (zones_key, zones) VALUES (%s, %s)"
LOCK = ("SELECT id, oli_id, data_id, dial_status, isReserved, callback_agent_id"
        " FROM sales_master FORCE INDEX (uq_sales_master_oli_id)"
        " WHERE oli_id IN %s ORDER BY oli_id FOR UPDATE")
UPSERT = """INSERT INTO sales_master
  (oli_id, data_id, phone_number, client_name, form_type, priority_id, phone_e164, do_not_call, call_zone_id,
   dial_status, disposeRemark, last_dial_result, hangup_by, hangup_cause, last_attempt_at, first_attempt_at,
   next_retry_at, callback_scheduled_at, call_count, isReserved, created_at, updated_at, region, postal_code,
   consent_type, consent_at, consent_source)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)
ON DUPLICATE KEY UPDATE
  data_id = VALUES(data_id), phone_number = VALUES(phone_number), client_name = VALUES(client_name),
  phone_e164 = VALUES(phone_e164), do_not_call = VALUES(do_not_call), call_zone_id = VALUES(call_zone_id),
  form_type = VALUES(form_type), priority_id = VALUES(priority_id), dial_status = VALUES(dial_status),
  disposeRemark = VALUES(disposeRemark), last_dial_result = VALUES(last_dial_result),
  hangup_by = VALUES(hangup_by), hangup_cause = VALUES(hangup_cause),
  last_attempt_at = VALUES(last_attempt_at), first_attempt_at = VALUES(first_attempt_at),
  next_retry_at = VALUES(next_retry_at), callback_scheduled_at = VALUES(callback_scheduled_at),
  call_count = VALUES(call_count), isReserved = VALUES(isReserved), updated_at = VALUES(updated_at),
  region = VALUES(region), postal_code = VALUES(postal_code), consent_type = VALUES(consent_type),
  consent_at = VALUES(consent_at), consent_source = VALUES(consent_source), callback_agent_id = NULL"""


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


def e164(digits, region):
    """E.164 digits of a digits-only phone: valid in `region`, else valid with a `+`, else as first read."""
    try:
        number = phonenumbers.parse(digits, region)
    except phonenumbers.NumberParseException:
        number = None
    if number is None or not phonenumbers.is_valid_number(number):
        try:
            international = phonenumbers.parse("+" + digits, None)
            if phonenumbers.is_valid_number(international):
                number = international
        except phonenumbers.NumberParseException:
            pass
    return None if number is None else int(f"{number.country_code}{number.national_number}")


def zone_key(number):
    """The call zone's key and names: the number's IANA zones, then its regions (issue #68): a US
    number's states by area code (the generated data table us_area_codes.py), another's country."""
    parsed = None if number is None else phonenumbers.parse(f"+{number}")
    names = () if parsed is None else phonenumbers.timezone.time_zones_for_number(parsed)
    names = sorted({name for name in names if name != "Etc/Unknown"})
    country = None if parsed is None else phonenumbers.region_code_for_number(parsed)
    if country == "US":
        names += [f"@US-{state}" for state in sorted(AREA_CODES.get(int(str(parsed.national_number)[:3]), ()))]
    elif country:
        names.append(f"@{country}")
    names = ";".join(names)
    return hashlib.sha1(names.encode("ascii")).hexdigest(), names


def zone_ids(cur, keys):
    cur.execute(ZONES, (sorted(keys),))
    found = {row["zones_key"]: row["id"] for row in cur.fetchall()}
    if len(found) < len(keys):
        for key in keys.keys() - found.keys():
            cur.execute(NEW_ZONE, (key, keys[key]))
        cur.execute(ZONES, (sorted(keys),))
        found = {row["zones_key"]: row["id"] for row in cur.fetchall()}
    return found


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
            digits = {lead["oli_id"]: "".join(c for c in str(lead["phone_number"]) if c.isdigit()) for lead in leads}
            cur.execute(LOCK, (sorted(digits),))
            cur.fetchall()
            numbers = {oli_id: e164(text, window["phone_default_region"]) for oli_id, text in digits.items()}
            keys = {oli_id: zone_key(number) for oli_id, number in numbers.items()}
            present = sorted({number for number in numbers.values() if number is not None})
            cur.execute(LISTED, (present,))
            listed = {row["phone"] for row in cur.fetchall()}
            ids = zone_ids(cur, dict(keys.values()))
            rows = {}
            for lead in leads:
                oli_id, number = lead["oli_id"], numbers[lead["oli_id"]]
                rows[oli_id] = (
                    oli_id, str(uuid.uuid4()), digits[oli_id], lead["client_name"], lead["form_type"],
                    lead["priority_id"], number, number in listed, ids[keys[oli_id][0]], "Pending", None, None, None,
                    None, None, None, retry_at, None, 0, 0, now, now, None, None, None, None, None)
            cur.executemany(UPSERT, [rows[oli_id] for oli_id in sorted(rows)])
        conn.commit()
    except BaseException:
        conn.rollback()
        raise
    return {"ok": True}, 201


@app.post("/raw")
def raw():
    leads = json.loads(request.get_data())["leads"]
    now = utcnow().replace(tzinfo=None, microsecond=0)
    rows = []
    for lead in leads:
        digits = "".join(c for c in str(lead["phone_number"]) if c.isdigit())
        rows.append((lead["oli_id"], str(uuid.uuid4()), digits, lead["client_name"], lead["form_type"],
                     lead["priority_id"], int(digits), 0, 0, "Pending", None, None, None, None, None, None, None,
                     None, 0, 0, now, now, None, None, None, None, None))
    conn = connection()
    try:
        with conn.cursor() as cur:
            cur.executemany(UPSERT, sorted(rows))
        conn.commit()
    except BaseException:
        conn.rollback()
        raise
    return {"ok": True}, 201


@app.get("/healthz")
def healthz():
    return {"ok": True}

