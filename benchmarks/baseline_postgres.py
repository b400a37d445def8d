"""Raw psycopg baseline: Arbor's PostgreSQL statements (text from sessions_app/storage/sql.py), run by hand.

The baseline's tables live in a schema of their own in the same database, made with
`CREATE TABLE ... (LIKE <arbor table> INCLUDING ALL)` (columns, defaults, identity,
indexes including the GIN index) plus the foreign keys between them; the connection's
search_path points at it, so the statements are textually Arbor's. The connection
uses psycopg's defaults (server-side binding, statements prepared after 5 uses).
"""

from __future__ import annotations

import os
from collections import Counter
from datetime import UTC, datetime
from typing import Any

import psycopg

from sessions_app.storage import outbox, sql

from .baseline import (
    Traced,
    agent_token,
    appended_event,
    path_messages,
    prepare,
    session_token,
    with_text,
)

_TABLES = ("arbor_session", "arbor_message", "arbor_compaction", "arbor_skill_state",
           "arbor_session_event")
_SCOPE_TOKENS = 2
_MAX_POSITIONS = 256

# Arbor's statement text (sessions_app/storage/sql.py).
_LOCK = sql.LOCK_SESSION
_LEAF = sql.LEAF
_INSERT = sql.INSERT_COUNTED
# The event each append emits: its outbox row, numbered by the same statement (storage/outbox.py).
_INSERT_EVENT = outbox.INSERT_EVENT["postgresql"]
_PATH_TO_ID = sql.READ_TO_ID["postgresql"]
_PATH_TO_LATEST = sql.READ_TO_LATEST["postgresql"]
# Compaction overlays and unloaded skills of the session, read with every path.
_VIEWS = sql.STAMPED_VIEWS
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


def _tsvector(tokens: list[str], session_id: str, agent_id: str) -> str:
    counts = Counter(tokens)
    counts[session_token(session_id)] = 1
    counts[agent_token(agent_id)] = 1
    items = []
    for lexeme, count in counts.items():
        quoted = lexeme.replace("\\", "\\\\").replace("'", "''")
        positions = ",".join(str(i) for i in range(1, min(count, _MAX_POSITIONS) + 1))
        items.append(f"'{quoted}':{positions}")
    return " ".join(items)


def _quote(term: str) -> str:
    return "'" + term.replace("\\", "\\\\").replace("'", "''") + "'"


class RawPostgres(Traced):
    vendor = "postgresql"

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

    def _insert(
        self, cur: psycopg.Cursor[Any], session_id: str, agent_id: str,
        parent: tuple[int, str] | None, prepared: tuple[Any, ...],
    ) -> int:
        mid, role, parts, metadata, _, tokens, created = prepared
        cur.execute(_INSERT, (
            datetime.now(UTC), len(tokens), session_id,  # the counters, in the same statement
            session_id, mid, parent[0] if parent else None,
            role, parts, metadata, len(tokens), created, None,
            _tsvector(tokens, session_id, agent_id),
        ))
        return int(cur.fetchone()[0])

    def append(self, session_id: str, message: dict[str, Any]) -> str:
        prepared = prepare(message)
        with self.conn.transaction(), self._cursor() as cur:
            cur.execute(_LOCK, (session_id,))
            agent_id = cur.fetchone()[0]
            cur.execute(_LEAF, (session_id,))
            parent = cur.fetchone()
            self._insert(cur, session_id, agent_id, parent, prepared)
            cur.execute(_INSERT_EVENT, outbox.insert_event_params(
                "postgresql", session_id, "message.appended",
                appended_event(prepared),
                datetime.now(UTC),
            ))
            cur.fetchone()  # its seq
        return prepared[0]

    def append_chain(
        self, session_id: str, messages: list[dict[str, Any]], parent_id: str | None = None
    ) -> list[str]:
        with self.conn.transaction(), self._cursor() as cur:
            cur.execute(_LOCK, (session_id,))
            agent_id = cur.fetchone()[0]
            if parent_id is None:  # like Arbor: under the latest leaf
                cur.execute(_LEAF, (session_id,))
            else:
                cur.execute(
                    f"SELECT seq, message_id FROM arbor_message WHERE {sql.ID_ANCHOR}",
                    (session_id, parent_id),
                )
            parent = cur.fetchone()
            if parent_id is not None:  # like Arbor: a second child marks the session branched
                cur.execute(sql.MARK_BRANCH_UNDER, (session_id, parent[0]))
            ids = []
            for message in messages:
                prepared = prepare(message)
                seq = self._insert(cur, session_id, agent_id, parent, prepared)
                parent = (seq, prepared[0])
                ids.append(prepared[0])
        return ids

    def path(self, session_id: str, leaf_id: str | None = None) -> list[tuple[Any, ...]]:
        with self._cursor() as cur:
            # As Arbor's first read of a path: the session's stamp and views, then the path.
            cur.execute(_VIEWS, (session_id,) * 4)
            cur.fetchall()
            if leaf_id is None:
                cur.execute(_PATH_TO_LATEST, (session_id, session_id, session_id))
            else:
                cur.execute(_PATH_TO_ID, (session_id, leaf_id, session_id, session_id))
            return path_messages(cur.fetchall(), lambda at: at)  # psycopg parsed it

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
