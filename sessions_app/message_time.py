"""A message's created_at as SQLite stores it: an integer count of microseconds since
1970-01-01 UTC (8 bytes, where ISO text takes 26). Postgres keeps timestamptz.

Reads turn it back into ISO 8601 text in SQL (`iso_text`: the path read serves that text
as it is, and the ORM parses it as it parses any SQLite datetime), or into a datetime in
Python (`from_micros`, for raw reads). Exact to the microsecond either way, before 1970
too.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

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

