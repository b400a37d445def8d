"""The dialect of the database Django is configured with."""

from __future__ import annotations

from functools import cache

from django.db import connection

from . import Dialect
from .postgres import Postgres
from .sqlite import Sqlite

DIALECTS: dict[str, Dialect] = {"sqlite": Sqlite(), "postgresql": Postgres()}


@cache  # the database is chosen once per process, at settings time
def current() -> Dialect:
    try:
        return DIALECTS[connection.vendor]
    except KeyError:  # pragma: no cover - settings allow only these two
        raise RuntimeError(f"Arbor supports SQLite and PostgreSQL, not {connection.vendor}") from None
