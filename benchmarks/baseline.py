"""What a hand-written raw-driver app does per message before its SQL runs, and what
both raw baselines share (`Raw`: the single and the chained append, the path read).

Both raw baselines produce the same rows Arbor stores (the same stemmed tokens with
the same scope tokens, the same JSON), so the two databases hold the same data and
answer searches identically; only the code between caller and driver differs. The
statement text, the scope tokens and the outbox row come from Arbor's own modules
(sessions_app/storage/sql.py, storage/rows.py, storage/outbox.py), so benchmarks/drift.py sees
any change to them.
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
from sessions_app.storage import outbox
from sessions_app.storage.paths import chain

# Both sides load a corpus in transactions of this many messages.
LOAD_BATCH = 1_000

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


class Raw(Traced):
    """The appends and the path read of both baselines, statement for statement as
    Arbor's storage runs them (sessions_app/storage/messages.py, paths.py); each vendor
    module gives its statements, its write transaction and its message insert."""

    vendor: str
    LEAF: str
    ANCHOR_ROW: str
    MARK_BRANCH_UNDER: str
    INSERT_EVENT: str
    VIEWS: str
    PATH_TO_ID: str
    PATH_TO_LATEST: str

    def _write(self) -> contextlib.AbstractContextManager[Any]:
        """A cursor in one write transaction, committed at the end."""
        raise NotImplementedError

    def _lock(self, cur: Any, session_id: str) -> str | None:
        """Hold the session for the write; the agent id where the lock reads it."""
        raise NotImplementedError

    def _insert(self, cur: Any, session_id: str, agent_id: str | None,
                parent: tuple[int, str] | None, prepared: Prepared) -> int:
        """One message with its index row, counted in the session; returns its seq."""
        raise NotImplementedError

    def _now(self) -> Any:
        """The current time as the outbox's created_at column takes it."""
        raise NotImplementedError

    def _parse(self, value: Any) -> datetime:
        """A path row's created_at as the driver returns it, as a datetime."""
        raise NotImplementedError

    def append(self, session_id: str, message: dict[str, Any]) -> str:
        prepared = prepare(message)
        with self._write() as cur:
            agent_id = self._lock(cur, session_id)
            cur.execute(self.LEAF, (session_id,))
            self._insert(cur, session_id, agent_id, cur.fetchone(), prepared)
            cur.execute(self.INSERT_EVENT, outbox.insert_event_params(
                self.vendor, session_id, "message.appended", appended_event(prepared),
                self._now()))
            cur.fetchone()  # its seq
        return prepared[0]

    def append_chain(
        self, session_id: str, messages: list[dict[str, Any]], parent_id: str | None = None
    ) -> list[str]:
        with self._write() as cur:
            agent_id = self._lock(cur, session_id)
            if parent_id is None:  # like Arbor: under the latest leaf
                cur.execute(self.LEAF, (session_id,))
            else:
                cur.execute(self.ANCHOR_ROW, (session_id, parent_id))
            parent = cur.fetchone()
            if parent_id is not None:  # like Arbor: a second child marks the session branched
                cur.execute(self.MARK_BRANCH_UNDER, (session_id, parent[0]))
            ids = []
            for message in messages:
                prepared = prepare(message)
                parent = (self._insert(cur, session_id, agent_id, parent, prepared), prepared[0])
                ids.append(prepared[0])
        return ids

    def path(self, session_id: str, leaf_id: str | None = None) -> list[tuple[Any, ...]]:
        with contextlib.closing(self._cursor()) as cur:
            # As Arbor's first read of a path: the session's stamp and views, then the path.
            cur.execute(self.VIEWS, (session_id,) * 4)
            cur.fetchall()
            if leaf_id is None:
                cur.execute(self.PATH_TO_LATEST, (session_id, session_id, session_id))
            else:
                cur.execute(self.PATH_TO_ID, (session_id, leaf_id, session_id, session_id))
            return path_messages(cur.fetchall(), self._parse)


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
