"""The supervisor board's socket, /board/ws, with flask-sock.

Who connects: a supervisor, with a supervisor token (`?token=`, since a browser cannot set headers
on a socket, or a header) or, from a server, SUPERVISOR_SECRET in a header; the key in the URL is
refused (`key_in_url`). The Origin rule is the agents' socket's (WS_ALLOWED_ORIGINS). A refusal is
`server_error` {reason} and close 1008, as on /ws.

Frames, server to board, JSON text `{"event": NAME, "data": {...}}`:
- `board.snapshot` {now (ISO 8601 UTC to the millisecond, the service clock), settings:
  {pause_alert_seconds, amber_points}, floor, agents} on connect
  (and so after every reconnect): rules.views.board.snapshot, shared by boards joining together (BoardFeed.join);
- `board.update` {now (as the snapshot's), agents: [changed rows], removed: [agent_id], floor?}: one frame per batch of
  changes, with the rows of the agents whose state, call or missed activities changed since the
  last frame (the outbox and the agent state history, tailed by the agents' EventHub), the agents
  whose wrap-up has just ended, and the tiles when they differ from the last ones sent (read every
  TILES_SECONDS).
The board sends nothing; a frame from it is ignored. Sockets share the host's socket pool
(WS_MAX_SOCKETS) with the agents' panels, and close with 1012 when the host drains. One
credential holds at most BOARD_MAX_PER_TOKEN (a supervisor token) or BOARD_MAX_PER_SECRET
(SUPERVISOR_SECRET) boards open in a worker process; the next gets `server_error`
`too_many_boards` {limit, retry_after} and close 1013.
"""

import collections
import hashlib
import json
import logging
import threading
import time

from flask import current_app, request
from flask_sock import Sock

from dialerapi.plumbing import clock
from dialerapi.rules.agents import state_history
from dialerapi.rules.views import board
from dialerapi.web import agent_tokens, auth
from dialerapi.web.agent_tokens import InvalidToken
from dialerapi.web.auth import public
from dialerapi.web.sockets import RECEIVE_WAKE_SECONDS, SERVICE_RESTART, TRY_AGAIN_LATER, SendQueue, reject

log = logging.getLogger(__name__)

sock = Sock()

# Tiles (leads due, calls ringing, abandon rates) change without an agent's change: read this often
# while a board is open, so such a change shows within a second.
TILES_SECONDS = 0.5
_feed_lock = threading.Lock()


