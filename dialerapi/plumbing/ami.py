"""A minimal Asterisk Manager Interface (AMI) client for the health check (decisions.md D8).

AMI is a line protocol over TCP (port 5038): the server greets with one banner line
(`Asterisk Call Manager/5.0.1`); each message is `Key: Value` lines ended by a blank line. The
check logs in, sends `Action: Ping` (answered `Response: Success` with `Ping: Pong`), logs off,
all within a timeout under 2 s. Events the server sends in between are skipped by ActionID.
"""

import socket
import time

DEFAULT_TIMEOUT = 1.5


class AmiError(Exception):
    """The AMI server could not be reached, did not speak AMI, refused the login or the ping."""


class _Connection:
    def __init__(self, sock, deadline):
        self.sock = sock
        self.deadline = deadline
        self.buffer = b""

    def _read_until(self, marker):
        while marker not in self.buffer:
            remaining = self.deadline - time.monotonic()
            if remaining <= 0:
                raise AmiError("timed out waiting for the AMI server")
            self.sock.settimeout(remaining)
            chunk = self.sock.recv(4096)
            if not chunk:
                raise AmiError("the AMI server closed the connection")
            self.buffer += chunk
        head, _, self.buffer = self.buffer.partition(marker)
        return head.decode("utf-8", "replace")

    def banner(self):
        line = self._read_until(b"\r\n")
        if "Call Manager" not in line:
            raise AmiError(f"not an AMI banner: {line[:60]!r}")
        return line

    def send(self, action, action_id, **fields):
        lines = [f"Action: {action}", f"ActionID: {action_id}", *(f"{k}: {v}" for k, v in fields.items())]
        self.sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())

    def response(self, action_id):
        """The next message whose ActionID is `action_id` (events in between are skipped)."""
        while True:
            message = {}
            for line in self._read_until(b"\r\n\r\n").split("\r\n"):
                key, sep, value = line.partition(":")
                if sep:
                    message[key.strip().lower()] = value.strip()
            if message.get("actionid") == action_id:
                return message


def ping(host, port, username, secret, timeout=DEFAULT_TIMEOUT):
    """Log in to the AMI at host:port, ping and log off; return the round trip in milliseconds.

    Raises AmiError (refused connection, timeout, no banner, login refused, ping failed).
    """
    started = time.monotonic()
    deadline = started + timeout
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            conn = _Connection(sock, deadline)
            conn.banner()
            conn.send("Login", "health-login", Username=username, Secret=secret, Events="off")
            login = conn.response("health-login")
            if login.get("response", "").lower() != "success":
                raise AmiError(f"login refused: {login.get('message', 'no message')}")
            conn.send("Ping", "health-ping")
            pong = conn.response("health-ping")
            if pong.get("response", "").lower() != "success":
                raise AmiError(f"ping failed: {pong.get('message', 'no message')}")
            conn.send("Logoff", "health-logoff")
    except OSError as exc:
        raise AmiError(f"cannot reach AMI at {host}:{port}: {exc}") from None
    return round((time.monotonic() - started) * 1000, 2)
