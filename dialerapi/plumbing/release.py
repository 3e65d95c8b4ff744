"""This release: its version and the schema it expects, beside the schema a database has
(docs/operations/deployment.md "Upgrading"; CHANGELOG.md).

The version is written in one place, the package's metadata (setup.cfg), and read from there by
`dialerapi --version`, `/health`, the OpenAPI document's info.version and the User-Agent of
webhook deliveries. Semantic versioning: a release that needs a migration the previous release
cannot serve on is a major one (decisions.md D1: a migration adds before it removes).
"""

from functools import lru_cache
from importlib.metadata import PackageNotFoundError, version

import pymysql
from yoyo import read_migrations

from dialerapi.plumbing.db import queries
from dialerapi.plumbing.migrate import MIGRATIONS_DIR

NO_SUCH_TABLE = 1146


def _installed_version():
    try:
        return version("dialerapi")
    except PackageNotFoundError:
        return "0+unknown"  # a checkout on the path that was never installed (pip install -e .)


VERSION = _installed_version()


@lru_cache(maxsize=1)
def migrations():
    """The ids of this release's migrations in the order they apply (`0027.caller-ids`, yoyo's ids:
    the file names)."""
    return tuple(sorted(migration.id for migration in read_migrations(str(MIGRATIONS_DIR))))


def schema(conn):
    """What the database of `conn` has of this release's schema: {applied: the last migration it
    has (an id) or None, expected: this release's last, pending: [this release's migrations it
    lacks, in order], current: bool (none pending)}. A database a later release migrated has
    migrations this one does not know: they are neither pending nor a fault, since the previous
    release serves on the next one's schema."""
    try:
        applied = {row["migration_id"] for row in queries.applied_migrations(conn)}
    except pymysql.err.ProgrammingError as exc:
        if exc.args[0] != NO_SUCH_TABLE:
            raise
        applied = set()  # never migrated
    pending = [migration for migration in migrations() if migration not in applied]
    return {"applied": max(applied) if applied else None, "expected": migrations()[-1], "pending": pending,
            "current": not pending}
