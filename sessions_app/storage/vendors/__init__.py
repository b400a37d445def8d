"""Everything in Arbor's SQL that differs by database, one module per vendor.

A `Dialect` owns whole operations (lock a session, insert messages with their index
rows, replace or copy index rows, keep statistics, search, dates); the storage modules
never splice vendor SQL. `chosen.current()` is the dialect of the configured database.

- sqlite.py: the `Sqlite` dialect; sqlite_search.py its message search (FTS5);
  sqlite_index.py the upkeep of the contentless FTS5 index; sqlite_wal.py the WAL
  checkpoints off the request path.
- postgres.py: the `Postgres` dialect; postgres_search.py its message search
  (tsvector, GIN, term statistics).

Both vendors index the same Python-made tokens and rank with the same BM25 (FTS5's
formula: the constants below, IDF floored at MIN_IDF, document length counting the two
scope tokens), so a query answers the same on SQLite and Postgres.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Protocol

from memory_core.errors import NotFound
from memory_core.messages import now

from .. import sql
from ..rows import MessageRow

# BM25 as FTS5 computes it: score = Σ idf × tf × (K1 + 1) / (tf + K1 × (1 - B + B × dl / avgdl)).
K1 = 1.2
B = 0.75
K1_PLUS_1 = K1 + 1  # 2.2: a term's ceiling is K1_PLUS_1 × its idf
MIN_IDF = 1e-6
SCOPE_TOKENS = 2  # every indexed message carries a session token and an agent token
MAX_POSITIONS = 256  # Postgres keeps at most 256 positions per lexeme


class Dialect(Protocol):
    vendor: str

    def fast_reads(self, cur: Any) -> None: ...

    def give_back_free_pages(self, cur: Any) -> None:
        """After deletes: return the pages they freed to the file system, where the
        database keeps freed pages in its own file (SQLite)."""

    def messages_deleted(self, cur: Any) -> None:
        """After deleting messages, in the same transaction: settle what the deletion left
        for later (SQLite: the search counts' pending rows, one a message)."""

    def to_datetime(self, value: Any) -> datetime: ...

    def db_datetime(self, value: datetime) -> Any: ...

    def message_time(self, value: datetime) -> Any:
        """A message's created_at in its column's form (models.MessageTime)."""

    def lock_session(self, cur: Any, session_id: str) -> str | None:
        """Hold the session for this transaction's writes, touching no counter (the write
        decides later whether anything changed). Returns the agent id when the lock read
        it, None when the transaction already held the lock. Raises NotFound."""

    def insert_message(self, cur: Any, row: MessageRow, agent_id: str | None) -> int:
        """Insert one message with its index rows, count it in the session's statistics
        and updated_at; returns its seq. agent_id: what lock_session returned."""

    def insert_messages(
        self, cur: Any, rows: Sequence[MessageRow], scope: Sequence[str] | None
    ) -> None:
        """Bulk insert, parents first (each row names its parent by id); index rows from
        each row's tokens, or none when scope is None (they are copied after)."""

    def replace_index(self, cur: Any, seq: int, tokens: Sequence[str], scope: Sequence[str]) -> None:
        """The index row of an updated message."""

    def copy_index(
        self, cur: Any, *, source_session: str, target_session: str, scope: Sequence[str]
    ) -> None:
        """Index rows of the target's messages, copied from the same ids in the source."""

    def count(self, cur: Any, session_id: str, *, messages: int, tokens: int) -> str:
        """Move the session's counters (and updated_at) after a write that changed rows;
        returns the agent id. Raises NotFound."""

    def search(
        self, cur: Any, *, agent_id: str, session_id: str | None,
        exclude_session_id: str | None, terms: Sequence[str], limit: int,
    ) -> list[tuple[Any, ...]]:
        """(message_id, session_id, role, parts, created_at, score) of the `limit` best
        messages of one session, or of the agent's sessions but exclude_session_id: rows
        holding every term first, then BM25, then newest."""

    def index_entry(self, cur: Any, seq: int, tokens: Sequence[str], namespace: str) -> None: ...

    def search_entries(
        self, cur: Any, namespace: str, terms: Sequence[str], limit: int
    ) -> list[tuple[Any, ...]]: ...


class Shared:
    """What both vendors' dialects do alike: counting a session's messages (Postgres' BM25
    reads the counters as statistics) and handing message search to their own module."""

    # The vendor's message search (sqlite_search / postgres_search), set by each dialect.
    search_messages: Any

    def db_datetime(self, value: datetime) -> Any:  # pragma: no cover - each vendor's own
        raise NotImplementedError

    def count(self, cur: Any, session_id: str, *, messages: int, tokens: int) -> str:
        cur.execute(sql.COUNT, [self.db_datetime(now()), messages, tokens, session_id])
        return agent_of(cur, session_id)

    def search(
        self, cur: Any, *, agent_id: str, session_id: str | None,
        exclude_session_id: str | None, terms: Sequence[str], limit: int,
    ) -> list[tuple[Any, ...]]:
        return self.search_messages(  # type: ignore[no-any-return]
            cur, agent_id=agent_id, session_id=session_id,
            exclude_session_id=exclude_session_id, terms=terms, limit=limit)


def agent_of(cur: Any, session_id: str) -> str:
    row = cur.fetchone()
    if row is None:
        raise NotFound(f"session {session_id} not found")
    return str(row[0])
