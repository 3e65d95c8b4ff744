"""Three webhook receivers that behave badly, for tests/faults/test_webhook_fairness.py, in a
process of their own so their work does not share the test's interpreter: one that never answers
(the dispatcher's 10 s timeout ends each attempt), one that always answers 500 and one that answers
302. Prints their URLs as one JSON list, then serves until its stdin closes.

    python tests/faults/bad_receivers.py
"""

import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

NEVER = threading.Event()


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128


def handler(answer):
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            self.rfile.read(int(self.headers.get("content-length") or 0))
            status, headers = answer()
            self.send_response(status)
            for name, value in {**headers, "content-length": "0"}.items():
                self.send_header(name, value)
            self.end_headers()

        def log_message(self, *args):
            pass

    return Handler


def main():
    answers = [lambda: (NEVER.wait(), (200, {}))[1], lambda: (500, {}),
               lambda: (302, {"Location": "http://127.0.0.1:9/elsewhere"})]
    servers = [Server(("127.0.0.1", 0), handler(answer)) for answer in answers]
    for server in servers:
        threading.Thread(target=server.serve_forever, daemon=True).start()
    print(json.dumps([f"http://127.0.0.1:{server.server_port}/hooks" for server in servers]), flush=True)
    sys.stdin.read()


if __name__ == "__main__":
    main()
