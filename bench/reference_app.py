"""The reference of the lead-push benchmark: the least code that makes the service's writes.

POST /push takes a batch as POST /api/leads does ({"leads": [...]}), locks the batch's oli_ids
(the service's own `lock_leads`) and writes the same columns with the service's own `upsert_leads`
in one READ COMMITTED transaction, then answers {"ok": true}. Nothing else: no validation, no
authentication, no catalog or config read, no request log, no metrics. `make bench` serves it with
gunicorn and deploy/gunicorn.conf.py, the service's own settings, beside the service.

    gunicorn -c deploy/gunicorn.conf.py --chdir bench reference_app:app
"""

import json
import os
import threading
import uuid
from datetime import datetime

import pymysql
from flask import Flask, request

from dialerapi.db import connect_params, queries

app = Flask(__name__)
local = threading.local()
# The dial-state reset of a push inside working hours (lead-intake-api.md, "Dial-state reset").
RESET = {"dial_status": "Pending", "disposeRemark": None, "last_dial_result": None, "hangup_by": None,
         "hangup_cause": None, "last_attempt_at": None, "first_attempt_at": None, "next_retry_at": None,
         "callback_scheduled_at": None, "call_count": 0, "isReserved": 0}


def connection():
    if not hasattr(local, "conn"):
        local.conn = pymysql.connect(**connect_params(os.environ["DATABASE_URL"]))
    return local.conn


@app.post("/push")
def push():
    leads = json.loads(request.get_data())["leads"]
    now = datetime.now().replace(microsecond=0)
    rows = {}
    for lead in leads:
        rows[lead["oli_id"]] = {
            "oli_id": lead["oli_id"], "phone_number": "".join(c for c in str(lead["phone_number"]) if c.isdigit()),
            "client_name": lead["client_name"], "form_type": lead["form_type"], "priority_id": lead["priority_id"],
            "data_id": str(uuid.uuid4()), "created_at": now, "updated_at": now, **RESET,
        }
    conn = connection()
    conn.begin()
    try:
        # aiosql's select is a generator that runs the statement when read: read the locked rows,
        # as the service does.
        list(queries.lock_leads(conn, oli_ids=sorted(rows)))
        queries.upsert_leads(conn, [rows[oli_id] for oli_id in sorted(rows)])
        conn.commit()
    except BaseException:
        conn.rollback()
        raise
    return {"ok": True}, 201


@app.get("/healthz")
def healthz():
    return {"ok": True}
