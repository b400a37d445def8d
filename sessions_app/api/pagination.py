"""Keyset pagination with opaque cursors: `limit`, `cursor` in; `items`, `next_cursor` out.

A cursor is the sort key of the last row served, so a page costs one query however deep
it is, and rows inserted meanwhile never shift what the next page holds (no duplicates,
no gaps, unlike OFFSET).
"""

from __future__ import annotations

import base64
from datetime import datetime
from typing import Any

import orjson
from django.db.models import Q, QuerySet

from memory_core import InvalidInput
from memory_core.limits import is_id

DEFAULT_LIMIT = 50
MAX_LIMIT = 200


class BadCursor(InvalidInput):
    code = "invalid_cursor"


def encode(stamp: datetime, row_id: str) -> str:
    raw = orjson.dumps([stamp.isoformat(), row_id])
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode(cursor: str) -> tuple[datetime, str]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        stamp, row_id = orjson.loads(raw)
        if not is_id(row_id):
            raise ValueError
        when = datetime.fromisoformat(stamp)
        if when.tzinfo is None:
            raise ValueError
        return when, row_id
    except (ValueError, TypeError, orjson.JSONDecodeError):
        raise BadCursor("cursor is not one this API gave out") from None


def page(
    rows: QuerySet[Any], *, field: str, cursor: str | None, limit: int, newest_first: bool
) -> tuple[list[Any], str | None]:
    """One page of `rows` ordered by (field, id); returns (items, next_cursor)."""
    direction = "-" if newest_first else ""
    rows = rows.order_by(f"{direction}{field}", f"{direction}id")
    if cursor:
        stamp, row_id = decode(cursor)
        beyond = "lt" if newest_first else "gt"
        rows = rows.filter(
            Q(**{f"{field}__{beyond}": stamp}) | Q(**{field: stamp, f"id__{beyond}": row_id})
        )
    items = list(rows[: limit + 1])
    if len(items) <= limit:
        return items, None
    items = items[:limit]
    last = items[-1]
    return items, encode(getattr(last, field), last.id)
