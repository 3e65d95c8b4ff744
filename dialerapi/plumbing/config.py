"""Configuration from the environment (decisions.md D10).

Every setting is an environment variable, with a `.env` file in the working directory read when
present (variables already set win over the file). `load()` parses and checks them all; a bad
or missing value raises `ConfigError`, whose message is one line naming the variable.
"""

import ipaddress
import os
import re
from collections.abc import Callable
from typing import NamedTuple
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


def _host_names(name, value):
    """A comma-separated list of hosts, each a host name or IP address alone (any port) or with a
    port (`host:port`, `[v6]:port`: that port only), as a frozenset of lower-case strings: a host
    alone bare (an IPv6 address without brackets), a host with its port as `allowed_key` makes it."""
    entries = set()
    for item in (item.strip().lower() for item in str(value).split(",")):
        if not item:
            continue
        host, port = item, None
        bracketed = re.fullmatch(r"\[([^\]]+)\](?::(\d+))?", item)
        if bracketed:
            host, port = bracketed.group(1), bracketed.group(2)
        elif item.count(":") == 1:
            host, port = item.split(":")
        if (not host or any(ch in host for ch in "/:@ []") and not _is_ip(host)
                or port is not None and not (port.isdigit() and 0 < int(port) < 65536)):
            raise ConfigError(f"{name} has {item!r}: give host names or IP addresses, each with a port or "
                              "without (any port), separated by commas, e.g. crm-receiver.internal:8443,10.0.0.7")
        entries.add(host if port is None else allowed_key(host, int(port)))
    return frozenset(entries)


def allowed_key(host, port):
    """How WEBHOOK_ALLOWED_HOSTS holds `host` allowed on `port` only: `host:port`, `[v6]:port`."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _is_ip(text):
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def _log_level(name, value):
    level = str(value).strip().upper()
    if level not in {"DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"}:
        raise ConfigError(f"{name}={value!r} must be one of DEBUG, INFO, WARNING, ERROR, CRITICAL")
    return level


def database_nodes(url):
    """The nodes a `mysql://user:password@host1:port1,host2:port2/database` URL names, in order.

    Returns a list of (host, port) pairs, one for a plain MariaDB, several for a Galera cluster
    (docs/operations/galera.md "Scale out"): the service uses the first node that is ready and moves down the list
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


class Setting(NamedTuple):
    """One D10 setting: its default (None: required), the parser that checks it, what it means
    (the settings reference of the docs site is generated from these, docs/gen_reference.py) and,
    when the default is not a literal value, how the reference shows it."""
    default: str | None
    parse: Callable[[str, str], object]
    doc: str
    shown_default: str = ""


