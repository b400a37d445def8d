"""Raw psycopg baseline: Arbor's PostgreSQL statements (text from sessions_app/storage/sql.py), run by hand.

The baseline's tables live in a schema of their own in the same database, made with
`CREATE TABLE ... (LIKE <arbor table> INCLUDING ALL)` (columns, defaults, identity,
indexes including the GIN index) plus the foreign keys between them; the connection's
search_path points at it, so the statements are textually Arbor's. The connection
uses psycopg's defaults (server-side binding, statements prepared after 5 uses).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import psycopg

from sessions_app.storage import outbox, sql
from sessions_app.storage.rows import message_scope
from sessions_app.storage.vendors.postgres import (
    _tsvector as tsvector,  # the vector literal Arbor writes
)

from .baseline import Prepared, Raw, with_text

_TABLES = ("arbor_session", "arbor_message", "arbor_compaction", "arbor_skill_state",
           "arbor_session_event")
_SCOPE_TOKENS = len(message_scope("", ""))
# Arbor's answer worked out the slow, obvious way (every term's frequency counted over
# the GIN index, every matching row scored): the check of Arbor's results, not timed.
_REFERENCE = f"""
    WITH stats AS MATERIALIZED (
        SELECT greatest(sum(message_count), 1)::float8 AS n,
               (sum(search_tokens) + {_SCOPE_TOKENS} * sum(message_count))::float8
                 / greatest(sum(message_count), 1) AS avgdl
        FROM arbor_session
    ),
    terms AS MATERIALIZED (
        SELECT t.term,
               (SELECT count(*) FROM arbor_message x
                WHERE x.search_vector @@ t.q) AS df
        FROM unnest(%s::text[], %s::tsquery[]) AS t(term, q)
    ),
    weights AS MATERIALIZED (
        SELECT term, greatest(ln((stats.n - df + 0.5) / (df + 0.5)), 1e-6) AS idf
        FROM terms, stats
    )
    SELECT m.message_id, (SELECT id FROM arbor_session WHERE key = m.session_key),
           m.role, m.parts, m.created_at, s.score
    FROM arbor_message m
    CROSS JOIN stats
    CROSS JOIN LATERAL (
        SELECT sum(w.idf * (u.tf * 2.2)
                   / (u.tf + 1.2 * (0.25 + 0.75 * (m.search_len + {_SCOPE_TOKENS})
                                            / stats.avgdl))) AS score,
               count(*) AS matched
        FROM (SELECT lexeme, array_length(positions, 1)::float8 AS tf
              FROM unnest(m.search_vector)) u
        JOIN weights w ON w.term = u.lexeme
    ) s
    WHERE m.search_vector @@ %s::tsquery
    ORDER BY (s.matched = %s) DESC, s.score DESC, m.seq DESC
    LIMIT %s"""


def _quote(term: str) -> str:
    return "'" + term.replace("\\", "\\\\").replace("'", "''") + "'"


class RawPostgres(Raw):
    vendor = "postgresql"
    # Arbor's statement text (sessions_app/storage/sql.py).
    LEAF = sql.LEAF
    ANCHOR_ROW = f"SELECT seq, message_id FROM arbor_message WHERE {sql.ID_ANCHOR}"
    MARK_BRANCH_UNDER = sql.MARK_BRANCH_UNDER
    # The event each append emits: its outbox row, numbered by the same statement (storage/outbox.py).
    INSERT_EVENT = outbox.INSERT_EVENT["postgresql"]
    # Compaction overlays and unloaded skills of the session, read with every path.
    VIEWS = sql.STAMPED_VIEWS
    PATH_TO_ID = sql.READ_TO_ID["postgresql"]
    PATH_TO_LATEST = sql.READ_TO_LATEST["postgresql"]

    def __init__(self, conninfo: dict[str, Any], schema: str) -> None:
        self.schema = schema
        self.conninfo = conninfo
        # Autocommit like Django's connection: reads send no BEGIN/COMMIT, writes do.
        self.conn = psycopg.connect(
            **conninfo, autocommit=True, options=f"-c search_path={schema}"
        )

    @classmethod
    def beside(cls, connection: Any) -> RawPostgres:
        s = connection.settings_dict
        conninfo = {k: v for k, v in {
            "dbname": s["NAME"], "user": s["USER"], "password": s["PASSWORD"],
            "host": s["HOST"], "port": s["PORT"],
        }.items() if v}
        schema = f"arbor_raw_{os.getpid()}"
        with psycopg.connect(**conninfo, autocommit=True) as admin:
            source = admin.execute(
                "SELECT n.nspname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE c.oid = 'arbor_message'::regclass"
            ).fetchone()[0]
            keys = admin.execute(
                "SELECT conrelid::regclass::text, conname, pg_get_constraintdef(oid) "
                "FROM pg_constraint WHERE contype = 'f' "
                "AND conrelid = ANY(%s::regclass[]) AND confrelid = ANY(%s::regclass[])",
                [list(_TABLES), list(_TABLES)],
            ).fetchall()
            admin.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
            admin.execute(f"CREATE SCHEMA {schema}")
            for table in _TABLES:
                admin.execute(
                    f"CREATE TABLE {schema}.{table} (LIKE {source}.{table} INCLUDING ALL)"
                )
            admin.execute(f"SET search_path = {schema}")
            for table, name, definition in keys:
                admin.execute(f"ALTER TABLE {table} ADD CONSTRAINT {name} {definition}")
        return cls(conninfo, schema)

    def create_session(self, row: dict[str, Any]) -> None:
        self.conn.execute(
            f"INSERT INTO arbor_session ({', '.join(row)}) "
            f"VALUES ({', '.join(['%s'] * len(row))})",
            list(row.values()),
        )

    @contextlib.contextmanager
    def _write(self) -> Iterator[Any]:
        with self.conn.transaction(), self._cursor() as cur:
            yield cur

    def _lock(self, cur: Any, session_id: str) -> str | None:
        cur.execute(sql.LOCK_SESSION, (session_id,))
        return str(cur.fetchone()[0])

    def _insert(self, cur: Any, session_id: str, agent_id: str | None,
                parent: tuple[int, str] | None, prepared: Prepared) -> int:
        """Like Arbor's Postgres.insert_message: the row, its vector and the counters."""
        assert agent_id is not None, "_lock read it"
        mid, role, parts, metadata, _, tokens, created = prepared
        cur.execute(sql.INSERT_COUNTED, (
            datetime.now(UTC), len(tokens), session_id,  # the counters, in the same statement
            session_id, mid, parent[0] if parent else None,
            role, parts, metadata, len(tokens), created, None,
            tsvector(tokens, message_scope(session_id, agent_id)),
        ))
        return int(cur.fetchone()[0])

    def _now(self) -> Any:
        return datetime.now(UTC)

    def _parse(self, value: Any) -> datetime:
        return value  # psycopg parsed it

    def prepare_search(self) -> None:
        """Nothing to build (the raw design searches the same tsvector column and GIN
        index); the tables are vacuumed and analysed as autovacuum would after a load."""
        for table in ("arbor_session", "arbor_message"):
            self.conn.execute(f"VACUUM ANALYZE {table}")

    def search(self, scope: str | None, terms: list[str], limit: int) -> list[tuple[Any, ...]]:
        """The raw design: any word (within the session's token for a session search; an
        agent search filters nothing), ranked by ts_rank, `limit` rows."""
        words = " | ".join(_quote(t) for t in terms)
        query = f"({words})" if scope is None else f"'{scope}' & ({words})"
        with self._cursor() as cur:
            cur.execute(
                "SELECT h.message_id, s.id, h.role, h.parts, h.created_at, h.r FROM ("
                "SELECT message_id, session_key, role, parts, created_at, seq, "
                "ts_rank(search_vector, q) AS r "
                "FROM arbor_message, CAST(%s AS tsquery) AS q WHERE search_vector @@ q "
                "ORDER BY r DESC, seq DESC LIMIT %s) h "
                "JOIN arbor_session s ON s.key = h.session_key ORDER BY h.r DESC, h.seq DESC",
                (query, limit),
            )
            return with_text(cur.fetchall())

    def reference(self, scope: str, terms: list[str], limit: int) -> list[tuple[Any, ...]]:
        quoted = [_quote(t) for t in terms]
        any_query = f"'{scope}' & ({' | '.join(quoted)})"
        with self._cursor() as cur:
            cur.execute(_REFERENCE, (list(terms), quoted, any_query, len(terms), limit))
            return with_text(cur.fetchall())

    def close(self) -> None:
        self.conn.close()
        with psycopg.connect(**self.conninfo, autocommit=True) as admin:
            admin.execute(f"DROP SCHEMA IF EXISTS {self.schema} CASCADE")
