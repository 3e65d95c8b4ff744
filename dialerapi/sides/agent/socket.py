"""The agent socket channel, /ws (decisions.md D9), with flask-sock.

Who connects (`admit`):
- an agent panel in a browser, with its agent's token (`?token=`, since a browser cannot set
  headers on a socket, or a header): the agent is the token's; an `?agentId=` or `?extension=`
  that names another agent is refused (`agent_mismatch`);
- a server-side client with WS_SECRET in a header, and `?agentId=` or `?extension=`;
- WS_SECRET in the URL (`?key=`) is refused (`key_in_url`) unless WS_ALLOW_KEY_IN_URL is on for a
  migration window, which logs a warning on each use.
A socket whose `Origin` (sent by every browser) is not allowed (WS_ALLOWED_ORIGINS; by default the
service's own origin) is refused (`origin_not_allowed`). Every refusal is `server_error` {reason}
and close 1008. Frames are JSON text `{"event": NAME, "data": {...}}`:

- server to agent: `dialer.outbound_blocked` {agent_id, blocked} and `dialer.missed_activities`
  {agent_id, blocked, grace_minutes, items} on connect and whenever either differs from the last
  pair that socket got; then `dialer.callbacks` {agent_id, fallback_minutes, items} (the agent's
  personal callbacks: rules.leads.callbacks.agent_callbacks) on connect and whenever it
  differs from the last one that socket got; `agent.paused`, `agent.resumed`; `server_error`
  {reason}. A socket never gets the same state twice in a row: an outbox row committed before the
  socket connected, and tailed after, changes nothing the panel has.
- agent to server: `agent.pause` {code, note?} and `agent.resume` {}.

Capacity: a host holds at most WS_MAX_SOCKETS sockets (`socket_slots`, shared by the
workers of one gunicorn); past it a new socket gets `server_error` {reason: "at_capacity",
retry_after: seconds} and close 1013 (try again later) at once. Each process serving sockets
writes its host's count to dialerapi_socket_hosts every HEARTBEAT_SECONDS for /health and /metrics.

Changes reach the sockets through the outbox: every process serving sockets runs one `EventHub`
thread that tails dialerapi_outbox every POLL_SECONDS (`events.OutboxTail`: no row is skipped when
rows commit out of id order) and sends fresh snapshots to its own sockets of the agents named
there, so a change made by any process, host or the dialing engine reaches the agent's socket
within 250 ms at the p99 (D9 said 2 s). A poll that finds nothing is one primary-key
range read: 10 a second per process serving sockets, however many sockets it holds.

Restart: gunicorn's SIGTERM (`systemctl restart`, a rolling upgrade) makes the worker
stop accepting; the hub sees it (`EventHub.watch`, set by deploy/gunicorn.conf.py) within a poll,
marks its agents panel-inactive, then closes every socket with 1012 (service restart), so each
panel reconnects through nginx to another host and gets a fresh snapshot there. A socket opened on
a draining host gets `server_error` {reason: "draining"} and 1012 too. The host's row in
dialerapi_socket_hosts says it is draining (/health).
"""

import json
import logging
import os
import socket
import threading
import time

from flask import current_app, request
from flask_sock import Sock

from dialerapi.plumbing import clock
from dialerapi.plumbing.db import queries
from dialerapi.plumbing.socket_slots import SocketSlots
from dialerapi.rules.agents import roster
from dialerapi.rules.core import vocabulary
from dialerapi.rules.events.outbox import OutboxTail
from dialerapi.rules.leads import callbacks
from dialerapi.web import auth
from dialerapi.web.agent_tokens import InvalidToken
from dialerapi.web.auth import origin_allowed, public
from dialerapi.web.sockets import RECEIVE_WAKE_SECONDS, SERVICE_RESTART, TRY_AGAIN_LATER, SendQueue, reject

log = logging.getLogger(__name__)

sock = Sock()

