"""What a hand-written raw-driver app does per message before its SQL runs.

Both raw baselines produce the same rows Arbor stores (the same stemmed tokens with
the same scope tokens, the same JSON), so the two databases hold the same data and
answer searches identically; only the code between caller and driver differs.
"""

from __future__ import annotations

import contextlib
import re
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any, Protocol

import orjson
import Stemmer

from memory_core.messages import project_text
from sessions_app.storage.paths import chain

_WORD = re.compile(r"[^\W_]+")
_stemmer = Stemmer.Stemmer("english")


Prepared = tuple[str, str, str, str, str, list[str], datetime]


def prepare(message: dict[str, Any]) -> Prepared:
    """(id, role, parts_json, metadata_json, text, tokens, created_at) for one message."""
    parts = message["parts"]
    text = "\n".join(p["text"] for p in parts if p.get("type") in ("text", "reasoning"))
    # Equal to memory_core.search.index_tokens for the ASCII corpus the benchmarks use.
    tokens = _stemmer.stemWords(_WORD.findall(text.casefold()))
    return (
        uuid.uuid4().hex, message["role"], orjson.dumps(parts).decode(),
        orjson.dumps(message.get("metadata") or {}).decode(), text, tokens, datetime.now(UTC),
    )


def path_messages(rows: list[tuple[Any, ...]], parse: Any) -> list[tuple[Any, ...]]:
    """A path's messages from its sql.path_read rows, as Arbor builds them: the chain
    checked, each parent id the id before, JSON decoded, created_at through `parse`."""
    rows = chain(rows)
    parents = [None, *(r[0] for r in rows)]
    return [(r[0], p, r[1], orjson.loads(r[2]), orjson.loads(r[3]) if r[3] else {}, parse(r[4]))
            for r, p in zip(rows, parents, strict=False)]


def with_text(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """Search rows (id, session, role, parts JSON, created_at, score) with the parts
    turned into the hit's plain text, as Arbor's search does for its hits."""
    return [(*r[:3], project_text(orjson.loads(r[3])), *r[4:]) for r in rows]


_PLACEHOLDER = re.compile(r"(?<!%)%s")


def qmark(statement: str) -> str:
    """A statement in Django's style (`%s`, a literal % as `%%`) in sqlite3's (`?`), the
    way Django's SQLite backend converts it."""
    return _PLACEHOLDER.sub("?", statement).replace("%%", "%")


def appended_event(prepared: Prepared) -> str:
    """The outbox row's data of message.appended, as the sink stores it (the message by
    reference, its parent with it: sessions_app.live.events)."""
    return orjson.dumps({"message_ref": prepared[0]}).decode()


def session_token(session_id: str) -> str:
    return "§s" + session_id.replace("-", "")


def agent_token(agent_id: str) -> str:
    return "§a" + agent_id.replace("-", "")


class Recorder:
    """A cursor proxy that logs each statement's text (for the drift check only)."""

    def __init__(self, cursor: Any, log: list[str]) -> None:
        self._cursor, self._log = cursor, log

    def execute(self, sql: str, params: Any = ()) -> Recorder:
        self._log.append(sql)
        self._cursor.execute(sql, params)
        return self

    def __getattr__(self, name: str) -> Any:
        return getattr(self._cursor, name)

    def __enter__(self) -> Recorder:
        return self

    def __exit__(self, *exc: object) -> None:
        self._cursor.close()


class Traced:
    """Baselines get cursors from `_cursor()`, which `recording()` swaps for a Recorder."""

    conn: Any

    def _cursor(self) -> Any:
        return self.conn.cursor()

    @contextlib.contextmanager
    def recording(self) -> Iterator[list[str]]:
        log: list[str] = []
        self._cursor = lambda: Recorder(self.conn.cursor(), log)  # type: ignore[method-assign]
        try:
            yield log
        finally:
            del self._cursor


class Baseline(Protocol):
    """The raw-driver side of every benchmark; session ids are shared with Arbor's."""

    def create_session(self, row: dict[str, Any]) -> None:
        """Insert a copy of Arbor's arbor_session row."""

    def append(self, session_id: str, message: dict[str, Any]) -> str:
        """Auto-parented append, one transaction; returns the new id."""

    def append_chain(
        self, session_id: str, messages: list[dict[str, Any]], parent_id: str | None = None
    ) -> list[str]:
        """Load helper: each under the previous, one transaction."""

    def path(self, session_id: str, leaf_id: str | None = None) -> list[tuple[Any, ...]]: ...

    def prepare_search(self) -> None:
        """Build what the raw search design needs, after the corpus is loaded (untimed)."""

    def search(self, scope: str | None, terms: list[str], limit: int) -> list[tuple[Any, ...]]:
        """The raw design of an any-word search (timed): scope a session token, or None."""

    def reference(self, scope: str, terms: list[str], limit: int) -> list[tuple[Any, ...]]:
        """Arbor's expected answer (scope: a session or agent token), worked out slowly."""

    def recording(self) -> contextlib.AbstractContextManager[list[str]]:
        """While active, the text of every statement run is appended to the list."""

    def close(self) -> None: ...


def open_baseline(connection: Any) -> Baseline:
    """A raw connection to a new, empty database with the schema of Django's `connection`."""
    if connection.vendor == "sqlite":
        from .baseline_sqlite import RawSqlite

        return RawSqlite.beside(connection)
    if connection.vendor == "postgresql":
        from .baseline_postgres import RawPostgres

        return RawPostgres.beside(connection)
    raise RuntimeError(f"no raw baseline for {connection.vendor}")
