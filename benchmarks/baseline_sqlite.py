"""Raw `sqlite3` baseline: Arbor's SQLite statements, written by hand.

A separate temporary database file gets Arbor's schema copied from `sqlite_master`
(tables, indexes, the FTS5 table and its trigger) and the connection pragmas of
arbor/settings.py (WAL, synchronous=NORMAL, foreign keys on). Each append is one
BEGIN IMMEDIATE ... COMMIT holding the statements sessions_app/storage.py runs:
session row update, latest-leaf lookup, message insert, FTS insert.
"""

from __future__ import annotations

import os
import sqlite3
import tempfile
from datetime import UTC, datetime
from typing import Any

import orjson

from .baseline import Traced, agent_token, prepare, session_token

_PRAGMAS = (
    "PRAGMA journal_mode=WAL",
    "PRAGMA synchronous=NORMAL",
    "PRAGMA busy_timeout=30000",
)

_LATEST_LEAF = """
    SELECT m.seq FROM arbor_message m
    WHERE m.session_id = ?
      AND NOT EXISTS (SELECT 1 FROM arbor_message c WHERE c.parent_seq = m.seq)
    ORDER BY m.seq DESC LIMIT 1"""
_LOCK = (
    "UPDATE arbor_session SET updated_at = ?, message_count = message_count + ?, "
    "search_tokens = search_tokens + ? WHERE id = ? RETURNING agent_id"
)
_LEAF = f"SELECT seq, message_id FROM arbor_message WHERE seq = ({_LATEST_LEAF})"
_INSERT = (
    "INSERT INTO arbor_message (session_id, message_id, parent_seq, parent_message_id, "
    "role, parts, metadata, text, search_len, created_at) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING seq"
)
_INDEX = "INSERT INTO arbor_message_fts(rowid, body, scope) VALUES (?, ?, ?)"


def _path_sql(anchor: str) -> str:
    return f"""
    WITH RECURSIVE path(seq, parent_seq, depth) AS (
        SELECT seq, parent_seq, 0 FROM arbor_message WHERE {anchor}
        UNION ALL
        SELECT m.seq, m.parent_seq, p.depth + 1
        FROM path p JOIN arbor_message m ON m.seq = p.parent_seq
    )
    SELECT m.message_id, m.parent_message_id, m.role, m.parts, m.metadata, m.created_at,
           m.text, p.depth
    FROM path p JOIN arbor_message m ON m.seq = p.seq
    ORDER BY p.depth DESC"""


_PATH_TO_ID = _path_sql("session_id = ? AND message_id = ?")
_PATH_TO_LATEST = _path_sql(f"seq = ({_LATEST_LEAF})")
# Compaction overlays and unloaded skills of the session, read with every path.
_VIEWS = """SELECT 'c', overlay_id, summary, from_message_id, to_message_id, created_at, seq
               FROM arbor_compaction WHERE session_id = ?
               UNION ALL
               SELECT 's', label, key, NULL, NULL, unloaded_at, id
               FROM arbor_skill_state WHERE session_id = ? AND unloaded_at IS NOT NULL
               ORDER BY 1, 6, 7"""


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


