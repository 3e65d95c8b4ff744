"""Configuration from the environment (decisions.md D10).

Every setting is an environment variable, with a `.env` file in the working directory read when
present (variables already set win over the file). `load()` parses and checks them all; a bad
or missing value raises `ConfigError`, whose message is one line naming the variable.
"""

import ipaddress
import os
from urllib.parse import unquote, urlsplit
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from dotenv import find_dotenv, load_dotenv


class ConfigError(Exception):
    """A setting is missing or malformed; `str(err)` is one line that names the variable."""


def _text(name, value):
    return str(value).strip()


def _secret(name, value):
    value = str(value).strip()
    if not value:
        raise ConfigError(f"{name} is required: set the shared service secret in the environment or .env")
    if not (value.isascii() and value.isprintable()) or " " in value:
        raise ConfigError(f"{name} must be printable ASCII without spaces: it travels in HTTP headers")
    return value


def _optional_secret(name, value):
    value = str(value).strip()
    return _secret(name, value) if value else ""


def _timezone(name, value):
    try:
        return ZoneInfo(str(value).strip())
    except (ZoneInfoNotFoundError, ValueError):
        raise ConfigError(f"{name}={value!r} is not an IANA time zone name such as UTC or Asia/Kolkata") from None


def _networks(name, value):
    """A comma-separated list of IP addresses or networks (CIDR) as a tuple of ip_network."""
    try:
        return tuple(ipaddress.ip_network(item.strip(), strict=False) for item in str(value).split(",") if item.strip())
    except ValueError:
        raise ConfigError(f"{name}={value!r} must be IP addresses or networks separated by commas, "
                          "e.g. 127.0.0.1,::1") from None


def _non_negative_int(name, value):
    try:
        number = int(str(value).strip())
    except ValueError:
        raise ConfigError(f"{name}={value!r} must be a whole number") from None
    if number < 0:
        raise ConfigError(f"{name}={value!r} must not be negative")
    return number


def _positive_int(name, value):
    number = _non_negative_int(name, value)
    if number == 0:
        raise ConfigError(f"{name}={value!r} must be at least 1")
    return number


def _flag(name, value):
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in {"1", "true", "yes", "on"}:
        return True
    if text in {"0", "false", "no", "off"}:
        return False
    raise ConfigError(f"{name}={value!r} must be true or false")


def _origins(name, value):
    """A comma-separated list of web origins (scheme://host[:port]) as a tuple, lower case, or ("*",)."""
    origins = tuple(item.strip().lower().rstrip("/") for item in str(value).split(",") if item.strip())
    if origins == ("*",):
        return origins
    for origin in origins:
        parts = urlsplit(origin)
        if parts.scheme not in {"http", "https"} or not parts.netloc or parts.path or parts.query:
            raise ConfigError(f"{name} has {origin!r}: give origins as scheme://host[:port], "
                              "e.g. https://desk.example.com, separated by commas, or *")
    return origins


def _log_level(name, value):
    level = str(value).strip().upper()
    if level not in {"DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"}:
        raise ConfigError(f"{name}={value!r} must be one of DEBUG, INFO, WARNING, ERROR, CRITICAL")
    return level


def database_nodes(url):
    """The nodes a `mysql://user:password@host1:port1,host2:port2/database` URL names, in order.

    Returns a list of (host, port) pairs, one for a plain MariaDB, several for a Galera cluster
    (README "Scale out"): the service uses the first node that is ready and moves down the list
    when it dies or refuses work. IPv6 hosts go in brackets. Raises ConfigError naming DATABASE_URL.
    """
    parts = urlsplit(str(url).strip())
    database = unquote(parts.path.lstrip("/"))
    if parts.scheme not in {"mysql", "mysql+pymysql", "mariadb"} or not database:
        raise ConfigError(
            "DATABASE_URL must look like mysql://user:password@host:port/database"
        )
    nodes = []
    for item in parts.netloc.rpartition("@")[2].split(","):
        node = urlsplit(f"//{item.strip()}")
        try:
            port = node.port or 3306
        except ValueError:
            raise ConfigError("DATABASE_URL has a port that is not a number") from None
        if item.strip() and not node.hostname:
            raise ConfigError(f"DATABASE_URL names a node without a host: {item.strip()!r}")
        nodes.append((node.hostname or "127.0.0.1", port))
    if len(set(nodes)) != len(nodes):
        raise ConfigError("DATABASE_URL names the same node twice")
    return nodes


