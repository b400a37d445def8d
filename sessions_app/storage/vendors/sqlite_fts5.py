"""Startup check: the embedded database needs SQLite's FTS5 extension."""

from __future__ import annotations

import sqlite3

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured


def fts5_available() -> bool:
    try:
        conn = sqlite3.connect(":memory:")
        try:
            conn.execute("CREATE VIRTUAL TABLE probe USING fts5(body)")
        finally:
            conn.close()
    except sqlite3.OperationalError:
        return False
    return True


def require_fts5(engine: str | None = None) -> None:
    """Stop at startup, with a clear message, when search could not work."""
    engine = engine or settings.DATABASES["default"]["ENGINE"]
    if engine != "django.db.backends.sqlite3":
        return
    if not fts5_available():
        raise ImproperlyConfigured(
            f"This Python's SQLite ({sqlite3.sqlite_version}) was built without FTS5, "
            "which Arbor's full-text search needs. Use a Python whose sqlite3 module has "
            "FTS5 (most builds do), or set DATABASE_URL to a PostgreSQL database."
        )
