"""The tests' websocket client: python-websockets' sync client behind the small interface the tests
use (`receive(timeout)` answering None on a timeout, `send`, `close`, ConnectionClosed with the
close code as `.reason`).

Not simple-websocket's Client: its handshake reads the 101 response and throws away whatever
arrived in the same read, so a frame the server sends at once (the snapshot on connect, a
`server_error` before a 1008) goes missing under load (issue #17, finding 10). Browsers and
python-websockets keep those bytes.
"""

import base64
import os
import socket

import websockets.exceptions
from websockets.sync.client import connect


class ConnectionClosed(Exception):
    """The socket is closed; `reason` is the close code received (1006 when none was)."""

    def __init__(self, reason, message=""):
        super().__init__(reason, message)
        self.reason = reason
        self.message = message


def _closed(exc):
    received = exc.rcvd
    return ConnectionClosed(received.code, received.reason) if received else ConnectionClosed(1006)


class Client:
    def __init__(self, connection):
        self.connection = connection

    @classmethod
    def connect(cls, url, headers=None, **options):
        # No keepalive pings of the client's own (the server pings): its thread joins the reader thread
        # with a timeout while recv() joins it too, and CPython 3.11 can fail such concurrent joins with
        # "release unlocked lock" (seen under libfaketime in make test-clock).
        options.setdefault("ping_interval", None)
        return cls(connect(url, additional_headers=headers or {}, open_timeout=10, legacy=True, **options))

    def receive(self, timeout=None):
        try:
            return self.connection.recv(timeout=timeout)
        except TimeoutError:
            return None
        except websockets.exceptions.ConnectionClosed as exc:
            raise _closed(exc) from exc

    def send(self, data):
        try:
            self.connection.send(data)
        except websockets.exceptions.ConnectionClosed as exc:
            raise _closed(exc) from exc

    def close(self):
        self.connection.close()


def open_raw(base_url, key, query="agentId=501"):
    """A websocket to `base_url` (http://127.0.0.1:PORT) opened by hand with `key`, offering
    permessage-deflate: (socket, response head, bytes after it)."""
    nonce = base64.b64encode(os.urandom(16)).decode()
    port = int(base_url.rsplit(":", 1)[1])
    conn = socket.create_connection(("127.0.0.1", port), timeout=5)
    conn.sendall((f"GET /ws?{query} HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"
                  f"Connection: Upgrade\r\nSec-WebSocket-Key: {nonce}\r\nSec-WebSocket-Version: 13\r\n"
                  f"Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\n"
                  f"X-API-Key: {key}\r\n\r\n").encode())
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(4096)
        assert chunk, data
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    return conn, head.decode(), rest


def masked_frame(payload, opcode=1, rsv1=False):
    """One final client frame (clients must mask, RFC 6455 5.3)."""
    mask = os.urandom(4)
    header = bytes([0x80 | (0x40 if rsv1 else 0) | opcode])
    size = len(payload)
    header += bytes([0x80 | size]) if size < 126 else bytes([0x80 | 126]) + size.to_bytes(2, "big") \
        if size < 65536 else bytes([0x80 | 127]) + size.to_bytes(8, "big")
    return header + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