def database_params(url):
    """Split a `mysql://user:password@host:port/database[?unix_socket=PATH]` URL.

    Returns a dict of PyMySQL connect() keyword arguments (host, port, user, password,
    database, and unix_socket when given); host and port are the first node's
    (`database_nodes` lists them all). Raises ConfigError naming DATABASE_URL.
    """
    (host, port), *_ = database_nodes(url)
    parts = urlsplit(str(url).strip())
    userinfo = parts.netloc.rpartition("@")[0]
    user, _, password = userinfo.partition(":")
    params = {
        "host": host,
        "port": port,
        "user": unquote(user or "root"),
        "password": unquote(password),
        "database": unquote(parts.path.lstrip("/")),
    }
    for item in filter(None, parts.query.split("&")):
        key, _, value = item.partition("=")
        if key == "unix_socket":
            params["unix_socket"] = unquote(value)
    return params


def url_with_nodes(url, nodes):
    """`url` with its node list replaced by `nodes` ((host, port) pairs), e.g. one node for a tool
    that takes one host."""
    parts = urlsplit(str(url).strip())
    userinfo, at, _ = parts.netloc.rpartition("@")
    hosts = ",".join(f"[{host}]:{port}" if ":" in host else f"{host}:{port}" for host, port in nodes)
    return parts._replace(netloc=f"{userinfo}{at}{hosts}").geturl()


def _database_url(name, value):
    value = str(value).strip()
    if not value:
        raise ConfigError(f"{name} is required, e.g. mysql://dialer:password@127.0.0.1:3306/dialer")
    database_params(value)
    return value


