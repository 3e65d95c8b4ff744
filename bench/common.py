"""What both benchmarks share: a migrated database of their own beside DATABASE_URL's."""

import os
import sys
from urllib.parse import urlsplit, urlunsplit

from dialerapi import migrate
from dialerapi.db import connect


def bench_database(name):
    """Create (if needed) and migrate database `name` on DATABASE_URL's server; return its URL."""
    server_url = os.environ.get("DATABASE_URL")
    if not server_url:
        sys.exit("DATABASE_URL is not set: run `make bench`")
    admin = connect(server_url)
    with admin.cursor() as cur:
        cur.execute(f"CREATE DATABASE IF NOT EXISTS `{name}` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci")
    admin.close()
    url = urlunsplit(urlsplit(server_url)._replace(path=f"/{name}"))
    migrate.upgrade(url)
    return url
