"""Who may call what (lead-intake-api.md, "Authentication"; decisions.md D3 and D9).

Five callers, each with a credential that opens what it needs and nothing else:

| caller  | credential                                   | opens                                         |
|---------|----------------------------------------------|-----------------------------------------------|
| crm     | WS_SECRET (or WS_SECRET_PREVIOUS)            | every path but /engine/ (and /ws from a server) |
| engine  | ENGINE_SECRET (or ENGINE_SECRET_PREVIOUS)    | /engine/ only                                 |
| monitor | MONITOR_SECRET (or MONITOR_SECRET_PREVIOUS)  | /health, /api/health, /metrics                |
| agent   | a token of one agent (web.agent_tokens)      | that agent's /ws and GET /api/missed-activities |
| supervisor | SUPERVISOR_SECRET (or _PREVIOUS), or a supervisor token | GET /api/board, /board/ws, GET /api/reports/agents: reads only |

A key or token goes in `Authorization: Bearer <key>`, `X-API-Key` or `X-Access-Key`; views marked
`@public` need none. A path takes the crm key unless its view says otherwise with `@opens(...)`
(/engine/ takes the engine key). Answers: 401 `unauthorized` when no credential the path takes is
presented (with `reason` `token_expired` or `invalid_token` for a bad token); 403 `forbidden` when
a valid agent token, supervisor key or supervisor token is presented on a path, or for an agent,
it does not open. A header sent twice
reaches the app joined by a comma (WSGI), which matches no key: an ambiguous request is refused.
The check runs before dispatch, so a protected or unknown path is 401 before it can be 404 or 405.
"""

import hmac
from dataclasses import dataclass

from flask import current_app, g, request

from dialerapi.plumbing.config import CALLER_KEYS
from dialerapi.web import agent_tokens
from dialerapi.web.errors import ApiError

KEY_HEADERS = ("X-API-Key", "X-Access-Key")
ENGINE_PREFIX = "/engine/"
# The sockets answer a refusal in their handshake (server_error and a close code), not as HTTP.
SOCKET_PATHS = ("/ws", "/board/ws")

CRM, ENGINE, MONITOR, AGENT, SUPERVISOR = "crm", "engine", "monitor", "agent", "supervisor"


@dataclass(frozen=True)
class Caller:
    """Who a request comes from: `role` (CRM, ENGINE, MONITOR, AGENT or SUPERVISOR); for an agent,
    `agent_id`; for a supervisor token, the `supervisor` it names."""

    role: str
    agent_id: int | None = None
    supervisor: str | None = None


def public(view):
    """Mark a view as reachable without a credential (/healthz, GET /api/pause-reasons, /panel/)."""
    view.public = True
    return view


def opens(*roles):
    """Mark a view as open to these callers (instead of the default: the crm, or the engine under /engine/)."""

    def mark(view):
        view.roles = roles
        return view

    return mark


def presented_keys(headers):
    """Every key or token the request offers, from all three headers (a header may repeat)."""
    keys = []
    for value in headers.getlist("Authorization"):
        scheme, _, token = value.strip().partition(" ")
        if scheme.lower() == "bearer" and token.strip():
            keys.append(token.strip())
    for name in KEY_HEADERS:
        keys.extend(value.strip() for value in headers.getlist(name) if value.strip())
    return keys


def key_matches(keys, secrets):
    """True when one of `keys` equals one of `secrets` (empty ones never match), compared in constant time."""
    expected = [secret.encode() for secret in secrets if secret]
    # Compare every pair, not just until the first match, so timing says nothing of which one matched.
    matches = [hmac.compare_digest(key.encode(), secret) for key in keys for secret in expected]
    return any(matches)


def identify(keys, config):
    """The Caller that `keys` (presented_keys) name, or None when they name nobody.

    A service key wins over a token. Raises agent_tokens.InvalidToken when no key matches and a
    presented token is expired or badly signed, so the answer can say why.
    """
    for role, names in CALLER_KEYS.items():
        if key_matches(keys, [config.get(name, "") for name in names]):
            return Caller(role)
    failure = None
    for key in keys:
        if agent_tokens.looks_like_token(key):
            try:
                return Caller(AGENT, agent_tokens.verify(config, key))
            except agent_tokens.InvalidToken as exc:
                failure = exc
            try:
                return Caller(SUPERVISOR, supervisor=agent_tokens.verify_supervisor(config, key))
            except agent_tokens.InvalidToken as exc:
                # An agent token's expiry says more than its failing as a supervisor one.
                failure = failure if failure.reason == "token_expired" else exc
    if failure is not None:
        raise failure
    return None


def roles_for(view, path):
    """The callers `view` (None for an unknown path) opens to: its @opens roles, else the default."""
    return getattr(view, "roles", None) or ((ENGINE,) if path.startswith(ENGINE_PREFIX) else (CRM,))


def keys_in_url(args, config, skip=()):
    """Whether a query parameter of `args` (request.args) other than those named in `skip` carries a
    service key (any caller's, current or previous). Keys travel in headers only: a URL
    is written to logs, browser history and proxies; `token=` is for agent and supervisor tokens."""
    if not args:  # the engine's and the CRM's writes: no query string, no work
        return False
    values = [value for name, values in args.lists() if name not in skip for value in values if value]
    return bool(values) and key_matches(values, [config.get(name, "") for names in CALLER_KEYS.values()
                                                 for name in names])


def require_key():
    """before_request hook: let the request through when its view is public or a presented credential
    opens it (the Caller is then `g.caller`); raise 401 `unauthorized` or 403 `forbidden` otherwise,
    and 401 `unauthorized` reason `key_in_url` on any route when a query parameter carries a service
    key (the sockets, /ws and /board/ws, refuse it in their own handshake)."""
    view = current_app.view_functions.get(request.endpoint)
    if request.path not in SOCKET_PATHS and keys_in_url(request.args, current_app.config):
        raise ApiError(401, "unauthorized", reason="key_in_url")
    if getattr(view, "public", False):
        return
    try:
        caller = identify(presented_keys(request.headers), current_app.config)
    except agent_tokens.InvalidToken as exc:
        raise ApiError(401, "unauthorized", reason=exc.reason) from None
    roles = roles_for(view, request.path)
    if caller is not None and caller.role in roles:
        g.caller = caller
        return
    if caller is not None and caller.role in (AGENT, SUPERVISOR):
        raise ApiError(403, "forbidden")
    raise ApiError(401, "unauthorized")


def require_own_agent(agent_id):
    """For a view open to agents: 403 `forbidden` unless the caller is a service key or the agent
    `agent_id` itself."""
    caller = g.get("caller")
    if caller is not None and caller.role == AGENT and caller.agent_id != agent_id:
        raise ApiError(403, "forbidden")


def origin_allowed(origin, host, allowed):
    """Whether a socket whose handshake carries `origin` (None: not a browser) may connect to the
    service reached as `host` (the Host header), given WS_ALLOWED_ORIGINS `allowed` (a tuple)."""
    if origin is None or allowed == ("*",):
        return True
    origin = origin.strip().lower().rstrip("/")
    if allowed:
        return origin in allowed
    return bool(host) and origin.partition("://")[2] == host.strip().lower()