# A change waits for the next poll: 0 to 0.1 s, so the p99 stays under 250 ms with room for the
# snapshot read and the send.
POLL_SECONDS = 0.1
PING_SECONDS = 25
HEARTBEAT_SECONDS = 5
# The largest message a panel sends is a pause with an 80-character note; 4 KiB leaves room for
# growth. A larger one closes the socket with 1009 before more of it is buffered.
MAX_MESSAGE_BYTES = 4096
SERVER_OPTIONS = {"ping_interval": PING_SECONDS, "max_message_size": MAX_MESSAGE_BYTES}


class AgentConnection:
    """One open socket of an agent. Its frames go through its own SendQueue, so the hub
    thread that sends to every panel of the process never waits on this one."""

    def __init__(self, ws, agent_id, max_bytes, on_too_slow=None):
        self.ws = ws
        self.agent_id = agent_id
        self.state = None  # the last (dialer.outbound_blocked, dialer.missed_activities) data sent
        self.callbacks = None  # the last dialer.callbacks data sent
        self.queue = SendQueue(ws, max_bytes, name=f"panel-{agent_id}", on_too_slow=on_too_slow)

    def send(self, event, data):
        self.queue.put(json.dumps({"event": event, "data": data}, ensure_ascii=False))

    def close(self, code, reason):
        """Close the socket with `code` after what is queued; its handler sees it closed within
        RECEIVE_WAKE_SECONDS of the close."""
        self.queue.close(code, reason)


