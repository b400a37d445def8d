"""The driver's own cursor for the hot paths (append, path read, search).

Django's cursor wrapper costs about 6 µs per statement and 8 µs per cursor here (the
debug/wrapper checks, `%s` -> `?` by regex on every SQLite call, the connection
proxy): on an append of six statements that is a fifth of its time. These paths run
the same statements on the same connection and transaction through the DB-API cursor
beneath, with database errors still turned into Django's.

When anything watches the queries (DEBUG's log, `CaptureQueriesContext`, the test
suite's query counts, an `execute_wrapper`), Django's own cursor is used, so what
they see is every statement, as before.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connections

_QMARK: dict[str, str] = {}
_PLACEHOLDER = re.compile(r"(?<!%)%s")  # as Django's SQLite backend converts them
_MAX_STATEMENTS = 1_000  # the storage has a few dozen; a bound all the same


def _qmark(query: str) -> str:
    """Django's `%s` placeholders as sqlite3's `?` (and `%%` as `%`), converted once."""
    converted = _QMARK.get(query)
    if converted is None:
        if len(_QMARK) >= _MAX_STATEMENTS:
            _QMARK.clear()
        converted = _QMARK[query] = _PLACEHOLDER.sub("?", query).replace("%%", "%")
    return converted


class _SqliteCursor(sqlite3.Cursor):
    """sqlite3's cursor taking the `%s` statements the storage is written in."""

    def execute(self, query: str, params: Sequence[Any] = ()) -> Any:  # type: ignore[override]
        return super().execute(_qmark(query), params)

    def executemany(self, query: str, seq: Any) -> Any:  # type: ignore[override]
        return super().executemany(_qmark(query), seq)


@contextmanager
def cursor() -> Iterator[Any]:
    """A cursor on Django's default connection, in its current transaction."""
    conn = connections[DEFAULT_DB_ALIAS]
    if conn.queries_logged or conn.execute_wrappers or conn.connection is None:
        with conn.cursor() as cur:
            yield cur
        return
    conn.validate_thread_sharing()
    conn.validate_no_broken_transaction()
    with conn.wrap_database_errors:
        if conn.vendor == "sqlite":
            cur = conn.connection.cursor(_SqliteCursor)
        else:
            cur = conn.create_cursor()
        try:
            yield cur
        finally:
            cur.close()
