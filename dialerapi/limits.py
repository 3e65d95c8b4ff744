"""Rate limits (lead-intake-api.md, "Limits"; decisions.md D5) with flask-limiter.

The limiter is created once here and bound to the app in create_app. Its storage is
RATELIMIT_STORAGE_URI (memory:// for one process, redis://... when several serve). The client is
the socket peer, or the X-Forwarded-For entry added by the nearest of TRUSTED_PROXY_COUNT proxies
(werkzeug's ProxyFix, installed in create_app). Lead push is not limited.
"""

from flask_limiter import Limiter
from flask_limiter.util import get_remote_address

# If Redis is unreachable, count in memory rather than fail the CRM's requests.
limiter = Limiter(key_func=get_remote_address, headers_enabled=True, in_memory_fallback_enabled=True)

# One counter shared by send-callback-request, pending-callbacks and pending-dispositions.
crm_actions = limiter.shared_limit("120 per 60 seconds", scope="crm_actions")

missed_activities = limiter.limit("240 per 60 seconds")
