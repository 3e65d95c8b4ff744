"""Shared-secret authentication (lead-intake-api.md, "Authentication"; decisions.md D3).

Every request needs a key in `Authorization: Bearer <key>`, `X-API-Key` or `X-Access-Key`, except
views marked `@public`: ENGINE_SECRET for paths under /engine/ (the dialing engine), WS_SECRET for
every other path (the CRM, agent panels, the sysadmin). Neither key opens the other's paths, and
with no ENGINE_SECRET configured nothing opens /engine/. A header sent twice reaches the app joined
by a comma (WSGI), which matches no key: an ambiguous request is refused. The check runs before the
request is dispatched, so a request to a protected or unknown path is 401 before it can be 404 or 405.
"""

import hmac

from flask import current_app, request

from .errors import ApiError

KEY_HEADERS = ("X-API-Key", "X-Access-Key")
ENGINE_PREFIX = "/engine/"


def public(view):
    """Mark a view as reachable without the secret (/healthz, GET /api/pause-reasons)."""
    view.public = True
    return view


def presented_keys(headers):
    """Every key the request offers, from all three headers (a header may repeat)."""
    keys = []
    for value in headers.getlist("Authorization"):
        scheme, _, token = value.strip().partition(" ")
        if scheme.lower() == "bearer" and token.strip():
            keys.append(token.strip())
    for name in KEY_HEADERS:
        keys.extend(value.strip() for value in headers.getlist(name) if value.strip())
    return keys


def key_matches(keys, secret):
    """True when one of `keys` equals `secret`, compared in constant time; never for an empty secret."""
    if not secret:
        return False
    expected = secret.encode()
    # Compare every key, not just until the first match, so timing says nothing of which one matched.
    matches = [hmac.compare_digest(key.encode(), expected) for key in keys]
    return any(matches)


def secret_for(path):
    """The config key of the secret that opens `path`: ENGINE_SECRET under /engine/, else WS_SECRET."""
    return "ENGINE_SECRET" if path.startswith(ENGINE_PREFIX) else "WS_SECRET"


def require_key():
    """before_request hook: raise the 401 `unauthorized` error unless the view is public or the key matches."""
    view = current_app.view_functions.get(request.endpoint)
    if getattr(view, "public", False):
        return
    if not key_matches(presented_keys(request.headers), current_app.config[secret_for(request.path)]):
        raise ApiError(401, "unauthorized")
