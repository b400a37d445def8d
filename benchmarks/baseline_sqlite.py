"""Raw `sqlite3` baseline: Arbor's SQLite statements (text from sessions_app/storage/sql.py), run by hand.

A separate temporary database file gets Arbor's schema copied from `sqlite_master`
(tables, indexes, the FTS5 table and its trigger) and the connection pragmas of
arbor/settings.py (WAL, synchronous=NORMAL, foreign keys on). Each append is one
BEGIN IMMEDIATE ... COMMIT holding the statements sessions_app/storage.py runs:
latest-leaf lookup, session counters (returning the agent), message insert, FTS insert,
the search counts' pending row.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import tempfile
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from sessions_app.models.fields import to_micros
from sessions_app.storage import outbox, sql
from sessions_app.storage.rows import message_scope, session_token
from sessions_app.storage.vendors.sqlite import APPEND_COUNTS
from sessions_app.storage.vendors.sqlite_counts import appended_values
from sessions_app.storage.vendors.sqlite_index import search_body

from .baseline import LOAD_BATCH, Prepared, Raw, qmark, with_text

_PRAGMAS = (
    "PRAGMA journal_mode=WAL",
    "PRAGMA synchronous=NORMAL",
    "PRAGMA busy_timeout=30000",
)

# The message insert's statements (Sqlite.insert_message's), in sqlite3's `?` style.
_COUNT = qmark(sql.COUNT)
_INSERT = qmark(sql.INSERT_MESSAGE)
_INDEX = qmark(sql.INSERT_FTS)
_COUNTS = qmark(APPEND_COUNTS)  # the search counts' pending row (vendors/sqlite_counts.py)


def _stamp(value: datetime) -> str:
    if value.tzinfo is not None:
        value = value.astimezone(UTC).replace(tzinfo=None)
    return value.isoformat(" ")


def _schema(connection: Any) -> list[str]:
    """Arbor's DDL in creation order, without FTS5's shadow tables."""
    with connection.cursor() as cur:
        cur.execute(
            "SELECT type, name, sql FROM sqlite_master "
            "WHERE sql IS NOT NULL AND tbl_name LIKE 'arbor%' ORDER BY rowid"
        )
        rows = cur.fetchall()
    virtual = [name for kind, name, sql in rows if sql.upper().startswith("CREATE VIRTUAL")]
    return [
        sql for kind, name, sql in rows
        if not (kind == "table" and any(name.startswith(v + "_") for v in virtual))
    ]


class RawSqlite(Raw):
    vendor = "sqlite"
    # Arbor's statement text (sessions_app/storage/sql.py) in sqlite3's `?` style.
    LEAF = qmark(sql.LEAF)
    ANCHOR_ROW = qmark(f"SELECT seq, message_id FROM arbor_message WHERE {sql.ID_ANCHOR}")
    MARK_BRANCH_UNDER = qmark(sql.MARK_BRANCH_UNDER)
    # The event each append emits: its outbox row, numbered by the same statement (storage/outbox.py).
    INSERT_EVENT = qmark(outbox.INSERT_EVENT["sqlite"])
    # Compaction overlays and unloaded skills of the session, read with every path.
    VIEWS = qmark(sql.STAMPED_VIEWS)
    PATH_TO_ID = qmark(sql.READ_TO_ID["sqlite"])
    PATH_TO_LATEST = qmark(sql.READ_TO_LATEST["sqlite"])

    def __init__(self, path: str) -> None:
        self.file = path
        self.conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        for pragma in _PRAGMAS:
            self.conn.execute(pragma)

    @classmethod
    def beside(cls, connection: Any) -> RawSqlite:
        fd, path = tempfile.mkstemp(prefix="arbor-bench-raw-", suffix=".sqlite3")
        os.close(fd)
        raw = cls(path)
        for statement in _schema(connection):
            raw.conn.execute(statement)
        raw.conn.execute("PRAGMA foreign_keys=ON")
        return raw

    def create_session(self, row: dict[str, Any]) -> None:
        values = [_stamp(v) if isinstance(v, datetime) else v for v in row.values()]
        self.conn.execute("PRAGMA foreign_keys=OFF")  # no auth_user/arbor_agent rows here
        self.conn.execute(
            f"INSERT INTO arbor_session ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})",
            values,
        )
        # The agent's number for index rowids (made by a trigger on arbor_agent in Arbor).
        self.conn.execute("INSERT OR IGNORE INTO arbor_search_key (agent_id) VALUES (?)",
                          (row["agent_id"],))
        self.conn.execute("PRAGMA foreign_keys=ON")

    @contextlib.contextmanager
    def _write(self) -> Iterator[Any]:
        cur = self._cursor()
        cur.execute("BEGIN IMMEDIATE")  # holds the write lock: no lock statement
        try:
            yield cur
        except BaseException:
            cur.execute("ROLLBACK")
            raise
        cur.execute("COMMIT")

    def _lock(self, cur: Any, session_id: str) -> str | None:
        return None  # the IMMEDIATE transaction holds the database

    def _insert(self, cur: Any, session_id: str, agent_id: str | None,
                parent: tuple[int, str] | None, prepared: Prepared) -> int:
        """Like Arbor's Sqlite.insert_message: counters (returning the agent), row, FTS row."""
        mid, role, parts, metadata, _, tokens, created = prepared
        cur.execute(_COUNT, (_stamp(datetime.now(UTC)), 1, len(tokens), session_id))
        agent_id = cur.fetchone()[0]
        cur.execute(_INSERT, (
            session_id, mid, parent[0] if parent else None,
            role, parts, metadata, len(tokens), to_micros(created), None,
        ))
        seq = int(cur.fetchone()[0])
        cur.execute(_INDEX, (agent_id, seq, " ".join(tokens),
                             " ".join(message_scope(session_id, agent_id))))
        cur.execute(_COUNTS, (*appended_values(tokens), agent_id, seq))
        return seq

    def _now(self) -> Any:
        return _stamp(datetime.now(UTC))

    def _parse(self, value: Any) -> datetime:
        return datetime.fromisoformat(value)

    def prepare_search(self) -> None:
        """The raw design's index: a plain FTS5 table of the same stemmed tokens (rowid =
        message seq), with the session id as a one-token column; copied untimed, in
        transactions of LOAD_BATCH rows in insertion order, as the messages were loaded
        (an FTS5 index written in one go has fewer segments, so it would read faster than
        any index an app builds as messages arrive)."""
        self.conn.execute("DROP TABLE IF EXISTS raw_search")
        self.conn.execute("CREATE VIRTUAL TABLE raw_search USING fts5(body, session, "
                          "tokenize='ascii')")
        # Arbor's index keeps no bodies: they are rebuilt from the messages, as its
        # triggers do.
        rows = [(seq, search_body(parts, extra), session_token(session_id))
                for seq, parts, extra, session_id in self.conn.execute(
                    "SELECT m.seq, m.parts, m.search_extra, s.id FROM arbor_message m "
                    "JOIN arbor_session s ON s.key = m.session_key ORDER BY m.seq")]
        for start in range(0, len(rows), LOAD_BATCH):
            self.conn.execute("BEGIN")
            self.conn.executemany("INSERT INTO raw_search (rowid, body, session) VALUES (?, ?, ?)",
                                  rows[start : start + LOAD_BATCH])
            self.conn.execute("COMMIT")

    def search(self, scope: str | None, terms: list[str], limit: int) -> list[tuple[Any, ...]]:
        """The raw design: any word, ranked by bm25, `limit` rows, then their messages. A
        session search names the session's token; an agent search filters nothing."""
        words = " OR ".join('"' + w.replace('"', '""') + '"' for w in terms)
        match = f'body : ({words})' if scope is None else f'session : "{scope}" AND body : ({words})'
        cur = self._cursor()
        cur.execute(
            """SELECT m.message_id, s.id, m.role, m.parts, m.created_at, -f.r
               FROM (SELECT rowid, bm25(raw_search, 1.0, 0.0) AS r FROM raw_search
                     WHERE raw_search MATCH ? ORDER BY r LIMIT ?) f
               JOIN arbor_message m ON m.seq = f.rowid
               JOIN arbor_session s ON s.key = m.session_key ORDER BY f.r""",
            (match, limit),
        )
        return with_text(cur.fetchall())

    def reference(self, scope: str, terms: list[str], limit: int) -> list[tuple[Any, ...]]:
        """Arbor's answer worked out the slow, obvious way (scope token in the match, every
        matching row ranked), to check Arbor's results; not timed."""
        words = ['"' + w.replace('"', '""') + '"' for w in terms]
        rank = "bm25(arbor_message_fts, 1.0, 0.0)"
        order = f"{rank}, f.rowid DESC"
        params: list[Any] = [f'scope : "{scope}" AND body : ({" OR ".join(words)})']
        if len(terms) > 1:
            order = ("(f.rowid IN (SELECT rowid FROM arbor_message_fts "
                     "WHERE arbor_message_fts MATCH ?)) DESC, " + order)
            params.append(f'scope : "{scope}" AND body : ({" AND ".join(words)})')
        params.append(limit)
        cur = self._cursor()
        cur.execute(
            f"""SELECT m.message_id, s.id, m.role, m.parts, m.created_at, -{rank}
                FROM arbor_message_fts f JOIN arbor_message m ON m.seq = f.rowid & {sql.FTS_SEQ}
                JOIN arbor_session s ON s.key = m.session_key
                WHERE arbor_message_fts MATCH ?
                ORDER BY {order} LIMIT ?""",
            params,
        )
        return with_text(cur.fetchall())

    def close(self) -> None:
        self.conn.close()
        for suffix in ("", "-wal", "-shm"):
            try:
                os.remove(self.file + suffix)
            except FileNotFoundError:
                pass