# name: (default, parser); None as default means required.
SETTINGS = {
    "DATABASE_URL": (None, _database_url),
    "WS_SECRET": (None, _secret),
    # The dialing engine's key for /engine/ (empty: the engine API answers 401 to everyone).
    "ENGINE_SECRET": ("", _optional_secret),
    # The monitor's read-only key: /health, /api/health and /metrics, nothing else (issue #28).
    "MONITOR_SECRET": ("", _optional_secret),
    # During a rotation, the key being retired, still accepted until removed (README "Rotating keys").
    "WS_SECRET_PREVIOUS": ("", _optional_secret),
    "ENGINE_SECRET_PREVIOUS": ("", _optional_secret),
    "MONITOR_SECRET_PREVIOUS": ("", _optional_secret),
    # Agent tokens (web.agent_tokens): the signing key (empty: WS_SECRET, and WS_SECRET_PREVIOUS
    # for tokens signed before a rotation), the key being retired, the default lifetime (a shift)
    # and the longest a caller may ask for, in seconds.
    "AGENT_TOKEN_KEY": ("", _optional_secret),
    "AGENT_TOKEN_KEY_PREVIOUS": ("", _optional_secret),
    "AGENT_TOKEN_SECONDS": ("43200", _positive_int),
    "AGENT_TOKEN_MAX_SECONDS": ("86400", _positive_int),
    # Origins of the agent desktop whose pages may open /ws (scheme://host[:port], comma-separated).
    # Empty: only the service's own origin (the Origin's host equals the Host header); `*`: any.
    # A socket with no Origin header (a server-side client, not a browser) is not checked.
    "WS_ALLOWED_ORIGINS": ("", _origins),
    # Accept WS_SECRET in the /ws URL (`?key=`, the handshake before issue #28) during a migration
    # window; every use logs a warning. Off by default: a key in a URL ends up in a browser.
    "WS_ALLOW_KEY_IN_URL": ("false", _flag),
    "DB_TIMEZONE": ("UTC", _timezone),
    "MISSED_ACTIVITY_GRACE_MINUTES": ("10", _non_negative_int),
    "RELEASE_RETRY_MS": ("60000", _non_negative_int),
    # A reservation older than this (elapsed seconds) without a settle is released by the sweep as an
    # originate failure: 4 hours, longer than any real call (README, "Reservation lease").
    "RESERVATION_LEASE_SECONDS": ("14400", _positive_int),
    "RATELIMIT_STORAGE_URI": ("memory://", _text),
    "TRUSTED_PROXY_COUNT": ("0", _non_negative_int),
    # X-Forwarded-For is read only on connections from these addresses: a client that reaches
    # gunicorn directly cannot choose its own rate-limit counter (issue #17).
    "TRUSTED_PROXIES": ("127.0.0.1,::1", _networks),
    "AMI_HOST": ("", _text),
    "AMI_PORT": ("5038", _positive_int),
    "AMI_USERNAME": ("", _text),
    "AMI_SECRET": ("", _text),
    "LOG_LEVEL": ("INFO", _log_level),
    "DB_POOL_SIZE": ("16", _positive_int),
    # The most database connections one process opens at once (0: no cap, as many as its threads
    # ask for). The socket pool sets it to DB_POOL_SIZE: its greenlets are not bounded by threads,
    # and a reconnect storm of a whole floor would otherwise open a connection per socket.
    "DB_POOL_MAX": ("0", _non_negative_int),
    # On a Galera cluster, every transaction first waits until its node has applied what the cluster
    # committed before (wsrep_sync_wait = 1), so a request reads another host's write (issue #19).
    # Ignored off Galera. README "Scale out" has its cost.
    "DB_CAUSAL_READS": ("true", _flag),
    # The most agent sockets (/ws) one host (one gunicorn) holds at once; past it a new socket is
    # refused with close 1013 (issue #27). deploy/gunicorn.conf.py sets it per pool: 2000 for the
    # socket pool, half the threads for the HTTP pool (README "Sizing the socket pool").
    "WS_MAX_SOCKETS": ("2000", _positive_int),
    # Seconds a panel refused for capacity waits before it tries again (it adds its own jitter).
    "WS_RETRY_AFTER_SECONDS": ("10", _positive_int),
    # Background jobs (health checks, sweeps) run under gunicorn; CLI commands and tests turn them off.
    "JOBS_ENABLED": ("true", _flag),
}


# The settings that hold each caller's key (web.auth): the current one, then the one being retired.
# No key of one caller may open another's paths.
CALLER_KEYS = {"crm": ("WS_SECRET", "WS_SECRET_PREVIOUS"),
               "engine": ("ENGINE_SECRET", "ENGINE_SECRET_PREVIOUS"),
               "monitor": ("MONITOR_SECRET", "MONITOR_SECRET_PREVIOUS")}


def _check_keys_differ(parsed):
    owner = {}
    for caller, names in CALLER_KEYS.items():
        for name in names:
            value = parsed[name]
            if value and value in owner and owner[value][0] != caller:
                other = owner[value][1]
                raise ConfigError(f"{name} must differ from {other}: the {caller} key must not open the {owner[value][0]}'s paths")
            owner.setdefault(value, (caller, name))


def load(overrides=None):
    """Read every D10 setting from overrides, then the environment, then `.env`, then defaults.

    Returns a dict of parsed values (DB_TIMEZONE as a ZoneInfo, numbers as int, flags as bool);
    keys of `overrides` that are not settings (Flask's own, such as TESTING) pass through unchanged.
    Raises ConfigError on the first bad or missing value.
    """
    overrides = dict(overrides or {})
    load_dotenv(find_dotenv(usecwd=True), override=False)
    parsed = {}
    for name, (default, parse) in SETTINGS.items():
        raw = overrides.pop(name, os.environ.get(name, default))
        if raw is None:
            parse(name, "")
        parsed[name] = raw if isinstance(raw, ZoneInfo) else parse(name, raw)
    _check_keys_differ(parsed)
    if parsed["AGENT_TOKEN_SECONDS"] > parsed["AGENT_TOKEN_MAX_SECONDS"]:
        raise ConfigError("AGENT_TOKEN_SECONDS must not exceed AGENT_TOKEN_MAX_SECONDS")
    parsed.update(overrides)
    return parsed
