"""Each simulated run gets its own schema on the service's database server, dropped after it.

A run therefore starts from the same empty tables every time (same seed, same report) and leaves
nothing behind for the next run or for the live floor: no agents, leads, missed activities or
changed `sales_dialer_config` (issue #18). The database user needs CREATE and DROP on
`<database>_sim_*`; the error says so when it lacks them.
"""

import logging
import re
import secrets
from contextlib import closing, contextmanager
from urllib.parse import urlsplit, urlunsplit

import pymysql

from dialerapi.plumbing import migrate
from dialerapi.plumbing.config import database_params
from dialerapi.plumbing.db import connect, queries

log = logging.getLogger(__name__)

NAME = re.compile(r"^[A-Za-z0-9_]{1,64}$")


class SandboxError(Exception):
    """The run's schema could not be created (privileges, or a database name we will not quote)."""


def schema_url(database_url, name):
    """`database_url` naming the schema `name` instead."""
    parts = urlsplit(database_url)
    return urlunsplit(parts._replace(path=f"/{name}"))


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
    url = schema_url(database_url, name)
    try:
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