class EventHub:
    """This process's agent sockets and the thread that tails the outbox for them."""

    def __init__(self, app):
        self.app = app
        self.slots = SocketSlots(app.config["WS_MAX_SOCKETS"])
        # "hostname/bind" of this gunicorn (deploy/gunicorn.conf.py exports the bind), else of this process.
        self.host = f"{socket.gethostname()}/{os.environ.get('DIALERAPI_INSTANCE') or f'pid{os.getpid()}'}"
        self._lock = threading.Lock()
        self._connections = {}
        self._thread = None
        self._stopping = lambda: False
        self.draining = False
        self.too_slow = 0  # sockets closed for falling behind (SendQueue), since this process started
        self.last_pass = None  # when the outbox thread last finished a poll and its sends (monotonic)
        # Other feeds on this process's sockets (the supervisor board): objects with
        # `changed(agent_ids)`, called after every poll with the agents named by the outbox or the
        # agent state history since the last (often none), and `drain()`.
        self.listeners = []

    def watch(self, stopping):
        """Drain this process's sockets once `stopping()` (a callable, checked every poll) is true:
        deploy/gunicorn.conf.py passes "the worker got SIGTERM" (`not worker.alive`)."""
        self._stopping = stopping

    def start(self):
        """Start this process's outbox and heartbeat thread, once: at its first admitted socket,
        before that socket's snapshot is read.

        Where the tail starts (the newest outbox row) is read here, in the caller, not by the thread
        at its first poll: a change committed between the first socket's snapshot and a late first
        poll was never sent (the thread writes a heartbeat first; CI, stop 44). Raises
        DatabaseUnavailable when the database cannot be read; the next socket tries again."""
        with self._lock:
            if self._thread is None:
                tails = (OutboxTail(), OutboxTail(table="states"))
                for tail in tails:
                    tail.poll(self.app.extensions["dialerapi.db"])
                self.last_pass = time.monotonic()
                self._thread = threading.Thread(target=self._tail, args=tails, name="dialerapi-outbox", daemon=True)
                self._thread.start()
                # Its own thread: a fan-out that stalls is still reported.
                threading.Thread(target=self._beat, name="dialerapi-heartbeat", daemon=True).start()

    def count_too_slow(self):
        """A SendQueue of this process closed its socket for falling behind."""
        with self._lock:
            self.too_slow += 1

    def take_slot(self, ws):
        """Take a slot of this host's socket pool for `ws` (an agent's or a board's), or refuse it
        and return False: `draining` with 1012 on a host being restarted, `at_capacity` with 1013
        on a full one. Before any database work: a full host answers at once, whatever the database
        is doing."""
        if self.draining:
            reject(ws, "draining", SERVICE_RESTART)
            return False
        if not self.slots.acquire():
            reject(ws, "at_capacity", TRY_AGAIN_LATER, retry_after=self.app.config["WS_RETRY_AFTER_SECONDS"])
            return False
        return True

    def add(self, connection):
        """Hold a new socket; False (and not held) once this process is draining."""
        with self._lock:
            if self.draining:
                return False
            self._connections.setdefault(connection.agent_id, set()).add(connection)
            return True

    def remove(self, connection):
        """Forget a closed socket; True when it was the agent's last one in this process (False
        when `drain` already took it, having marked the agent itself)."""
        with self._lock:
            sockets = self._connections.get(connection.agent_id, set())
            if connection not in sockets:
                return False
            sockets.discard(connection)
            if not sockets:
                self._connections.pop(connection.agent_id, None)
            return not sockets

    def drain(self):
        """Hand this process's sockets to the other hosts: mark their agents
        panel-inactive, say so in the host's heartbeat, then close each socket with 1012.

        The agents are marked before any close is sent, so a panel that reconnects at once to another
        host (which marks it active) is never marked inactive after it by this one."""
        with self._lock:
            if self.draining:
                return
            self.draining = True
            connections = [connection for group in self._connections.values() for connection in group]
            agent_ids = sorted(self._connections)
            self._connections.clear()
        log.info("draining %d agent sockets for a restart", len(connections))

        def mark_inactive(conn):
            for agent_id in agent_ids:
                roster.set_availability(conn, agent_id, panel_active=False)

        try:
            self.app.extensions["dialerapi.db"].run(mark_inactive)
            self.write_heartbeat()
        except Exception:  # the sockets close all the same; their panels reconnect elsewhere
            log.warning("could not record the drain in the database", exc_info=True)
        for connection in connections:
            connection.close(SERVICE_RESTART, "service_restart")
        for listener in list(self.listeners):
            listener.drain()

    def snapshot(self, agent_id, connecting=False):
        """The state events of an agent, read in one transaction: (outbound_blocked data,
        missed_activities data, callbacks data). `connecting`: for a socket that has just
        connected, the same transaction marks the agent panel-active (one transaction per connect:
        a host takes over another's sockets at once in a restart). Raises
        vocabulary.UnknownAgent."""
        config = self.app.config
        tz = config["DB_TIMEZONE"]

        def read(conn, now):
            agent = roster.find_agent(conn, agent_id=agent_id)
            if connecting:
                # A connected panel is what makes an agent "panel-active" for the claim.
                roster.set_availability(conn, agent_id, panel_active=True)
            report = roster.missed_activities(conn, now, tz, config["MISSED_ACTIVITY_GRACE_MINUTES"], agent=agent)
            return report, callbacks.agent_callbacks(conn, agent_id, now, tz)

        report, personal = self.app.extensions["dialerapi.db"].run(read, clock.now(tz))
        report.pop("ok")
        return {"agent_id": agent_id, "blocked": report["blocked"]}, report, personal

    def send_state(self, connections, connecting=False):
        """Send the state events to `connections` of one agent, each only when it differs from what
        that socket last got; a closed socket is dropped. `connecting`: as for `snapshot`. Raises
        vocabulary.UnknownAgent."""
        connections = list(connections)
        if not connections:
            return
        blocked, missed, personal = self.snapshot(connections[0].agent_id, connecting)
        for connection in connections:
            try:
                if (blocked, missed) != connection.state:
                    connection.send("dialer.outbound_blocked", blocked)
                    connection.send("dialer.missed_activities", missed)
                    connection.state = (blocked, missed)
                if personal != connection.callbacks:
                    connection.send("dialer.callbacks", personal)
                    connection.callbacks = personal
            except Exception:  # the socket closed under us; its handler removes it
                log.debug("dropping an event for a closed socket", exc_info=True)

    def write_heartbeat(self):
        """Write this host's open sockets, capacity, refusals, fan-out lag (how long ago the outbox
        thread last finished a pass; NULL before it started) and sockets closed for falling behind
        to dialerapi_socket_hosts."""
        state = self.slots.state()
        tz = self.app.config["DB_TIMEZONE"]
        self.app.extensions["dialerapi.db"].run(
            queries.write_socket_host, host=self.host[:255], open_sockets=state["open"], capacity=state["capacity"],
            refused=state["refused"], workers=json.dumps(state["workers"][:200]), draining=int(self.draining),
            fanout_lag_ms=None if self.last_pass is None else round((time.monotonic() - self.last_pass) * 1000),
            too_slow=self.too_slow,
            updated_at=clock.now(tz))

    def _beat(self):
        while True:
            try:
                self.write_heartbeat()
            except Exception:
                log.warning("could not write this host's socket heartbeat; retrying", exc_info=True)
            time.sleep(HEARTBEAT_SECONDS)

    def _tail(self, tail, states):
        db = self.app.extensions["dialerapi.db"]
        while True:
            try:
                if not self.draining and self._stopping():
                    self.drain()
                rows = tail.poll(db)
                changed = {row["agent_id"] for row in rows} | {row["agent_id"] for row in states.poll(db)}
                for agent_id in sorted({row["agent_id"] for row in rows}):
                    with self._lock:
                        connections = set(self._connections.get(agent_id, ()))
                    try:
                        self.send_state(connections)
                    except vocabulary.UnknownAgent:  # removed from the roster; their sockets close on their own
                        log.info("no state to send: agent %s is not on the roster", agent_id)
                # After the panels: a panel's 250 ms does not wait for the board's read.
                for listener in list(self.listeners):
                    listener.changed(changed)
                self.last_pass = time.monotonic()
            except Exception:
                log.warning("outbox tailing failed; retrying", exc_info=True)
                time.sleep(2)
            time.sleep(POLL_SECONDS)


