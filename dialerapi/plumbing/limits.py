"""Rate limits (lead-intake-api.md, "Limits"; decisions.md D5) with flask-limiter.

The limiter is created once here and bound to the app in create_app. Its storage is
RATELIMIT_STORAGE_URI (memory:// for one process, redis://... when several serve). The client is
the socket peer, or, when the peer is one of TRUSTED_PROXIES, the X-Forwarded-For entry added by
the nearest of TRUSTED_PROXY_COUNT proxies (werkzeug's ProxyFix, installed in create_app through
`TrustedProxyFix`). Lead push is not limited.
"""

import ipaddress

from flask_limiter import Limiter
from flask_limiter.util import get_remote_address
from werkzeug.middleware.proxy_fix import ProxyFix

# If Redis is unreachable, count in memory rather than fail the CRM's requests.
limiter = Limiter(key_func=get_remote_address, headers_enabled=True, in_memory_fallback_enabled=True)

# One counter shared by send-callback-request, pending-callbacks and pending-dispositions.
crm_actions = limiter.shared_limit("120 per 60 seconds", scope="crm_actions")

missed_activities = limiter.limit("240 per 60 seconds")

# GET /api/leads/{oli_id} and GET /api/lead-events: a CRM reading its leads' results
# back, one counter for both. A feed page is at most 1,000 events, so this reads 100,000 a second.
crm_reads = limiter.shared_limit("6000 per 60 seconds", scope="crm_reads")

# GET /api/callbacks: an agent desktop's server may read each agent's list now and then.
agent_callbacks = limiter.limit("240 per 60 seconds")

# The agent desktop's server mints a token per agent login: a floor logging in at the start of a
# shift is a few thousand, from one or a few addresses.
agent_tokens = limiter.limit("3000 per 60 seconds")

# The supervisor's board snapshot and agent report: a few supervisors and a reporting
# job read them now and then; a report over a month is the dearest read the service answers.
board_reads = limiter.shared_limit("60 per 60 seconds", scope="board_reads")


class TrustedProxyFix:
    """WSGI middleware: werkzeug's ProxyFix (`count` X-Forwarded-For hops) for requests whose socket
    peer (REMOTE_ADDR) is in `trusted` (ip_network objects); any other request is left as it came,
    so a forged X-Forwarded-For from a client that reached gunicorn directly is ignored."""

    def __init__(self, app, count, trusted):
        self.app = app
        self.fixed = ProxyFix(app, x_for=count)
        self.trusted = trusted

    def __call__(self, environ, start_response):
        try:
            peer = ipaddress.ip_address(environ.get("REMOTE_ADDR", ""))
        except ValueError:
            peer = None
        if peer is not None and any(peer in network for network in self.trusted):
            return self.fixed(environ, start_response)
        return self.app(environ, start_response)
