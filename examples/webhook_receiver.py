"""A complete receiver of dialerapi's webhooks (docs/crm/results.md), in Python's standard library
plus the `standardwebhooks` package. The tests run it as it is.

    pip install standardwebhooks
    WEBHOOK_SECRET=whsec_... python webhook_receiver.py --port 9000 --out events.jsonl

It answers every POST within the 10 s the dialer waits:
- 401 when the signature does not verify (a forgery, or a secret that does not match);
- 200 for a `webhook-id` it already stored: the dialer delivers at least once, and a repeat
  carries the same id;
- otherwise it stores the event (here: one JSON line appended to --out, then fsync), and only then
  answers 200. A crash before the answer means the dialer sends it again; the id makes that harmless.

Events of one lead arrive in order; events of different leads may interleave.
"""

import argparse
import json
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from standardwebhooks.webhooks import Webhook, WebhookVerificationError

MAX_BODY = 256 * 1024


class Server(ThreadingHTTPServer):
    """The dispatcher opens up to 32 connections to one endpoint at once; Python's default listen
    backlog of 5 resets some of them, and each reset is an attempt retried with backoff."""

    request_queue_size = 128


class Store:
    """The events received, one JSON line each, and the ids already stored (to drop repeats)."""

    def __init__(self, path):
        self.path = path
        self.lock = threading.Lock()
        self.seen = set()
        if os.path.exists(path):
            with open(path, encoding="utf-8") as lines:
                self.seen = {json.loads(line)["webhook_id"] for line in lines if line.strip()}

    def add(self, webhook_id, event):
        """Store the event unless its id was stored before; True when it is new."""
        with self.lock:
            if webhook_id in self.seen:
                return False
            with open(self.path, "a", encoding="utf-8") as out:
                out.write(json.dumps({"webhook_id": webhook_id, "event": event}) + "\n")
                out.flush()
                os.fsync(out.fileno())
            self.seen.add(webhook_id)
            return True


def handler(webhook, store):
    class Receiver(BaseHTTPRequestHandler):
        def do_POST(self):
            length = int(self.headers.get("content-length") or 0)
            if length > MAX_BODY:
                return self.answer(413, "too large")
            body = self.rfile.read(length)
            try:
                event = webhook.verify(body, dict(self.headers))
            except WebhookVerificationError as exc:
                return self.answer(401, f"bad signature: {exc}")
            new = store.add(self.headers["webhook-id"], event)
            self.answer(200, "stored" if new else "duplicate")

        def answer(self, status, text):
            data = text.encode()
            self.send_response(status)
            self.send_header("content-type", "text/plain")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    return Receiver


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=9000)
    parser.add_argument("--out", default="events.jsonl", help="JSON lines file of the events received")
    args = parser.parse_args()
    webhook = Webhook(os.environ["WEBHOOK_SECRET"])
    server = Server((args.host, args.port), handler(webhook, Store(args.out)))
    print(f"listening on http://{args.host}:{server.server_port}/", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
