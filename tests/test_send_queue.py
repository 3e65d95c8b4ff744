"""No socket write holds up a thread that serves others (issue #64 item 1): each socket's own
bounded send queue (dialerapi.web.sockets.SendQueue), the close of a client that falls behind, and
/health's report of a socket host whose fan-out falls behind.

The queue is driven here over a real socket pair whose far end reads or does not; the 8,000-agent
floor with boards that never read is tests/faults/test_slow_clients.py (make faults).
"""

import socket
import threading
import time

import pytest

from conftest import MONITOR_SECRET, TZ
from dialerapi.plumbing import clock
from dialerapi.web.sockets import CLOSE_WAIT_SECONDS, SendQueue

WAIT_SECONDS = 10
HEALTH = {"Authorization": f"Bearer {MONITOR_SECRET}"}


class PairedSocket:
    """The server end of a socket over a real socket pair with small buffers, shaped as the
    websocket SendQueue writes to: `send(text)` writes one line in one `sock.send` (as
    simple-websocket writes a frame), `close(reason, message)` writes a last line; `peer` is the
    client's end, which reads or does not."""

    def __init__(self):
        self.sock, self.peer = socket.socketpair()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
        self.peer.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        self.connected = True

    def send(self, text):
        self.sock.send(text.encode() + b"\n")

    def close(self, reason=None, message=None):
        self.sock.send(f"close {reason} {message}\n".encode())
        self.connected = False

    def read_all(self):
        """Every line the peer gets until the server end is shut down or WAIT_SECONDS pass."""
        self.peer.settimeout(WAIT_SECONDS)
        data = b""
        try:
            while chunk := self.peer.recv(65536):
                data += chunk
                if data.endswith(b"\n") and data.rsplit(b"\n", 2)[-2].startswith(b"close "):
                    break
        except TimeoutError:
            pass
        return data.decode().splitlines()


def sending(paired):
    """Wait until the first bytes reach the peer: the sender has taken the first frame off the queue."""
    paired.peer.settimeout(WAIT_SECONDS)
    assert paired.peer.recv(1, socket.MSG_PEEK)


def returns(call, *args):
    """call(*args) run in a thread: its result, failing if it has not returned within WAIT_SECONDS
    (a put that waits on its client never does)."""
    result = []
    thread = threading.Thread(target=lambda: result.append(call(*args)), daemon=True)
    thread.start()
    thread.join(WAIT_SECONDS)
    assert result, f"{call.__name__} waited on a client that does not read"
    return result[0]


@pytest.fixture
def paired():
    pair = PairedSocket()
    yield pair
    pair.sock.close()
    pair.peer.close()


def test_frames_reach_a_reading_client_in_order_and_one_larger_than_the_bound_is_taken_alone(paired):
    queue = SendQueue(paired, max_bytes=1000)
    big = "b" * 50_000  # a board's snapshot: more than the bound, taken when nothing is queued
    assert returns(queue.put, big) is True
    sending(paired)
    for n in range(5):
        assert returns(queue.put, f"frame {n}") is True
    queue.close(1000, "done")
    assert paired.read_all() == [big] + [f"frame {n}" for n in range(5)] + ["close 1000 done"]
    assert not queue.too_slow


def test_a_client_that_stops_reading_never_holds_up_the_sender_and_is_closed_too_slow(paired):
    """The fan-out's put returns at once while the socket's own sender waits on the client; past
    the bound the client is closed with `too_slow` and 1013, its queued frames dropped; a client
    that reads again gets what was in flight, then the reason and the close."""
    told = []
    queue = SendQueue(paired, max_bytes=1000, on_too_slow=lambda: told.append(1))
    in_flight = "s" * 100_000  # more than the socket pair's buffers: the sender waits in it
    assert returns(queue.put, in_flight) is True
    sending(paired)
    for n in range(9):
        assert returns(queue.put, f"{n:0>99}") is True  # 900 bytes queued
    assert returns(queue.put, "x" * 200) is False, "past the bound"
    assert queue.too_slow and told == [1]
    assert returns(queue.put, "after") is False, "nothing more once closed"
    lines = paired.read_all()
    assert lines == [in_flight, '{"event": "server_error", "data": {"reason": "too_slow", "retry_after": 1}}',
                     "close 1013 too_slow"]
    assert told == [1]


