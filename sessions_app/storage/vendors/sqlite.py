"""SQLite's dialect: FTS5 index rows beside the messages (sqlite_index.py keeps the
contentless index), the database's write lock for a session's writes, message times as
integer microseconds. The message search statement is in sqlite_search.py."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from ...models.fields import from_micros, to_micros
from .. import sql
from ..rows import MessageRow, message_scope, namespace_token
from . import Shared, sqlite_counts
from .sqlite_index import stored_tokens
from .sqlite_search import fts5_match, quoted, sqlite_messages

# An appended index row's counts (sqlite_counts.APPENDED), its rowid by agent and seq.
APPEND_COUNTS = sqlite_counts.APPENDED.format(
    rowid=f"({sql.AGENT_FTS_KEY} << {sql.FTS_SHIFT}) | %s")


def _fts5_write(cur: Any, fts: str, seq: int, tokens: Sequence[str], scope: str) -> None:
    cur.execute(
        f"INSERT INTO {fts}(rowid, body, scope) VALUES (%s, %s, %s)",
        [seq, " ".join(tokens), scope],
    )


def _fts5_search(
    cur: Any, *, fts: str, columns: str, source: str, scope: str, terms: Sequence[str],
    limit: int, exclude: str | None = None,
) -> list[tuple[Any, ...]]:
    """Rows of `source` (aliased, joined on seq) matching any term in the scope, less the
    rows holding the `exclude` scope token: rows holding every term first (one
    materialised subquery), then BM25, then newest (rowid) first."""
    words = quoted(terms)
    rank = f"bm25({fts}, 1.0, 0.0)"  # the scope column weighs nothing
    order = f"{rank}, f.rowid DESC"
    params: list[Any] = [fts5_match(words, "OR", scope, exclude)]
    if len(terms) > 1:
        order = f"(f.rowid IN (SELECT rowid FROM {fts} WHERE {fts} MATCH %s)) DESC, " + order
        params.append(fts5_match(words, "AND", scope))
    params.append(limit)
    alias = source.split()[-1]
    cur.execute(
        f"""SELECT {columns}, -{rank}
            FROM {fts} f JOIN {source} ON {alias}.seq = f.rowid
            WHERE {fts} MATCH %s
            ORDER BY {order} LIMIT %s""",
        params,
    )
    return list(cur.fetchall())


def index_rows(cur: Any, rows: Sequence[tuple[int, Sequence[str]]],
               scope: Sequence[str]) -> None:
    """Index rows given by (index rowid, tokens), all of one scope, with their counts
    (sqlite_counts): every bulk write of the message index goes through here."""
    joined = " ".join(scope)
    cur.executemany("INSERT INTO arbor_message_fts(rowid, body, scope) VALUES (%s, %s, %s)",
                    [(rowid, " ".join(tokens), joined) for rowid, tokens in rows])
    sqlite_counts.written(cur, rows)


class Sqlite(Shared):
    vendor = "sqlite"
    search_messages = staticmethod(sqlite_messages)

    def fast_reads(self, cur: Any) -> None:
        return None

    def messages_deleted(self, cur: Any) -> None:
        # A deletion files a pending count row per message, which every search adds up
        # until the WAL thread folds them: a session's worth is folded now instead.
        sqlite_counts.fold_pending(cur)

    def give_back_free_pages(self, cur: Any) -> None:
        # A no-op in a file made without auto_vacuum=INCREMENTAL (settings). Python's
        # sqlite3 steps the pragma once, and each step gives back one page: run it once
        # per free page (executemany loops in C).
        cur.execute("PRAGMA freelist_count")
        free = int(cur.fetchone()[0])
        if free:
            cur.executemany("PRAGMA incremental_vacuum", [()] * free)

    def to_datetime(self, value: Any) -> datetime:
        if isinstance(value, int):  # a message's created_at (models.MessageTime)
            return from_micros(value)
        if isinstance(value, datetime):
            return value if value.tzinfo else value.replace(tzinfo=UTC)
        return datetime.fromisoformat(value).replace(tzinfo=UTC)

    def db_datetime(self, value: datetime) -> Any:
        return value.astimezone(UTC).replace(tzinfo=None).isoformat(" ")

    def message_time(self, value: datetime) -> Any:
        return to_micros(value)

    def lock_session(self, cur: Any, session_id: str) -> str | None:
        return None  # the IMMEDIATE transaction already holds the database's write lock

    def insert_message(self, cur: Any, row: MessageRow, agent_id: str | None) -> int:
        agent_id = self.count(cur, row.session_id, messages=1, tokens=row.search_len)
        cur.execute(sql.INSERT_MESSAGE, row.values())
        seq = int(cur.fetchone()[0])
        scope = message_scope(row.session_id, agent_id)
        cur.execute(sql.INSERT_FTS, [agent_id, seq, " ".join(row.tokens), " ".join(scope)])
        cur.execute(APPEND_COUNTS, [*sqlite_counts.appended_values(row.tokens), agent_id, seq])
        return seq

    def insert_messages(
        self, cur: Any, rows: Sequence[MessageRow], scope: Sequence[str] | None
    ) -> None:
        cur.executemany(sql.INSERT_LINKED, [r.linked_values() for r in rows])
        if scope is not None and rows:
            session_id = rows[0].session_id
            cur.execute(f"SELECT {sql.SESSION_FTS_KEY}", [session_id])
            key = int(cur.fetchone()[0]) << sql.FTS_SHIFT
            marks = ", ".join(["%s"] * len(rows))
            cur.execute(f"SELECT message_id, seq FROM arbor_message WHERE session_key = "
                        f"{sql.SESSION_KEY} AND message_id IN ({marks})",
                        [session_id, *(r.message_id for r in rows)])
            seqs = dict(cur.fetchall())
            index_rows(cur, [(key | seqs[r.message_id], r.tokens) for r in rows], scope)

    def replace_index(self, cur: Any, seq: int, tokens: Sequence[str], scope: Sequence[str]) -> None:
        return None  # the UPDATE's trigger did it (migration 0002), from parts and search_extra

    def copy_index(
        self, cur: Any, *, source_session: str, target_session: str, scope: Sequence[str]
    ) -> None:
        # The index keeps no bodies (contentless): each copy's is rebuilt from its row,
        # which carries the source's search_extra, and counted as any written row.
        cur.execute(f"SELECT {sql.SESSION_FTS_KEY}", [target_session])
        key = int(cur.fetchone()[0]) << sql.FTS_SHIFT
        cur.execute("SELECT seq, parts, search_extra FROM arbor_message "
                    f"WHERE session_key = {sql.SESSION_KEY}", [target_session])
        index_rows(cur, [(key | seq, stored_tokens(parts, extra))
                         for seq, parts, extra in cur.fetchall()], scope)

    def index_entry(self, cur: Any, seq: int, tokens: Sequence[str], namespace: str) -> None:
        cur.execute("DELETE FROM arbor_entry_fts WHERE rowid = %s", [seq])
        _fts5_write(cur, "arbor_entry_fts", seq, tokens, namespace_token(namespace))

    def search_entries(
        self, cur: Any, namespace: str, terms: Sequence[str], limit: int
    ) -> list[tuple[Any, ...]]:
        return _fts5_search(
            cur, fts="arbor_entry_fts", columns="e.key, e.description, e.content, e.updated_at",
            source="arbor_entry e", scope=namespace_token(namespace), terms=terms, limit=limit)