class BoardFeed:
    """This process's board sockets, fed by the agents' EventHub thread (`changed`, every poll).

    A snapshot is read and sent under the feed's lock; a poll that finds the lock taken keeps its
    agent ids for the next one, so an update never carries state older than a snapshot it follows,
    and the panels' hub thread never waits for a board's read.
    """

    def __init__(self, app):
        self.app = app
        self._lock = threading.Lock()
        self._sockets = {}  # ws -> its SendQueue (the hub thread never waits on one board)
        self._pending = set()
        self._rows = {}  # agent_id -> the last row sent
        self._tiles = None
        self._tiles_read = 0.0
        # Agents (and the tiles) a joining board's snapshot showed otherwise than the feed's rows:
        # their next read is sent even if it equals those rows, since the new board differs.
        self._force = set()
        self._force_tiles = False
        self._version = 0  # one more at every update read: a snapshot kept from before is not shared
        self._shared = None  # the last snapshot read: (when its read began, _version then, its frame)
        self.snapshots_read = 0

    def settings(self):
        return {"pause_alert_seconds": self.app.config["BOARD_PAUSE_ALERT_SECONDS"], "amber_points": board.AMBER_POINTS}

    def join(self, ws):
        """Send `ws` a snapshot and add it to the feed.

        A join never changes what the open boards were sent (it used to overwrite the
        feed's rows with its snapshot, so a change the snapshot already held was never sent to the
        boards open before it). The rows and tiles the feed keeps are those its updates sent; a row
        of the snapshot that differs from them (a change no poll has reported yet, an agent the feed
        has not seen) is read again at the next update and sent to every board, the new one too,
        even when it has changed back to what the others were sent, and so are the tiles.

        Boards joining together share one snapshot (200 boards opening at once
        each read and encoded their own, one after another, and the last waited 11.6 s): a
        snapshot whose read began after this board asked, with no update read since, is the one
        this board would read itself, and is sent again as it is."""
        asked = time.monotonic()
        tz = self.app.config["DB_TIMEZONE"]
        hub = self.app.extensions["dialerapi.events"]
        queue = SendQueue(ws, self.app.config["WS_SEND_QUEUE_BYTES"], name="board", on_too_slow=hub.count_too_slow)
        with self._lock:
            shared = self._shared
            if shared is None or shared[0] < asked or shared[1] != self._version:
                try:
                    shared = self._read_snapshot(tz)
                except Exception:
                    queue.stop()
                    raise
            queue.put(shared[2])
            self._sockets[ws] = queue

    def _read_snapshot(self, tz):
        """Read and encode a snapshot, note what it holds that the open boards were not sent, and
        keep it for the boards joining next: (when its read began, the feed's version, the frame)."""
        started = time.monotonic()
        data = self.app.extensions["dialerapi.db"].run_snapshot(board.snapshot, clock.now(tz), tz)
        if not self._sockets:  # the first board: the snapshot is all any board was sent
            self._rows = {row["agent_id"]: row for row in data["agents"]}
            self._tiles = data["floor"]
            self._tiles_read = time.monotonic()
        else:
            differ = {row["agent_id"] for row in data["agents"] if row != self._rows.get(row["agent_id"])}
            differ |= set(self._rows) - {row["agent_id"] for row in data["agents"]}
            self._pending |= differ
            self._force |= differ
            self._force_tiles = self._force_tiles or _without_at(data["floor"]) != _without_at(self._tiles)
            self._tiles_read = 0.0
        self.snapshots_read += 1
        self._shared = (started, self._version, _frame("board.snapshot", {**data, "settings": self.settings()}))
        return self._shared

    def leave(self, ws):
        with self._lock:
            queue = self._sockets.pop(ws, None)
        if queue is not None:
            queue.stop()

    def changed(self, agent_ids):
        """Called by the hub thread after each poll with the agent ids it saw changed (maybe none).

        While a join holds the lock, the ids wait for the next poll's update: the joining board's
        snapshot may have been read before they changed, even when it is the first board."""
        self._pending |= agent_ids
        if not self._lock.acquire(blocking=False):
            return
        try:
            if self._sockets:
                self._send_update()
            else:
                self._pending.clear()
                self._force.clear()
        finally:
            self._lock.release()

    def _send_update(self):
        tz = self.app.config["DB_TIMEZONE"]
        now = clock.now(tz)
        now_utc = clock.format_utc(clock.to_utc(now, tz))
        wanted = set(self._pending) | {agent_id for agent_id, row in self._rows.items()
                                       if row["wrapup_until"] is not None and row["wrapup_until"] <= now_utc}
        read_tiles = time.monotonic() - self._tiles_read >= TILES_SECONDS
        if not wanted and not read_tiles:
            return
        self._version += 1
        db = self.app.extensions["dialerapi.db"]
        data = {"now": clock.format_utc_ms(clock.utcnow()), "agents": [], "removed": []}
        if wanted:
            rows = {row["agent_id"]: row for row in db.run(state_history.board_rows, now, tz, sorted(wanted))}
            data["agents"] = [row for agent_id, row in sorted(rows.items())
                              if row != self._rows.get(agent_id) or agent_id in self._force]
            data["removed"] = sorted(agent_id for agent_id in wanted if agent_id not in rows
                                     and (agent_id in self._rows or agent_id in self._force))
            self._rows.update(rows)
            for agent_id in data["removed"]:
                self._rows.pop(agent_id, None)
        self._pending.clear()
        self._force.clear()
        if read_tiles:
            self._tiles_read = time.monotonic()
            tiles = db.run_snapshot(board.tiles, now, tz)
            if _without_at(tiles) != _without_at(self._tiles) or self._force_tiles:
                data["floor"] = tiles
                self._tiles = tiles
                self._force_tiles = False
        if data["agents"] or data["removed"] or "floor" in data:
            frame = _frame("board.update", data)
            for queue in list(self._sockets.values()):
                queue.put(frame)

    def drain(self):
        """Close every board socket with 1012: the board reconnects to another host."""
        with self._lock:
            queues, self._sockets = list(self._sockets.values()), {}
        for queue in queues:
            queue.close(SERVICE_RESTART, "service_restart")


