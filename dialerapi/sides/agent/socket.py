"""The agent socket channel, /ws (decisions.md D9), with flask-sock.

Who connects (issue #28, `admit`):
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
  {agent_id, blocked, grace_minutes, items} on connect and after every change; then
  `dialer.callbacks` {agent_id, fallback_minutes, items} (the agent's personal callbacks, issue
  #40: rules.callbacks.agent_callbacks) on connect and whenever it differs from the last one that
  socket got; `agent.paused`, `agent.resumed`; `server_error` {reason}.
- agent to server: `agent.pause` {code, note?} and `agent.resume` {}.

Capacity (issue #27): a host holds at most WS_MAX_SOCKETS sockets (`socket_slots`, shared by the
workers of one gunicorn); past it a new socket gets `server_error` {reason: "at_capacity",
retry_after: seconds} and close 1013 (try again later) at once. Each process serving sockets
writes its host's count to dialerapi_socket_hosts every HEARTBEAT_SECONDS for /health and /metrics.

Changes reach the sockets through the outbox: every process runs one `EventHub` thread that
tails dialerapi_outbox every 0.5 s (`events.OutboxTail`: no row is skipped when rows commit out
of id order) and sends fresh snapshots to its own sockets of the agents
named there, so a change made by any process, host or the dialing engine arrives within 2 s.
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
from dialerapi.rules import agents, callbacks, claims, dialstate
from dialerapi.rules.events import OutboxTail
from dialerapi.web import auth
from dialerapi.web.agent_tokens import InvalidToken
from dialerapi.web.auth import public

log = logging.getLogger(__name__)

sock = Sock()

POLL_SECONDS = 0.5
PING_SECONDS = 25
POLICY_VIOLATION = 1008
TRY_AGAIN_LATER = 1013
HEARTBEAT_SECONDS = 5
# The largest message a panel sends is a pause with an 80-character note; 4 KiB leaves room for
# growth. A larger one closes the socket with 1009 before more of it is buffered (issue #17).
MAX_MESSAGE_BYTES = 4096
# simple-websocket 1.1 wakes a waiting receive() before it marks a socket closed for a message over
# the cap, so a receive() without a timeout can wait forever and leave the agent panel-active.
# Waking every second bounds that.
RECEIVE_WAKE_SECONDS = 1
# How long a refused socket waits for the client's close frame before the server drops it.
CLOSE_WAIT_SECONDS = 2
SERVER_OPTIONS = {"ping_interval": PING_SECONDS, "max_message_size": MAX_MESSAGE_BYTES}


class AgentConnection:
    """One open socket of an agent; sends are serialised because the hub thread sends too."""

    def __init__(self, ws, agent_id):
        self.ws = ws
        self.agent_id = agent_id
        self.callbacks = None  # the last dialer.callbacks data sent
        self._lock = threading.Lock()

    def send(self, event, data):
        with self._lock:
            self.ws.send(json.dumps({"event": event, "data": data}, ensure_ascii=False))


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

    def start(self):
        """Start this process's outbox and heartbeat thread (once; at its first /ws request)."""
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._tail, name="dialerapi-outbox", daemon=True)
                self._thread.start()

    def add(self, connection):
        with self._lock:
            self._connections.setdefault(connection.agent_id, set()).add(connection)

    def remove(self, connection):
        """Forget a closed socket; True when it was the agent's last one in this process."""
        with self._lock:
            sockets = self._connections.get(connection.agent_id, set())
            sockets.discard(connection)
            if not sockets:
                self._connections.pop(connection.agent_id, None)
            return not sockets

    def snapshot(self, agent_id):
        """The state events of an agent, read in one transaction: (outbound_blocked data,
        missed_activities data, callbacks data)."""
        config = self.app.config
        tz = config["DB_TIMEZONE"]

        def read(conn, now):
            report = agents.missed_activities(conn, now, tz, config["MISSED_ACTIVITY_GRACE_MINUTES"], agent_id=agent_id)
            return report, callbacks.agent_callbacks(conn, agent_id, now, tz, dialstate.load_config(conn))

        report, personal = self.app.extensions["dialerapi.db"].run(read, clock.now(tz))
        report.pop("ok")
        return {"agent_id": agent_id, "blocked": report["blocked"]}, report, personal

    def send_state(self, connections):
        """Send the state events to `connections` of one agent; a closed socket is dropped."""
        connections = list(connections)
        if not connections:
            return
        blocked, missed, personal = self.snapshot(connections[0].agent_id)
        for connection in connections:
            try:
                connection.send("dialer.outbound_blocked", blocked)
                connection.send("dialer.missed_activities", missed)
                if personal != connection.callbacks:
                    connection.send("dialer.callbacks", personal)
                    connection.callbacks = personal
            except Exception:  # the socket closed under us; its handler removes it
                log.debug("dropping an event for a closed socket", exc_info=True)

    def write_heartbeat(self):
        """Write this host's open sockets, capacity and refusals to dialerapi_socket_hosts."""
        state = self.slots.state()
        tz = self.app.config["DB_TIMEZONE"]
        self.app.extensions["dialerapi.db"].run(
            queries.write_socket_host, host=self.host[:255], open_sockets=state["open"], capacity=state["capacity"],
            refused=state["refused"], workers=json.dumps(state["workers"][:200]), updated_at=clock.now(tz))

    def _tail(self):
        db = self.app.extensions["dialerapi.db"]
        tail = OutboxTail()
        next_heartbeat = 0
        while True:
            try:
                if time.monotonic() >= next_heartbeat:
                    next_heartbeat = time.monotonic() + HEARTBEAT_SECONDS
                    self.write_heartbeat()
                rows = tail.poll(db)
                for agent_id in sorted({row["agent_id"] for row in rows}):
                    with self._lock:
                        connections = set(self._connections.get(agent_id, ()))
                    self.send_state(connections)
            except Exception:
                log.warning("outbox tailing failed; retrying", exc_info=True)
                time.sleep(2)
            time.sleep(POLL_SECONDS)