SETTINGS = {
    "DATABASE_URL": Setting(
        None, _database_url,
        "`mysql://user:password@host:port/database`; a Galera cluster's nodes in order of preference: "
        "`mysql://user:password@db1:3306,db2:3306,db3:3306/database` (Operations, Galera). Without it, "
        "`make run`, `make test` and the `dialerapi` command of a checkout use the private MariaDB of "
        "`scripts/devdb.sh` when it is running.",
        "required (make: the private MariaDB)"),
    "WS_SECRET": Setting(None, _secret, "The CRM's key (shared service secret); printable ASCII, no spaces."),
    "ENGINE_SECRET": Setting(
        "", _optional_secret,
        "The dialing engine's key for `/engine/`; must differ from `WS_SECRET`. Empty: the engine API "
        "answers 401 to everyone.", "empty (engine API closed)"),
    "MONITOR_SECRET": Setting(
        "", _optional_secret, "The monitor's read-only key: `/health`, `/api/health` and `/metrics`, nothing else.",
        "empty (none)"),
    "WS_SECRET_PREVIOUS": Setting(
        "", _optional_secret, "During a rotation, the CRM key being retired, still accepted until removed "
        "(Operations, Keys and rotation)."),
    "ENGINE_SECRET_PREVIOUS": Setting("", _optional_secret, "The engine key being retired, still accepted."),
    "MONITOR_SECRET_PREVIOUS": Setting("", _optional_secret, "The monitor key being retired, still accepted."),
    "SUPERVISOR_SECRET": Setting(
        "", _optional_secret, "The supervisor's read-only key, for a server (a wallboard's host, a BI job): "
        "the board, its socket and the agent reports, nothing that writes. A supervisor's browser "
        "gets a short-lived supervisor token instead.", "empty (none)"),
    "SUPERVISOR_SECRET_PREVIOUS": Setting("", _optional_secret, "The supervisor key being retired, still accepted."),
    "AGENT_TOKEN_KEY": Setting(
        "", _optional_secret, "Signs agent tokens (web.agent_tokens). Empty: `WS_SECRET`, and "
        "`WS_SECRET_PREVIOUS` for tokens signed before a rotation.", "`WS_SECRET`"),
    "AGENT_TOKEN_KEY_PREVIOUS": Setting(
        "", _optional_secret, "The token key being retired: tokens it signed still verify.", "`WS_SECRET_PREVIOUS`"),
    "AGENT_TOKEN_SECONDS": Setting("43200", _positive_int, "A token's default lifetime, seconds (a shift)."),
    "AGENT_TOKEN_MAX_SECONDS": Setting("86400", _positive_int, "The longest lifetime a caller may ask for, seconds."),
    "WS_ALLOWED_ORIGINS": Setting(
        "", _origins,
        "Origins of the agent desktop whose pages may open `/ws` (`scheme://host[:port]`, comma-separated); "
        "`*`: any. A socket with no Origin header (a server-side client, not a browser) is not checked.",
        "empty: the service's own origin"),
    "WS_ALLOW_KEY_IN_URL": Setting(
        "false", _flag,
        "Accept `WS_SECRET` in the `/ws` URL (`?key=`, the former handshake) during a migration "
        "window; every use logs a warning. Off by default: a key in a URL ends up in a browser."),
    "DB_TIMEZONE": Setting(
        "UTC", _timezone,
        "IANA zone of every DATETIME column and of times sent without an offset (Operations, Time and "
        "daylight saving)."),
    "MISSED_ACTIVITY_GRACE_MINUTES": Setting(
        "10", _non_negative_int, "Grace after a hangup before an agent's outbound is paused, minutes."),
    "RELEASE_RETRY_MS": Setting(
        "60000", _non_negative_int,
        "Retry delay after an originate failure (and after a released reservation), milliseconds."),
    "RESERVATION_LEASE_SECONDS": Setting(
        "14400", _positive_int,
        "A reservation older than this (elapsed seconds) without a settle is released by the sweep as an "
        "originate failure: 4 hours, longer than any real call (Dialing engine, Reservation lease)."),
    "RATELIMIT_STORAGE_URI": Setting(
        "memory://", _text, "flask-limiter's storage: `redis://...` when several processes or hosts serve."),
    "TRUSTED_PROXY_COUNT": Setting("0", _non_negative_int, "Proxies whose `X-Forwarded-For` entry is trusted."),
    "TRUSTED_PROXIES": Setting(
        "127.0.0.1,::1", _networks,
        "Addresses or networks (CIDR) whose `X-Forwarded-For` is read at all: a client that reaches gunicorn "
        "directly cannot choose its own rate-limit counter."),
    "AMI_HOST": Setting("", _text, "Asterisk manager interface host (empty: no AMI check)."),
    "AMI_PORT": Setting("5038", _positive_int, "Asterisk manager interface port."),
    "AMI_USERNAME": Setting("", _text, "Asterisk manager interface user."),
    "AMI_SECRET": Setting("", _text, "Asterisk manager interface secret."),
    "LOG_LEVEL": Setting("INFO", _log_level, "DEBUG, INFO, WARNING, ERROR or CRITICAL."),
    "DB_POOL_SIZE": Setting("16", _positive_int, "Idle database connections kept per process."),
    "DB_POOL_MAX": Setting(
        "0", _non_negative_int,
        "The most database connections one process opens at once; past it a transaction waits for one. "
        "The socket pool sets it to `DB_POOL_SIZE`: its greenlets are not bounded by threads, and a "
        "reconnect storm of a whole floor would otherwise open a connection per socket.",
        "0 (no cap); the socket pool: `DB_POOL_SIZE`"),
    "DB_CAUSAL_READS": Setting(
        "true", _flag,
        "On a Galera cluster, every transaction first waits until its node has applied what the cluster "
        "committed before (`wsrep_sync_wait = 1`), so a request reads another host's write. "
        "Ignored off Galera."),
    "DB_SEND_BEGIN": Setting(
        "true", _flag,
        "Open each transaction with `BEGIN`. `false` saves that round trip on a plain MariaDB: with "
        "autocommit off the server starts the transaction at its first statement anyway ("
        "the simulator's runs set it). A Galera node always gets `BEGIN`, where causal reads wait."),
    "WS_MAX_SOCKETS": Setting(
        "2000", _positive_int,
        "The most agent sockets (`/ws`) one host (one gunicorn) holds at once; past it a new socket gets "
        "`server_error` `at_capacity` and close 1013. deploy/gunicorn.conf.py sets it per pool "
        "(Operations, Capacity and sizing).",
        "2000 on the socket pool; at most `GUNICORN_THREADS / 2` on the HTTP pool"),
    "WS_SEND_QUEUE_BYTES": Setting(
        "1048576", _positive_int,
        "How far one socket's client (an agent's panel, a board) may fall behind, bytes of frames queued for "
        "it; past it the socket is closed with `server_error` `too_slow` and 1013 and the client reconnects "
        "to a fresh snapshot, so no client holds up the others. A single larger frame (a board's "
        "snapshot of thousands of agents) is taken when nothing is queued."),
    "SOCKET_FANOUT_ALERT_SECONDS": Setting(
        "5", _positive_int,
        "`/health` answers 503 (`checks.agent_sockets`) when a socket host's outbox thread has not finished a "
        "pass (a poll and its sends) for longer than this, seconds, at its last heartbeat."),
    "WS_RETRY_AFTER_SECONDS": Setting(
        "10", _positive_int,
        "The `retry_after` a panel refused for capacity is told, seconds (it adds its own jitter)."),
    "LEAD_EVENTS_RETENTION_DAYS": Setting(
        "7", _positive_int,
        "How long the lead events feed (`GET /api/lead-events`) and the webhook delivery log keep an event, "
        "days; the hourly prune deletes older ones."),
    "WEBHOOK_ALLOWED_HOSTS": Setting(
        "", _host_names,
        "Webhook receivers allowed on loopback, link-local, private or metadata addresses, by host name or "
        "address as the URL names it, with the receiver's port (`10.0.0.7:8443`, `[fd00::7]:8443`) or "
        "without it (every port of that host: the database's and the service's own too); comma-separated. "
        "Every other such URL is refused when it is added and when it is sent to (SSRF, CRM, Results back "
        "to your CRM).", "empty (none)"),
    "WEBHOOK_BACKLOG_ALERT_SECONDS": Setting(
        "300", _positive_int,
        "`/health` answers 503 (`checks.webhooks`) when an enabled endpoint that is not failing has an event "
        "undelivered for longer than this, seconds, or when no webhook dispatcher holds the sending lease."),
    "WEBHOOK_RETRY_HOURS": Setting(
        "24", _positive_int,
        "How long an event is retried to an endpoint that does not answer 2xx, hours, with exponential "
        "backoff and jitter; then it is given up and the endpoint is marked failing."),
    "AGENT_STATE_RETENTION_DAYS": Setting(
        "90", _positive_int,
        "How long the agent state history and its daily roll-ups are kept, days: the agent "
        "time report reaches this far back; the hourly prune deletes older rows."),
    "BOARD_MAX_PER_TOKEN": Setting(
        "5", _positive_int,
        "Boards one supervisor token may hold open at once on one worker process of a host; the "
        "next is refused with `server_error` `too_many_boards` and close 1013, and the board retries later."),
    "BOARD_MAX_PER_SECRET": Setting(
        "20", _positive_int,
        "Boards a server may hold open with SUPERVISOR_SECRET at once on one worker process of a host; "
        "past it, as BOARD_MAX_PER_TOKEN."),
    "BOARD_PAUSE_ALERT_SECONDS": Setting(
        "900", _positive_int,
        "The supervisor board highlights a pause longer than this, seconds."),
    "JOBS_ENABLED": Setting(
        "true", _flag, "Background jobs (health checks, sweeps) under gunicorn; the CLI and the tests turn them off."),
}


# The settings that hold each caller's key (web.auth): the current one, then the one being retired.
# No key of one caller may open another's paths.
CALLER_KEYS = {"crm": ("WS_SECRET", "WS_SECRET_PREVIOUS"),
               "engine": ("ENGINE_SECRET", "ENGINE_SECRET_PREVIOUS"),
               "monitor": ("MONITOR_SECRET", "MONITOR_SECRET_PREVIOUS"),
               "supervisor": ("SUPERVISOR_SECRET", "SUPERVISOR_SECRET_PREVIOUS")}


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
    for name, (default, parse, *_) in SETTINGS.items():
        raw = overrides.pop(name, os.environ.get(name, default))
        if raw is None:
            parse(name, "")
        parsed[name] = raw if isinstance(raw, ZoneInfo) else parse(name, raw)
    _check_keys_differ(parsed)
    if parsed["AGENT_TOKEN_SECONDS"] > parsed["AGENT_TOKEN_MAX_SECONDS"]:
        raise ConfigError("AGENT_TOKEN_SECONDS must not exceed AGENT_TOKEN_MAX_SECONDS")
    parsed.update(overrides)
    return parsed
