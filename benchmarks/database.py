"""A throwaway database for one benchmark run, so the developer's data is never touched.

SQLite: a new temporary file. PostgreSQL (when DATABASE_URL names it): a database
`arbor_bench` (or ARBOR_BENCH_DB) on the same server, dropped at the end.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from collections.abc import Callable, Iterator
from urllib.parse import urlsplit, urlunsplit

BENCH_DB = os.environ.get("ARBOR_BENCH_DB", "arbor_bench")  # one per concurrent run


def _sqlite(keep: bool = False) -> tuple[str, Callable[[], None]]:
    fd, path = tempfile.mkstemp(prefix="arbor-bench-", suffix=".sqlite3")
    os.close(fd)

    def cleanup() -> None:
        if keep:
            print(f"kept: {path}", file=sys.stderr)
            return
        for suffix in ("", "-wal", "-shm"):
            with contextlib.suppress(FileNotFoundError):
                os.remove(path + suffix)

    return f"sqlite:///{path}", cleanup


def _postgres(url: str, name: str = BENCH_DB, keep: bool = False) -> tuple[str, Callable[[], None]]:
    import psycopg

    parts = urlsplit(url)
    bench_url = urlunsplit(parts._replace(path="/" + name))
    admin_url = url if parts.path.strip("/") not in ("", name) else urlunsplit(
        parts._replace(path="/postgres")
    )

    def admin(sql: str) -> None:
        with psycopg.connect(admin_url, autocommit=True) as conn:
            conn.execute(sql)

    admin(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
    admin(f"CREATE DATABASE {name}")
    if keep:
        return bench_url, lambda: print(f"kept: {bench_url}", file=sys.stderr)
    return bench_url, lambda: admin(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@contextlib.contextmanager
def throwaway(name: str = BENCH_DB, keep: bool = False) -> Iterator[str]:
    """Point Django at a new, migrated database (on Postgres: `name`); yields its vendor.
    Removes it after, unless `keep`."""
    url = os.environ.get("DATABASE_URL", "")
    bench_url, cleanup = (_postgres(url, name, keep) if url.startswith("postgres")
                          else _sqlite(keep))
    os.environ["DATABASE_URL"] = bench_url
    os.environ["ARBOR_DEBUG"] = "0"  # Django keeps no query log
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "arbor.settings")
    try:
        import django
        from django.core.management import call_command
        from django.db import connection, connections

        django.setup()
        try:
            call_command("migrate", verbosity=0, interactive=False)
            yield connection.vendor
        finally:
            connections.close_all()
    finally:
        cleanup()