def decline_compression():
    """before_request hook: /ws never negotiates permessage-deflate (finding 2).

    simple-websocket accepts any extension a client offers and wsproto inflates a compressed frame
    whole, before any size check: 1 MB on the wire became 2 GB in a worker. Panels' messages are a
    few hundred bytes, so compression saves nothing; without the offer header the handshake
    answers without the extension, and a frame marked compressed is a protocol error (1002).
    """
    if request.path in ("/ws", "/board/ws"):
        request.environ.pop("HTTP_SEC_WEBSOCKET_EXTENSIONS", None)


def _lookup():
    agent_id, extension = request.args.get("agentId"), request.args.get("extension")
    if agent_id is not None and agent_id.isdigit():
        return {"agent_id": int(agent_id)}
    if extension is not None and roster.EXTENSION.fullmatch(extension):
        return {"extension": extension}
    return None


def admit(config):
    """Who this socket's handshake names: (lookup, None) with `lookup` {agent_id} or {extension} plus
    "token_agent_id" when a token named the agent, or (None, reason) for a refusal (D9)."""
    if not origin_allowed(request.headers.get("Origin"), request.headers.get("Host"), config["WS_ALLOWED_ORIGINS"]):
        return None, "origin_not_allowed"
    url_keys = [key for key in request.args.getlist("key") if key]
    if url_keys and not config["WS_ALLOW_KEY_IN_URL"]:
        return None, "key_in_url"
    # A service key in any other parameter (`token=` included) is refused whatever that setting says.
    if auth.keys_in_url(request.args, config, skip=("key",)):
        return None, "key_in_url"
    keys = auth.presented_keys(request.headers) + [token for token in request.args.getlist("token") if token]
    try:
        caller = auth.identify(keys, config)
        if caller is None and url_keys:
            caller = auth.identify(url_keys, config)
            if caller is not None:
                log.warning("WS_SECRET in a /ws URL (WS_ALLOW_KEY_IN_URL): move this panel to an agent token")
    except InvalidToken as exc:
        return None, exc.reason
    lookup = _lookup()
    if caller is not None and caller.role == auth.AGENT:
        if lookup and lookup.get("agent_id", caller.agent_id) != caller.agent_id:
            return None, "agent_mismatch"
        return {**(lookup or {"agent_id": caller.agent_id}), "token_agent_id": caller.agent_id}, None
    if caller is None or caller.role != auth.CRM:
        return None, "unauthorized"
    return lookup or {}, None


