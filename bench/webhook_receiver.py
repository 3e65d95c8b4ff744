"""The receiver of bench/results_bench.py's delivery run: answers 200 at once and appends
"webhook-id receipt-time" (Unix seconds) per request to --out, flushed per line, so a SIGKILL loses
at most the line being written (the dialer then sends that one again: a duplicate, not a loss).
With --fail-after-seconds it waits that long and answers 500 (the bench's failing endpoint)."""

import argparse
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--out")
    parser.add_argument("--fail-after-seconds", type=float)
    args = parser.parse_args()
    out = open(args.out, "a", buffering=1) if args.out else None
    lock = threading.Lock()

    class Receiver(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self):
            self.rfile.read(int(self.headers.get("content-length") or 0))
            if args.fail_after_seconds:
                time.sleep(args.fail_after_seconds)
                status = 500
            else:
                status = 200
                with lock:
                    out.write(f"{self.headers['webhook-id']} {time.time():.6f}\n")
            self.send_response(status)
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    class Server(ThreadingHTTPServer):
        daemon_threads = True

        def handle_error(self, request, client_address):
            # A sending host SIGKILLed mid-request resets its connections: expected in the bench.
            pass

    Server(("127.0.0.1", args.port), Receiver).serve_forever()


if __name__ == "__main__":
    main()