def _without_at(tiles):
    return tiles and {key: value for key, value in tiles.items() if key != "at"}


def _frame(event, data):
    return json.dumps({"event": event, "data": data}, ensure_ascii=False, default=str)


def feed(app):
    """The app's BoardFeed, created and hung on its EventHub at the first board socket."""
    with _feed_lock:
        found = app.extensions.get("dialerapi.board")
        if found is None:
            found = app.extensions["dialerapi.board"] = BoardFeed(app)
            app.extensions["dialerapi.events"].listeners.append(found)
        return found


class Holders:
    """The board sockets each credential holds open in this process: a supervisor token
    at most BOARD_MAX_PER_TOKEN, SUPERVISOR_SECRET at most BOARD_MAX_PER_SECRET, so one credential
    cannot take the sockets the agents' panels need."""

    def __init__(self):
        self._lock = threading.Lock()
        self._open = collections.Counter()

    def take(self, credential, limit):
        """Count one more board of `credential`; False (nothing counted) when it holds `limit` already."""
        with self._lock:
            if self._open[credential] >= limit:
                return False
            self._open[credential] += 1
            return True

    def give_back(self, credential):
        with self._lock:
            self._open[credential] -= 1
            if self._open[credential] <= 0:
                del self._open[credential]


holders = Holders()


def admit(config):
    """(None, credential) when this handshake is a supervisor's from an allowed origin, else (the
    refusal's reason, None). `credential`: ("secret",) for SUPERVISOR_SECRET, ("token", its SHA-256)
    for a supervisor token (the token itself is never kept)."""
    if not auth.origin_allowed(request.headers.get("Origin"), request.headers.get("Host"), config["WS_ALLOWED_ORIGINS"]):
        return "origin_not_allowed", None
    if any(request.args.getlist("key")) or auth.keys_in_url(request.args, config):
        return "key_in_url", None
    keys = auth.presented_keys(request.headers) + [token for token in request.args.getlist("token") if token]
    try:
        caller = auth.identify(keys, config)
    except InvalidToken as exc:
        return exc.reason, None
    if caller is None or caller.role != auth.SUPERVISOR:
        return "unauthorized", None
    if caller.supervisor is None:
        return None, ("secret",)
    token = next(key for key in keys if _names_supervisor(config, key))
    return None, ("token", hashlib.sha256(token.encode()).hexdigest())


def _names_supervisor(config, key):
    if not agent_tokens.looks_like_token(key):
        return False
    try:
        agent_tokens.verify_supervisor(config, key)
    except InvalidToken:
        return False
    return True


def board_socket(ws):
    """One supervisor board's connection; see the module docstring for the protocol."""
    app = current_app._get_current_object()
    refusal, credential = admit(app.config)
    if refusal:
        return reject(ws, refusal)
    limit = app.config["BOARD_MAX_PER_SECRET" if credential == ("secret",) else "BOARD_MAX_PER_TOKEN"]
    if not holders.take(credential, limit):
        return reject(ws, "too_many_boards", code=TRY_AGAIN_LATER, limit=limit,
                      retry_after=app.config["WS_RETRY_AFTER_SECONDS"])
    try:
        hub = app.extensions["dialerapi.events"]
        if not hub.take_slot(ws):
            return None
        board_feed = feed(app)
        try:
            hub.start()
            board_feed.join(ws)
            while ws.connected:
                ws.receive(timeout=RECEIVE_WAKE_SECONDS)
        finally:
            board_feed.leave(ws)
            hub.slots.release()
    finally:
        holders.give_back(credential)


def register(blueprint):
    """Add /board/ws to `blueprint` (public at the HTTP layer: the handshake is checked by `admit`)."""
    sock.route("/board/ws", bp=blueprint)(public(board_socket))