@sock.route("/ws")
@public
def agent_socket(ws):
    """One agent panel's connection (D9); see the module docstring for the protocol."""
    app = current_app._get_current_object()
    lookup, refusal = admit(app.config)
    if refusal:
        return reject(ws, refusal)
    hub = app.extensions["dialerapi.events"]
    if not hub.take_slot(ws):
        return None
    try:
        hub.start()
        _serve(app, hub, ws, lookup)
    finally:
        hub.slots.release()


def _serve(app, hub, ws, lookup):
    """The agent's session on an admitted socket (`lookup` from `admit`): find the agent, mark the
    panel active, send state and answer frames until the socket closes; then mark the panel inactive
    if it was the last one."""
    token_agent_id = lookup.pop("token_agent_id", None)
    db = app.extensions["dialerapi.db"]
    agent_id = lookup.get("agent_id")
    if agent_id is None:
        # An extension: the agent is found first. An agent id (a token's, a server-side client's) is
        # looked up in the transaction that marks the panel active and reads the state (`snapshot`).
        try:
            agent_id = db.run(roster.find_agent, **lookup)["id"] if lookup else None
        except roster.UnknownExtension:
            pass
        if agent_id is None:
            return reject(ws, "unknown_agent")
    # An extension that is another agent's than the token's is a mismatch.
    if token_agent_id is not None and agent_id != token_agent_id:
        return reject(ws, "agent_mismatch")

    connection = AgentConnection(ws, agent_id, app.config["WS_SEND_QUEUE_BYTES"], on_too_slow=hub.count_too_slow)
    if not hub.add(connection):
        connection.queue.stop()
        return reject(ws, "draining", SERVICE_RESTART)
    try:
        try:
            hub.send_state([connection], connecting=True)
        except vocabulary.UnknownAgent:  # a token of a removed agent opens nothing
            return reject(ws, "unknown_agent")
        while True:
            frame = ws.receive(timeout=RECEIVE_WAKE_SECONDS)
            if frame is None:
                if not ws.connected:
                    break
                continue
            event, reply = _handle(db, agent_id, frame, app.config["DB_TIMEZONE"])
            connection.send(event, reply)
    finally:
        connection.queue.stop()
        if hub.remove(connection):
            db.run(roster.set_availability, agent_id, panel_active=False)


def _handle(db, agent_id, frame, tz):
    """Answer one frame from the agent: (event, data). `tz`: DB_TIMEZONE."""
    try:
        message = json.loads(frame)
        event, data = message["event"], message.get("data") or {}
        if not isinstance(data, dict):
            raise TypeError("data must be an object")
        # A \ud800 escape parses to a lone surrogate, which utf8mb4 cannot store.
        json.dumps(data, ensure_ascii=False).encode("utf-8")
    except (ValueError, TypeError, KeyError, AttributeError, RecursionError):
        return "server_error", {"reason": "invalid_message"}
    if event == "agent.pause":
        try:
            return "agent.paused", db.run(roster.pause, agent_id, data.get("code"), data.get("note"), now=clock.now(tz))
        except roster.InvalidPause as exc:
            return "server_error", {"reason": exc.reason}
    if event == "agent.resume":
        return "agent.resumed", db.run(roster.resume, agent_id)
    return "server_error", {"reason": "unknown_event"}
