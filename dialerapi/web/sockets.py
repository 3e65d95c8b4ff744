"""What the service's websockets share (the agents' /ws, decisions.md D9; the board's /board/ws,
docs/supervisors/board.md): close codes, the wake-up of a waiting receive, a refusal that ends with a complete
close handshake, and each socket's own bounded send queue."""

import collections
import json
import logging
import socket
import threading

log = logging.getLogger(__name__)

POLICY_VIOLATION = 1008
SERVICE_RESTART = 1012
TRY_AGAIN_LATER = 1013
# simple-websocket 1.1 wakes a waiting receive() before it marks a socket closed for a message over
# the cap, so a receive() without a timeout can wait forever. Waking every second bounds that.
RECEIVE_WAKE_SECONDS = 1
# How long a refused socket waits for the client's close frame before the server drops it, and how
# long a client closed for falling behind has to take its close frame before the connection is cut.
CLOSE_WAIT_SECONDS = 2


def reject(ws, reason, code=POLICY_VIOLATION, **data):
    """Send `server_error` {reason, **data} and close with `code`, then wait (at most CLOSE_WAIT_SECONDS)
    for the client's close frame, so the connection ends with a complete close handshake (RFC 6455 7.1.1)."""
    ws.send(json.dumps({"event": "server_error", "data": {"reason": reason, **data}}))
    ws.close(reason=code, message=reason)
    ws.thread.join(CLOSE_WAIT_SECONDS)


class _WholeFrames:
    """A websocket's socket whose `send` writes all of its bytes, one caller at a time.

    simple-websocket writes a frame with one `socket.send`, which under gevent (the socket pool)
    returns after part of a large frame (a board snapshot of thousands of agents) when the client's
    window is full, and its reader thread writes pings and pongs on the same socket: either cut a
    frame and the client reads garbage. Here every write goes out whole and alone."""

    def __init__(self, sock):
        self._sock = sock
        self._lock = threading.Lock()

    def send(self, data, *flags):
        with self._lock:
            self._sock.sendall(data, *flags)
        return len(data)

    def __getattr__(self, name):
        return getattr(self._sock, name)


class SendQueue:
    """One socket's own send queue: the threads that fan events out to many
    sockets never wait on one client.

    `put(text)` queues a text frame and returns at once; this socket's own sender (a thread; a
    greenlet in the gevent socket pool) writes the frames in order. A client that falls behind by
    more than `max_bytes` of queued frames (a single frame larger than that, a board's snapshot, is
    taken when nothing is queued) is closed for it: its queued frames are dropped, it is sent
    `server_error` {reason: "too_slow", retry_after: 1} and close 1013 (try again later: it
    reconnects to a fresh snapshot), and a connection still not closed CLOSE_WAIT_SECONDS later (a client that reads
    nothing) is cut. `on_too_slow()` is called once when that happens (a count for /health).
    """

    def __init__(self, ws, max_bytes, name="socket", on_too_slow=None):
        self.ws = ws
        if not isinstance(ws.sock, _WholeFrames):
            ws.sock = _WholeFrames(ws.sock)
        self.max_bytes = max_bytes
        self.too_slow = False
        self._on_too_slow = on_too_slow
        self._frames = collections.deque()
        self._bytes = 0
        self._close = None  # (code, reason) once a close is asked for
        self._done = False
        self._cond = threading.Condition()
        self._sender = threading.Thread(target=self._send_all, name=f"dialerapi-send-{name}", daemon=True)
        self._sender.start()

    def put(self, text):
        """Queue `text` (str) for the client; False when the socket is closing or was just closed for
        falling behind (the frame is not sent)."""
        size = len(text.encode())  # the bound is in bytes: a name in Devanagari is 3 a character
        with self._cond:
            if self._close is not None or self._done:
                return False
            if self._frames and self._bytes + size > self.max_bytes:
                self._frames.clear()
                self._bytes = 0
                self.too_slow = True
                self._close = (TRY_AGAIN_LATER, "too_slow")
                self._cond.notify()
            else:
                self._frames.append((text, size))
                self._bytes += size
                self._cond.notify()
                return True
        log.warning("closing a %s that fell behind by more than %d bytes (too_slow)", self._sender.name, self.max_bytes)
        if self._on_too_slow is not None:
            self._on_too_slow()
        self._cut_later()
        return False

    def queued_bytes(self):
        """The bytes (UTF-8) of the frames queued and not yet taken by the sender."""
        with self._cond:
            return self._bytes

    def close(self, code, reason):
        """Send what is queued, then close with `code` and `reason`; the connection is cut if the
        client has not taken it all within CLOSE_WAIT_SECONDS."""
        with self._cond:
            if self._close is not None or self._done:
                return
            self._close = (code, reason)
            self._cond.notify()
        self._cut_later()

    def stop(self):
        """The socket's handler is done with it: the sender ends once the queue is sent."""
        with self._cond:
            self._done = True
            self._cond.notify()

    def _cut_later(self):
        timer = threading.Timer(CLOSE_WAIT_SECONDS, self._cut)
        timer.daemon = True
        timer.start()

    def _cut(self):
        if self._sender.is_alive() or self.ws.connected:
            try:
                self.ws.sock._sock.shutdown(socket.SHUT_RDWR)
            except OSError:  # closed meanwhile
                pass

    def _send_all(self):
        while True:
            with self._cond:
                while not self._frames and self._close is None and not self._done:
                    self._cond.wait()
                if self._frames:
                    text, size = self._frames.popleft()
                    self._bytes -= size
                else:
                    break
            try:
                self.ws.send(text)
            except Exception:  # the client went away; its handler sees the socket closed
                log.debug("a %s closed under its sender", self._sender.name, exc_info=True)
                return
        if self._close is None:
            return
        code, reason = self._close
        try:
            if self.too_slow:
                self.ws.send(json.dumps({"event": "server_error", "data": {"reason": reason, "retry_after": 1}}))
            self.ws.close(reason=code, message=reason)
        except Exception:
            log.debug("closing a %s that was already closed", self._sender.name, exc_info=True)
