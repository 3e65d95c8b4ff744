"""Each simulated run gets its own schema on the service's database server, dropped after it.

A run therefore starts from the same empty tables every time (same seed, same report) and leaves
nothing behind for the next run or for the live floor: no agents, leads, missed activities or
changed `sales_dialer_config`. The database user needs CREATE and DROP on
`<database>_sim_*`; the error says so when it lacks them.
"""

import logging
import os
import re
import secrets
from contextlib import closing, contextmanager
from urllib.parse import quote, urlsplit, urlunsplit

import pymysql

from dialerapi.plumbing import migrate
from dialerapi.plumbing.config import database_nodes, database_params
from dialerapi.plumbing.db import connect, queries

log = logging.getLogger(__name__)

NAME = re.compile(r"^[A-Za-z0-9_]{1,64}$")
LOOPBACK = {"127.0.0.1", "localhost", "::1"}


class SandboxError(Exception):
    """The run's schema could not be created (privileges, or a database name we will not quote)."""


def schema_url(database_url, name, unix_socket=None):
    """`database_url` naming the schema `name` instead, reached over `unix_socket` when given."""
    parts = urlsplit(database_url)
    query = parts.query
    if unix_socket:
        query = "&".join(filter(None, [query, f"unix_socket={quote(unix_socket, safe='/')}"]))
    return urlunsplit(parts._replace(path=f"/{name}", query=query))


def local_socket(database_url, name):
    """The server's Unix socket, when `database_url` reaches one node over loopback TCP and its
    credentials open the schema `name` over the socket too (the server may know the user at
    'localhost' apart); None otherwise. A run is about 130,000 round trips, and over the socket
    each costs both sides less than over TCP."""
    params = database_params(database_url)
    if "unix_socket" in params or len(database_nodes(database_url)) > 1 or params["host"] not in LOOPBACK:
        return None
    with closing(connect(database_url)) as conn:
        path = queries.sim_server_socket(conn)["socket"]
    if not path or not os.path.exists(path):
        return None
    try:
        pymysql.connect(unix_socket=path, user=params["user"], password=params["password"], database=name,
                        connect_timeout=2, ssl_disabled=True).close()
    except (pymysql.MySQLError, OSError):
        return None
    return path


def _ddl(database_url, statement):
    # Schema names cannot be query parameters; `statement` only ever holds a name checked against NAME.
    with closing(connect(database_url)) as conn, conn.cursor() as cur:
        cur.execute(statement)


@contextmanager
def sandbox(database_url, dialer, keep=False):
    """Create `<database>_sim_<random>` next to the service's database, migrate it, write `dialer`
    (a DialerSchema mapping) as its sales_dialer_config, and yield its URL. Dropped on exit unless
    `keep`. Raises SandboxError when the schema cannot be created."""
    name = f"{database_params(database_url)['database']}_sim_{secrets.token_hex(4)}"
    if not NAME.match(name):
        raise SandboxError(f"a simulation schema is named after the database; {name!r} is not a plain name")
    try:
        _ddl(database_url, f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci")
    except pymysql.err.OperationalError as exc:
        raise SandboxError(f"cannot create the simulation schema {name}: {exc.args[-1]} "
                           f"(grant CREATE, DROP on `{name.rsplit('_sim_', 1)[0]}_sim_%`.*)") from None
    try:
        url = schema_url(database_url, name, local_socket(database_url, name))
        migrate.upgrade(url)
        with closing(connect(url)) as conn:
            queries.sim_set_dialer_config(conn, **dialer)
            conn.commit()
        yield url
    finally:
        if keep:
            log.warning("simulation schema %s kept (--keep): DROP DATABASE `%s` when done", name, name)
        else:
            _ddl(database_url, f"DROP DATABASE IF EXISTS `{name}`")