def decline_compression():
    """before_request hook: /ws never negotiates permessage-deflate (issue #17, finding 2).

    simple-websocket accepts any extension a client offers and wsproto inflates a compressed frame
    whole, before any size check: 1 MB on the wire became 2 GB in a worker. Panels' messages are a
    few hundred bytes, so compression saves nothing; without the offer header the handshake
    answers without the extension, and a frame marked compressed is a protocol error (1002).
    """
    if request.path == "/ws":
        request.environ.pop("HTTP_SEC_WEBSOCKET_EXTENSIONS", None)


def _reject(ws, reason, code=POLICY_VIOLATION, **data):
    """Send `server_error` {reason, **data} and close with `code`, then wait (at most CLOSE_WAIT_SECONDS)
    for the client's close frame, so the connection ends with a complete close handshake (RFC 6455 7.1.1)."""
    ws.send(json.dumps({"event": "server_error", "data": {"reason": reason, **data}}))
    ws.close(reason=code, message=reason)
    ws.thread.join(CLOSE_WAIT_SECONDS)


def _lookup():
    agent_id, extension = request.args.get("agentId"), request.args.get("extension")
    if agent_id is not None and agent_id.isdigit():
        return {"agent_id": int(agent_id)}
    if extension is not None and agents.EXTENSION.fullmatch(extension):
        return {"extension": extension}
    return None


def origin_allowed(origin, host, allowed):
    """Whether a socket whose handshake carries `origin` (None: not a browser) may connect to the
    service reached as `host` (the Host header), given WS_ALLOWED_ORIGINS `allowed` (a tuple)."""
    if origin is None or allowed == ("*",):
        return True
    origin = origin.strip().lower().rstrip("/")
    if allowed:
        return origin in allowed
    return bool(host) and origin.partition("://")[2] == host.strip().lower()


def admit(config):
    """Who this socket's handshake names: (lookup, None) with `lookup` {agent_id} or {extension} plus
    "token_agent_id" when a token named the agent, or (None, reason) for a refusal (D9, issue #28)."""
    if not origin_allowed(request.headers.get("Origin"), request.headers.get("Host"), config["WS_ALLOWED_ORIGINS"]):
        return None, "origin_not_allowed"
    url_keys = [key for key in request.args.getlist("key") if key]
    if url_keys and not config["WS_ALLOW_KEY_IN_URL"]:
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
        return _reject(ws, refusal)
    hub = app.extensions["dialerapi.events"]
    hub.start()
    # Before any database work: a full host answers at once, whatever the database is doing.
    if not hub.slots.acquire():
        return _reject(ws, "at_capacity", TRY_AGAIN_LATER, retry_after=app.config["WS_RETRY_AFTER_SECONDS"])
    try:
        _serve(app, hub, ws, lookup)
    finally:
        hub.slots.release()


def _serve(app, hub, ws, lookup):
    """The agent's session on an admitted socket (`lookup` from `admit`): find the agent, mark the
    panel active, send state and answer frames until the socket closes; then mark the panel inactive
    if it was the last one."""
    token_agent_id = lookup.pop("token_agent_id", None)
    db = app.extensions["dialerapi.db"]
    try:
        agent = db.run(agents.find_agent, **lookup) if lookup else None
    except (agents.UnknownAgent, agents.UnknownExtension):
        agent = None
    # A token of a removed agent opens nothing; an extension that is another agent's is a mismatch.
    if agent is None:
        return _reject(ws, "unknown_agent")
    if token_agent_id is not None and agent["id"] != token_agent_id:
        return _reject(ws, "agent_mismatch")

    connection = AgentConnection(ws, agent["id"])
    hub.add(connection)
    # A connected panel is what makes an agent "panel-active" for the claim.
    db.run(claims.set_availability, agent["id"], panel_active=True)
    try:
        hub.send_state([connection])
        while True:
            frame = ws.receive(timeout=RECEIVE_WAKE_SECONDS)
            if frame is None:
                if not ws.connected:
                    break
                continue
            event, reply = _handle(db, agent["id"], frame)
            connection.send(event, reply)
    finally:
        if hub.remove(connection):
            db.run(claims.set_availability, agent["id"], panel_active=False)


def _handle(db, agent_id, frame):
    """Answer one frame from the agent: (event, data)."""
    try:
        message = json.loads(frame)
        event, data = message["event"], message.get("data") or {}
        if not isinstance(data, dict):
            raise TypeError("data must be an object")
        # A \ud800 escape parses to a lone surrogate, which utf8mb4 cannot store (issue #17).
        json.dumps(data, ensure_ascii=False).encode("utf-8")
    except (ValueError, TypeError, KeyError, AttributeError, RecursionError):
        return "server_error", {"reason": "invalid_message"}
    if event == "agent.pause":
        try:
            return "agent.paused", db.run(agents.pause, agent_id, data.get("code"), data.get("note"))
        except agents.InvalidPause as exc:
            return "server_error", {"reason": exc.reason}
    if event == "agent.resume":
        return "agent.resumed", db.run(agents.resume, agent_id)
    return "server_error", {"reason": "unknown_event"}