def test_a_client_that_reads_every_frame_of_names_in_devanagari_is_never_closed_too_slow(paired):
    """What is sent is taken off the bound in the bytes it was counted in: a board of agents named
    in Devanagari (3 bytes a character), read at once, is never more than one frame behind, however
    long it stays open."""
    queue = SendQueue(paired, max_bytes=1000)
    frame = "मीना" * 75  # 900 bytes: two queued would pass the bound
    received = []
    reader = threading.Thread(target=lambda: received.extend(paired.read_all()), daemon=True)
    reader.start()
    for _ in range(20):
        assert returns(queue.put, frame) is True
        deadline = time.monotonic() + WAIT_SECONDS
        while queue.queued_bytes() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert queue.queued_bytes() == 0, "the frame was sent and is off the bound"
    queue.close(1000, "done")
    reader.join(WAIT_SECONDS)
    assert received == [frame] * 20 + ["close 1000 done"]
    assert not queue.too_slow


def test_the_bound_counts_bytes_not_characters(paired):
    """WS_SEND_QUEUE_BYTES is bytes on the wire: 300 characters of Devanagari are 900 bytes."""
    queue = SendQueue(paired, max_bytes=1000)
    assert returns(queue.put, "s" * 100_000) is True
    sending(paired)
    assert returns(queue.put, "मीना" * 75) is True  # 300 characters, 900 bytes queued
    assert returns(queue.put, "x" * 200) is False, "900 + 200 bytes are past the bound of 1000"
    assert queue.too_slow


def test_a_client_that_reads_nothing_is_cut_after_the_close_wait(paired):
    queue = SendQueue(paired, max_bytes=1000)
    assert returns(queue.put, "s" * 100_000) is True
    sending(paired)
    assert returns(queue.put, "q" * 900) is True
    assert returns(queue.put, "q" * 200) is False
    # The sender is stuck in the first frame until the connection is cut, CLOSE_WAIT_SECONDS on.
    queue._sender.join(CLOSE_WAIT_SECONDS + WAIT_SECONDS)
    assert not queue._sender.is_alive(), "the sender of a client that reads nothing was never let go"
    paired.peer.settimeout(WAIT_SECONDS)
    received = b""
    while chunk := paired.peer.recv(1 << 20):
        received += chunk
    assert len(received) < 100_000 + 1, "cut in the first frame: nothing queued after it was sent"


def test_a_close_asked_for_goes_after_what_is_queued(paired):
    """A host's drain (1012) closes a socket after the frames already queued for it."""
    queue = SendQueue(paired, max_bytes=10_000)
    for n in range(3):
        queue.put(f"frame {n}")
    queue.close(1012, "service_restart")
    assert queue.put("late") is False
    assert paired.read_all() == ["frame 0", "frame 1", "frame 2", "close 1012 service_restart"]


# --- /health: a socket host whose fan-out falls behind ------------------------------------------------

def test_health_reports_a_socket_host_whose_fan_out_falls_behind(app, client, sql, monkeypatch):
    """SOCKET_FANOUT_ALERT_SECONDS (5): a host whose outbox thread last finished a pass longer ago
    than that at its heartbeat makes /health 503 and is named; one that keeps up, one that has not
    started its thread, and the previous release's row (no lag measured) do not."""
    hub = app.extensions["dialerapi.events"]
    # The session's app outlives this test: what it changes of the hub is put back after it.
    monkeypatch.setattr(hub, "last_pass", None)
    monkeypatch.setattr(hub, "too_slow", 0)
    hub.write_heartbeat()  # no socket yet: the thread has not started
    answer = client.get("/health", headers=HEALTH).get_json()
    assert answer["checks"]["agent_sockets"] == {"ok": True, "limit_seconds": 5, "behind": [], "error": None}
    sql("INSERT INTO dialerapi_socket_hosts (host, open_sockets, capacity, refused, workers, draining, updated_at)"
        " VALUES ('previous-release/8001', 3, 2000, 0, '[3]', 0, %s)", clock.now(TZ).replace(tzinfo=None))
    hub.last_pass = time.monotonic() - 0.2
    hub.write_heartbeat()
    response = client.get("/health", headers=HEALTH)
    assert response.status_code == 200, response.get_json()["checks"]
    hub.last_pass = time.monotonic() - 6
    hub.count_too_slow()
    hub.write_heartbeat()
    response = client.get("/health", headers=HEALTH)
    answer = response.get_json()
    assert response.status_code == 503 and answer["status"] == "unhealthy"
    check = answer["checks"]["agent_sockets"]
    assert not check["ok"] and [row["host"] for row in check["behind"]] == [hub.host]
    assert check["behind"][0]["fanout_lag_seconds"] >= 6 and "SOCKET_FANOUT_ALERT_SECONDS" in check["error"]
    hosts = {row["host"]: row for row in answer["metrics"]["agent_sockets"]["hosts"]}
    assert hosts[hub.host]["too_slow"] == 1 and hosts["previous-release/8001"]["fanout_lag_seconds"] is None
    assert answer["metrics"]["agent_sockets"]["too_slow"] == 1
