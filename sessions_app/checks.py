"""Startup check: the embedded database needs SQLite's FTS5 extension."""

from __future__ import annotations

import sqlite3
from typing import Any

from django.conf import settings
from django.core.checks import Error, register


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


@register()
def check_fts5(app_configs: Any, **kwargs: Any) -> list[Error]:
    if settings.DATABASES["default"]["ENGINE"] != "django.db.backends.sqlite3":
        return []
    if fts5_available():
        return []
    return [
        Error(
            f"This Python's SQLite ({sqlite3.sqlite_version}) was built without FTS5, "
            "which Arbor's search needs.",
            hint="Use a Python whose sqlite3 has FTS5 (most do), or set DATABASE_URL to PostgreSQL.",
            id="arbor.E001",
        )
    ]
