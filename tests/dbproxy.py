"""A TCP proxy in front of the test MariaDB that injects the faults of a bad network (issue #17):
latency on every reply, a stall, connections reset, and the reply to a COMMIT lost after the
server has committed.

It reads the client's side of the MySQL wire protocol (packets of a 3-byte little-endian length,
a sequence id and a payload; a query is COM_QUERY, 0x03, followed by its text), so it knows a
COMMIT when PyMySQL sends one. The server's side is forwarded as bytes, except that the reply to
an armed COMMIT is thrown away and both connections closed: the server has done the work, the
client never hears it.
"""

import socket
import struct
import threading
import time
from urllib.parse import urlsplit, urlunsplit

COMMIT = b"\x03COMMIT"


class DatabaseProxy:
    """`DatabaseProxy(upstream_port)`; `.port` is where clients connect; `.url(database_url)` rewrites a URL.

    Faults (all may change while connections are open):
    - `latency` seconds added before each reply is forwarded;
    - `stall(seconds)`: no reply is forwarded for that long;
    - `reset()`: every open connection is reset (RST to both sides);
    - `drop_commits = N`: the next N COMMIT replies are lost after the server committed;
      `commit_drops` counts the ones dropped so far.
    """

    def __init__(self, upstream_port, upstream_host="127.0.0.1"):
        self.upstream = (upstream_host, upstream_port)
        self.latency = 0.0
        self.drop_commits = 0
        self.commit_drops = 0
        self._stalled_until = 0.0
        self._lock = threading.Lock()
        self._pairs = set()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    @classmethod
    def for_url(cls, database_url):
        """A proxy in front of the server of `database_url` (mysql://user@host:port/database)."""
        return cls(urlsplit(database_url).port)

    def url(self, database_url):
        """`database_url` pointing at this proxy instead of the server."""
        parts = urlsplit(database_url)
        return urlunsplit(parts._replace(netloc=parts.netloc.replace(f"{parts.hostname}:{parts.port}",
                                                                     f"127.0.0.1:{self.port}")))

    def stall(self, seconds):
        self._stalled_until = time.monotonic() + seconds

    def reset(self):
        with self._lock:
            pairs, self._pairs = self._pairs, set()
        for pair in pairs:
            for sock in pair:
                _abort(sock)

    def close(self):
        self._closed = True
        # close() alone does not wake a thread blocked in accept() on Linux: the socket stays
        # listening until the next client arrives, and that client got through. shutdown() wakes it.
        try:
            self._listener.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._listener.close()
        self.reset()

    def _accept(self):
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            if self._closed:
                _abort(client)
                return
            try:
                server = socket.create_connection(self.upstream, timeout=5)
            except OSError:
                _abort(client)
                continue
            server.settimeout(None)
            pair = (client, server)
            with self._lock:
                self._pairs.add(pair)
            armed = threading.Event()
            threading.Thread(target=self._client_to_server, args=(pair, armed), daemon=True).start()
            threading.Thread(target=self._server_to_client, args=(pair, armed), daemon=True).start()

    def _client_to_server(self, pair, armed):
        client, server = pair
        buffer = b""
        try:
            while True:
                data = client.recv(65536)
                if not data:
                    break
                buffer += data
                # Whole packets only, so that a COMMIT is seen however TCP splits it.
                while len(buffer) >= 4:
                    length = struct.unpack("<I", buffer[:3] + b"\x00")[0]
                    if len(buffer) < 4 + length:
                        break
                    packet, buffer = buffer[:4 + length], buffer[4 + length:]
                    if packet[4:] == COMMIT and self._take_commit():
                        armed.set()
                    server.sendall(packet)
        except OSError:
            pass
        self._drop(pair)

    def _take_commit(self):
        with self._lock:
            if self.drop_commits <= 0:
                return False
            self.drop_commits -= 1
            return True

    def _server_to_client(self, pair, armed):
        client, server = pair
        try:
            while True:
                data = server.recv(65536)
                if not data:
                    break
                if armed.is_set():
                    # The server answered the COMMIT: it is durable. The client never learns it.
                    with self._lock:
                        self.commit_drops += 1
                    break
                delay = max(self.latency, self._stalled_until - time.monotonic())
                if delay > 0:
                    time.sleep(delay)
                client.sendall(data)
        except OSError:
            pass
        self._drop(pair)

    def _drop(self, pair):
        with self._lock:
            self._pairs.discard(pair)
        for sock in pair:
            _abort(sock)


def _abort(sock):
    """Cut a connection as the network would: shutdown wakes the other pump's recv; SO_LINGER 0 makes
    the close a reset."""
    for step in (lambda: sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)),
                 lambda: sock.shutdown(socket.SHUT_RDWR), sock.close):
        try:
            step()
        except OSError:
            pass
