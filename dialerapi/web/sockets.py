"""What the service's websockets share (the agents' /ws, decisions.md D9; the board's /board/ws,
issue #49): close codes, the wake-up of a waiting receive, and a refusal that ends with a complete
close handshake."""

import json

POLICY_VIOLATION = 1008
SERVICE_RESTART = 1012
TRY_AGAIN_LATER = 1013
# simple-websocket 1.1 wakes a waiting receive() before it marks a socket closed for a message over
# the cap, so a receive() without a timeout can wait forever. Waking every second bounds that.
RECEIVE_WAKE_SECONDS = 1
# How long a refused socket waits for the client's close frame before the server drops it.
CLOSE_WAIT_SECONDS = 2


def reject(ws, reason, code=POLICY_VIOLATION, **data):
    """Send `server_error` {reason, **data} and close with `code`, then wait (at most CLOSE_WAIT_SECONDS)
    for the client's close frame, so the connection ends with a complete close handshake (RFC 6455 7.1.1)."""
    ws.send(json.dumps({"event": "server_error", "data": {"reason": reason, **data}}))
    ws.close(reason=code, message=reason)
    ws.thread.join(CLOSE_WAIT_SECONDS)
