"""Schema migrations (yoyo-migrations, raw SQL in dialerapi/migrations) and reference seeds.

`upgrade()` is what `dialerapi db upgrade` runs: a fresh database and an upgraded one end
identical (decisions.md D1).
"""

from contextlib import closing, contextmanager
from pathlib import Path

from yoyo import get_backend, read_migrations

from dialerapi.plumbing.config import database_params, url_with_nodes
from dialerapi.plumbing.db import connect, queries

MIGRATIONS_DIR = Path(__file__).parent / "migrations"


@contextmanager
def _backend(database_url):
    # Close yoyo's connection every time: left open in a transaction it would hold metadata locks
    # that block the next migration's ALTER TABLE. yoyo takes one host: the first ready node of a
    # Galera cluster's list, whose DDL Galera applies on every node (docs/operations/galera.md "Scale out").
    with closing(connect(database_url)) as probe:
        node = (probe.host, probe.port)
    url = url_with_nodes(database_url, [node]).replace("mysql+pymysql://", "mysql://", 1)
    if "unix_socket" in database_params(url):
        url += "&ssl_disabled=1"  # yoyo passes the URL's arguments to PyMySQL: as db.connect_params
    backend = get_backend(url)
    with closing(backend.connection):
        yield backend


def pending(database_url):
    """Ids of the migrations not yet applied to the database at `database_url`."""
    with _backend(database_url) as backend:
        return [m.id for m in backend.to_apply(read_migrations(str(MIGRATIONS_DIR)))]


def upgrade(database_url):
    """Apply every pending migration under yoyo's lock, then add missing seed rows.

    Returns the ids of the migrations applied (empty when the schema was current). Seeding adds
    missing priorities, the sales_dialer_config row and pause reasons, never overwriting rows an
    operator changed. Raises pymysql errors when the database is unreachable.
    """
    with _backend(database_url) as backend, backend.lock():
        to_apply = backend.to_apply(read_migrations(str(MIGRATIONS_DIR)))
        backend.apply_migrations(to_apply)
    seed(database_url)
    return [m.id for m in to_apply]


def seed(database_url):
    """Insert the reference rows that are missing (priorities, dialer config, pause reasons)."""
    conn = connect(database_url)
    try:
        seed_rows(conn)
        conn.commit()
    finally:
        conn.close()


def seed_rows(conn):
    """`seed` on an open connection, in the caller's transaction."""
    queries.seed_priorities(conn)
    queries.seed_dialer_config(conn)
    queries.seed_pause_reasons(conn)
    if queries.has_contact_caps(conn):  # a database not yet at migration 0019 has no caps to seed
        queries.seed_contact_caps(conn)
    if queries.has_cap_consent_days(conn):  # not before migration 0026
        queries.seed_cap_consent_days(conn)
