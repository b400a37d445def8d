"""Arbor's own column types: JSON kept as text (`JSONText`), and a message's created_at
(`MessageTime`) as SQLite stores it: an integer count of microseconds since
1970-01-01 UTC (8 bytes, where ISO text takes 26). Postgres keeps timestamptz.

Reads turn it back into ISO 8601 text in SQL (`iso_text`: the path read serves that text
as it is, and the ORM parses it as it parses any SQLite datetime), or into a datetime in
Python (`from_micros`, for raw reads). Exact to the microsecond either way, before 1970
too.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
from django.db import models

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICRO = timedelta(microseconds=1)


def to_micros(value: datetime) -> int:
    aware = value if value.tzinfo else value.replace(tzinfo=UTC)
    return (aware - EPOCH) // _MICRO


def from_micros(value: int) -> datetime:
    return EPOCH + timedelta(microseconds=value)


def iso_text(column: str, sep: str = "T", offset: str = "+00:00", *, params: bool = True) -> str:
    """SQL turning the integer `column` into Python's isoformat text of that instant
    (no fraction when it is whole seconds, as isoformat writes it). params: for a
    statement run with parameters, where a literal % is written %%."""
    p = "%%" if params else "%"
    micros = f"((({column}) {p} 1000000 + 1000000) {p} 1000000)"
    return (f"strftime('{p}Y-{p}m-{p}d{sep}{p}H:{p}M:{p}S', (({column}) - {micros}) / 1000000, "
            f"'unixepoch') || CASE {micros} WHEN 0 THEN '' ELSE printf('.{p}06d', {micros}) END"
            f" || '{offset}'")


class _Reexported:
    """Migrations name a field of this module where sessions_app.models re-exports it."""

    def deconstruct(self) -> Any:
        name, _, args, kwargs = super().deconstruct()  # type: ignore[misc]
        return name, f"sessions_app.models.{type(self).__name__}", args, kwargs


class JSONText(_Reexported, models.TextField):  # type: ignore[type-arg]
    """JSON kept as text: Postgres jsonb refuses \u0000, which message text may hold.
    The ORM reads and writes Python values; raw SQL writes the JSON text."""

    def from_db_value(self, value: Any, expression: Any, connection: Any) -> Any:
        return None if value is None else orjson.loads(value)

    def to_python(self, value: Any) -> Any:
        return value

    def get_prep_value(self, value: Any) -> Any:
        return orjson.dumps(value).decode()


class MessageTime(_Reexported, models.DateTimeField):  # type: ignore[type-arg]
    """A message's created_at: integer microseconds on SQLite (to_micros, iso_text above),
    timestamptz on Postgres. The ORM reads it as ISO text turned back in SQL."""

    def db_type(self, connection: Any) -> str | None:
        # (bigint, not datetime: sqlite3 would hand a "datetime" column to Django's text parser)
        return "bigint" if connection.vendor == "sqlite" else super().db_type(connection)

    def get_db_prep_value(self, value: Any, connection: Any, prepared: bool = False) -> Any:
        if connection.vendor == "sqlite" and value is not None:
            return to_micros(self.get_prep_value(value))
        return super().get_db_prep_value(value, connection, prepared)

    def select_format(self, compiler: Any, sql: str, params: Any) -> tuple[str, Any]:
        if compiler.connection.vendor == "sqlite":
            return iso_text(sql), params
        return super().select_format(compiler, sql, params)