class RawSqlite(Traced):
    vendor = "sqlite"

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
        for sql in _schema(connection):
            raw.conn.execute(sql)
        raw.conn.execute("PRAGMA foreign_keys=ON")
        return raw

    def create_session(self, row: dict[str, Any]) -> None:
        values = [_stamp(v) if isinstance(v, datetime) else v for v in row.values()]
        self.conn.execute("PRAGMA foreign_keys=OFF")  # no auth_user/arbor_agent rows here
        self.conn.execute(
            f"INSERT INTO arbor_session ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})",
            values,
        )
        self.conn.execute("PRAGMA foreign_keys=ON")

    def _insert(
        self, cur: sqlite3.Cursor, session_id: str, agent_id: str,
        parent: tuple[int, str] | None, message: dict[str, Any],
    ) -> tuple[int, str, int]:
        mid, role, parts, metadata, text, tokens, created = prepare(message)
        cur.execute(_INSERT, (
            session_id, mid, parent[0] if parent else None, parent[1] if parent else None,
            role, parts, metadata, text, len(tokens), _stamp(created),
        ))
        seq = cur.fetchone()[0]
        scope = f"{session_token(session_id)} {agent_token(agent_id)}"
        cur.execute(_INDEX, (seq, " ".join(tokens), scope))
        return seq, mid, len(tokens)

    def append(self, session_id: str, message: dict[str, Any]) -> str:
        mid, role, parts, metadata, text, tokens, created = prepare(message)
        cur = self._cursor()
        cur.execute("BEGIN IMMEDIATE")
        try:
            cur.execute(_LOCK, (_stamp(datetime.now(UTC)), 1, len(tokens), session_id))
            agent_id = cur.fetchone()[0]
            cur.execute(_LEAF, (session_id,))
            parent = cur.fetchone()
            cur.execute(_INSERT, (
                session_id, mid, parent[0] if parent else None, parent[1] if parent else None,
                role, parts, metadata, text, len(tokens), _stamp(created),
            ))
            seq = cur.fetchone()[0]
            cur.execute(_INDEX, (
                seq, " ".join(tokens), f"{session_token(session_id)} {agent_token(agent_id)}"
            ))
            cur.execute("COMMIT")
        except BaseException:
            cur.execute("ROLLBACK")
            raise
        return mid

    def append_chain(
        self, session_id: str, messages: list[dict[str, Any]], parent_id: str | None = None
    ) -> list[str]:
        cur = self._cursor()
        cur.execute("BEGIN IMMEDIATE")
        cur.execute(_LOCK, (_stamp(datetime.now(UTC)), 0, 0, session_id))
        agent_id = cur.fetchone()[0]
        if parent_id is None:  # like Arbor: under the latest leaf
            cur.execute(_LEAF, (session_id,))
        else:
            cur.execute(
                "SELECT seq, message_id FROM arbor_message WHERE session_id = ? AND message_id = ?",
                (session_id, parent_id),
            )
        parent = cur.fetchone()
        ids, total = [], 0
        for message in messages:
            seq, mid, count = self._insert(cur, session_id, agent_id, parent, message)
            parent, total = (seq, mid), total + count
            ids.append(mid)
        cur.execute(
            "UPDATE arbor_session SET message_count = message_count + ?, "
            "search_tokens = search_tokens + ? WHERE id = ?",
            (len(ids), total, session_id),
        )
        cur.execute("COMMIT")
        return ids

    def path(self, session_id: str, leaf_id: str | None = None) -> list[tuple[Any, ...]]:
        loads, parse = orjson.loads, datetime.fromisoformat
        cur = self._cursor()
        if leaf_id is None:
            cur.execute(_PATH_TO_LATEST, (session_id,))
        else:
            cur.execute(_PATH_TO_ID, (session_id, leaf_id))
        path = [
            (r[0], r[1], r[2], loads(r[3]), loads(r[4]), parse(r[5]).replace(tzinfo=UTC), r[6])
            for r in cur.fetchall()
        ]
        cur.execute(_VIEWS, (session_id, session_id))
        cur.fetchall()
        return path

    def search(self, scope: str, terms: list[str], limit: int) -> list[tuple[Any, ...]]:
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
            f"""SELECT m.message_id, m.session_id, m.role, m.text, m.created_at, -{rank}
                FROM arbor_message_fts f JOIN arbor_message m ON m.seq = f.rowid
                WHERE arbor_message_fts MATCH ?
                ORDER BY {order} LIMIT ?""",
            params,
        )
        return cur.fetchall()

    def close(self) -> None:
        self.conn.close()
        for suffix in ("", "-wal", "-shm"):
            try:
                os.remove(self.file + suffix)
            except FileNotFoundError:
                pass
