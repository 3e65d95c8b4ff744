"""Agent tokens (decisions.md D9): a short-lived credential naming one agent, so an
agent's panel in a browser never holds a service key.

The agent desktop's server, which holds WS_SECRET, mints one at the agent's login
(`POST /api/agent-tokens`, `dialerapi agents token ID`) and hands only the token to the browser.
A token opens that agent's `/ws` and `GET /api/missed-activities` for that agent, nothing else
(web.auth).

A token is itsdangerous's URL-safe signed JSON `{"agent_id": 501, "exp": 1764072000}` (`exp`: the
expiry in whole seconds since the Unix epoch, UTC), signed with HMAC-SHA256 under
AGENT_TOKEN_KEY (WS_SECRET when unset). itsdangerous signs with the newest key and accepts any key
of the list, so AGENT_TOKEN_KEY_PREVIOUS keeps tokens of the key being retired valid until they
expire (docs/operations/keys.md "Rotating keys"). Expiry is read against the service's one clock (D2), not the
machine's.
"""

import hashlib
from datetime import datetime, timedelta, timezone

from itsdangerous import BadData, URLSafeSerializer

from dialerapi.plumbing import clock

SALT = "dialerapi.agent-token"
SUPERVISOR_SALT = "dialerapi.supervisor-token"
# The longest supervisor name, in characters (POST /api/supervisor-tokens, schemas.SupervisorTokenRequest).
MAX_NAME_CHARS = 64


def _longest_token():
    """The length of the longest token a valid request can mint (a 64-character CJK name
    made a token every route then refused): a supervisor name of MAX_NAME_CHARS characters of 4
    bytes each (itsdangerous writes JSON as UTF-8; a printable character is at most 4 bytes, an
    escaped quote 2), an `exp` of 11 digits, not compressed (itsdangerous compresses only what it
    shortens), in base64, then a dot and the SHA-256 signature's 43 base64 characters."""
    payload = len('{"supervisor":"","exp":}') + 4 * MAX_NAME_CHARS + 11
    return -(-payload * 4 // 3) + 1 + 43


# An agent's token is about 90 characters, a supervisor's up to this; anything longer is refused
# before any signature work.
MAX_TOKEN_CHARS = _longest_token()


class InvalidToken(Exception):
    """A token that opens nothing; `reason` is `token_expired` or `invalid_token` (tampered, forged,
    signed with a retired key, or not a token at all)."""

    def __init__(self, reason):
        super().__init__(reason)
        self.reason = reason


def signing_keys(config):
    """The keys tokens are checked against, oldest first; the last one signs (itsdangerous' order)."""
    if config.get("AGENT_TOKEN_KEY"):
        keys = [config.get("AGENT_TOKEN_KEY_PREVIOUS"), config["AGENT_TOKEN_KEY"]]
    else:
        keys = [config.get("WS_SECRET_PREVIOUS"), config["WS_SECRET"]]
    return [key for key in keys if key]


def _serializer(config, salt=SALT):
    return URLSafeSerializer(signing_keys(config), salt=salt, signer_kwargs={"digest_method": hashlib.sha256})


def mint(config, agent_id, lifetime_seconds=None):
    """A token for `agent_id` (int) valid for `lifetime_seconds` (AGENT_TOKEN_SECONDS when None) from
    the service clock's now. Returns (token, expires_at as an aware UTC datetime). The caller checks
    the agent exists and the lifetime is within AGENT_TOKEN_MAX_SECONDS (schemas.AgentTokenRequest)."""
    return _mint(config, SALT, {"agent_id": agent_id}, lifetime_seconds)


def mint_supervisor(config, name, lifetime_seconds=None):
    """A supervisor token naming `name` (1-64 characters, for the log), valid as `mint`'s.
    It opens the board, its socket and the reports, nothing else (web.auth). Signed under its own
    salt: an agent token never passes for one, nor the other way round. Returns (token, expires_at)."""
    return _mint(config, SUPERVISOR_SALT, {"supervisor": name}, lifetime_seconds)


def _mint(config, salt, claims, lifetime_seconds):
    lifetime = lifetime_seconds or config["AGENT_TOKEN_SECONDS"]
    expires_at = clock.utcnow().replace(microsecond=0) + timedelta(seconds=lifetime)
    token = _serializer(config, salt).dumps({**claims, "exp": int(expires_at.timestamp())})
    return token, expires_at


def looks_like_token(text):
    """True for text shaped like a token (payload.signature) rather than a service key, which has no
    dot by convention; `verify` then bounds its length before any signature work."""
    return "." in text


def verify(config, token):
    """The agent id (int) that `token` names. Raises InvalidToken when it is longer than
    MAX_TOKEN_CHARS, badly signed, of another shape, or past its `exp` on the service clock."""
    return _verify(config, token, SALT, "agent_id", int)


def verify_supervisor(config, token):
    """The supervisor name (str) that a supervisor `token` names; raises InvalidToken as `verify`."""
    return _verify(config, token, SUPERVISOR_SALT, "supervisor", str)


def _verify(config, token, salt, field, kind):
    if len(token) > MAX_TOKEN_CHARS:
        raise InvalidToken("invalid_token")
    try:
        payload = _serializer(config, salt).loads(token)
    except BadData:
        raise InvalidToken("invalid_token") from None
    if not (isinstance(payload, dict) and type(payload.get(field)) is kind and type(payload.get("exp")) is int):
        raise InvalidToken("invalid_token")
    if clock.utcnow() >= datetime.fromtimestamp(payload["exp"], timezone.utc):
        raise InvalidToken("token_expired")
    return payload[field]
