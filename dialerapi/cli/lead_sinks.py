"""Where `dialerapi leads import` sends a batch: the database through
rules.leads.push, in this process or in worker processes; validation alone (--dry-run); or a
remote service's POST /api/leads (--url). Each is a lead_import.Sink; a lead the push refuses is
reported by its index with D3's details ([{field, message}])."""

import ctypes
import json
import multiprocessing
import os
import re
import signal
import time
import urllib.error
import urllib.request
from concurrent.futures import ProcessPoolExecutor

from dialerapi.cli.lead_import import ImportRefused, ImportStopped, Sink
from dialerapi.plumbing import clock
from dialerapi.plumbing.db import get_db
from dialerapi.rules.leads import push as leads
from dialerapi.sides.crm.schemas import load_each
from dialerapi.web.errors import validation_details
from dialerapi.web.fields import RequestContext

# How long a remote push waits for a service that answers 429 or 503 or does not answer, per batch.
REMOTE_PATIENCE_SECONDS = 300
REMOTE_TIMEOUT_SECONDS = 120


class LocalSink(Sink):
    """Batches through rules.leads.push, in one transaction each, as POST /api/leads does."""

    def __init__(self, db, now, tz):
        self.db, self.now, self.tz = db, now, tz

    def push(self, bodies):
        """(results, {index: details}) for the lead `bodies`; the valid ones are written."""
        return self.db.run(push_rows, bodies, self.now(), self.tz)


class ProcessSink(Sink):
    """LocalSink's pushes in `workers` processes of their own, each with its own app and database
    connection, so that a batch's validation and phone work use one core while another batch's
    statements run. A process ignores Ctrl-C and SIGTERM (the import stops at a batch boundary,
    waiting for the batches in flight) and is killed when the import's process ends."""

    def __init__(self, workers, create_app):
        self.width = workers
        self.pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork"),
                                        initializer=_worker_start, initargs=(create_app, os.getpid()))

    def submit(self, bodies):
        return self.pool.submit(_worker_push, bodies).result

    def close(self, hard=False):
        self.pool.shutdown(wait=not hard, cancel_futures=True)


_worker = {}


def _worker_start(create_app, parent):
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:  # Linux: SIGKILL when the import's process ends, whatever ended it (PR_SET_PDEATHSIG)
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent:
        os._exit(1)
    _worker["app"] = create_app()


def _worker_push(bodies):
    app = _worker["app"]
    with app.app_context():
        tz = app.config["DB_TIMEZONE"]
        return get_db().run(push_rows, bodies, clock.now(tz), tz)


def push_rows(conn, rows, now, tz):
    """Upsert the valid leads of `rows` (push bodies) in the caller's transaction; the others are
    refused one by one. Returns (rules.leads.push's results, {index in rows: details})."""
    refused = {}

    def load(priorities):
        with RequestContext({"tz": tz, "priorities": priorities}):
            loaded, errors = load_each(rows, priorities)
        refused.clear()
        refused.update((index, validation_details(messages)) for index, messages in errors.items())
        return loaded

    return leads.push(conn, load, now, tz), refused


class DryRunSink(Sink):
    """Validation only, against the priority catalog read once: nothing is written."""

    def __init__(self, priorities, tz):
        self.priorities, self.tz = priorities, tz

    def push(self, rows):
        with RequestContext({"tz": self.tz, "priorities": self.priorities}):
            loaded, errors = load_each(rows, self.priorities)
        return [{"status": "valid"}] * len(loaded), {index: validation_details(m) for index, m in errors.items()}


class RemoteSink(Sink):
    """Batches through POST /api/leads of the service at `url`, with the CRM's key.

    The remote refuses a whole batch for one bad lead (400 validation_failed, details per
    `leads[i].field`): those leads are refused and the rest sent again. 429 and 503 are waited out
    (their Retry-After) and a service that does not answer is tried again, for at most
    `patience` seconds per batch; then ImportStopped. A 503 commit_unknown is sent again, as the
    API says: a lead stored already then answers `updated`."""

    def __init__(self, url, key, patience=REMOTE_PATIENCE_SECONDS, sleep=time.sleep):
        self.endpoint = url.rstrip("/") + "/api/leads"
        self.key, self.patience, self.sleep = key, patience, sleep

    def push(self, rows):
        pending = list(range(len(rows)))
        refused = {}
        waited = 0.0
        while pending:
            status, body, retry_after = self._post({"leads": [rows[index] for index in pending]})
            if status == 201:
                return body["leads"], refused
            if status == 400 and body.get("error") == "validation_failed":
                bad = self._refused(body.get("details") or [], pending)
                refused.update(bad)
                pending = [index for index in pending if index not in bad]
                continue
            if status in (401, 403):
                raise ImportRefused(f"{self.endpoint} refused the key ({status} {body.get('error')}): "
                                    "give the CRM's WS_SECRET with --key-file or DIALERAPI_KEY")
            if status not in (None, 429, 502, 503, 504):
                raise ImportStopped(f"{self.endpoint} answered {status} {json.dumps(body)[:300]}")
            pause = min(max(retry_after or 2 ** min(6, int(waited) // 10 + 1), 1), 60)
            if waited + pause > self.patience:
                raise ImportStopped(f"{self.endpoint} did not take the batch for {int(waited)} s "
                                    f"(last: {status or 'no answer'} {body.get('error', '')})".rstrip())
            self.sleep(pause)
            waited += pause
        return [], refused

    @staticmethod
    def _refused(details, pending):
        bad = {}
        for detail in details:
            found = re.fullmatch(r"leads\[(\d+)\]\.?(.*)", detail.get("field", ""))
            if not found or int(found[1]) >= len(pending):
                raise ImportStopped(f"the remote refused the batch as a whole: {detail}")
            bad.setdefault(pending[int(found[1])], []).append({"field": found[2] or None, "message": detail["message"]})
        return bad

    def _post(self, body):
        """(status or None when no answer, JSON body, Retry-After seconds or None)."""
        request = urllib.request.Request(self.endpoint, data=json.dumps(body).encode(), method="POST", headers={
            "Content-Type": "application/json", "Authorization": f"Bearer {self.key}"})
        try:
            with urllib.request.urlopen(request, timeout=REMOTE_TIMEOUT_SECONDS) as response:
                return response.status, json.loads(response.read()), None
        except urllib.error.HTTPError as error:
            try:
                answer = json.loads(error.read() or b"{}")
            except ValueError:
                answer = {}
            retry_after = error.headers.get("Retry-After")
            return error.code, answer, int(retry_after) if retry_after and retry_after.isdigit() else None
        except (urllib.error.URLError, OSError) as error:
            return None, {"error": str(getattr(error, "reason", error))}, None
