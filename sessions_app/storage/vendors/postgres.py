"""Postgres' dialect: the index row is the message's own tsvector column (made from
Arbor's tokens, never re-parsed), a row lock on the session for its writes, term
statistics kept by triggers (migration 0002). The message search is in
postgres_search.py."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from memory_core.messages import now

from .. import sql
from ..rows import MessageRow, message_scope, namespace_token, session_token
from . import K1, K1_PLUS_1, B, Shared, agent_of
from .postgres_search import postgres_messages, tsquery_match, tsquery_terms
from .postgres_vector import tsvector as _tsvector


def _self_contained(rows: Sequence[MessageRow]) -> bool:
    """Whether every parent named is a row of the batch (an import: the whole tree)."""
    ids = {r.message_id for r in rows}
    return all(r.parent_id is None or r.parent_id in ids for r in rows)


def _insert_at_once(cur: Any, rows: Sequence[MessageRow], scope: Sequence[str]) -> None:
    """A whole tree in one statement: seqs taken first (in order: the latest leaf is the
    last row), so each row names its parent's seq. One statement instead of one per row
    also runs the term-count trigger once (measured: 1.0 ms a row -> 0.2 ms)."""
    cur.execute("SELECT nextval(pg_get_serial_sequence('arbor_message', 'seq')) "
                "FROM generate_series(1, %s)", [len(rows)])
    seqs = sorted(r[0] for r in cur.fetchall())
    seq_of = {r.message_id: s for r, s in zip(rows, seqs, strict=True)}
    columns = list(zip(*[
        (seq_of[r.message_id], r.message_id,
         None if r.parent_id is None else seq_of[r.parent_id], r.role, r.parts, r.metadata,
         r.search_len, r.created_at, r.search_extra, _tsvector(r.tokens, scope))
        for r in rows], strict=True))
    cur.execute(sql.INSERT_UNNESTED, [rows[0].session_id, *map(list, columns)])


# Corpus size and mean document length of the entries, as FTS5 counts them.
_ENTRY_STATS = """
    SELECT greatest(count(*), 1)::float8 AS n,
           greatest(avg(search_len + 1), 1)::float8 AS avgdl FROM arbor_entry"""


def _pg_bm25(
    cur: Any, *, table: str, columns: str, stats: str, scope_tokens: int, scope: str,
    terms: Sequence[str], limit: int, exclude: str | None = None,
) -> list[tuple[Any, ...]]:
    """BM25 as FTS5 computes it: corpus size, mean length and document frequencies over
    the whole index; the frequencies come from the GIN index, term by term. Rows holding
    every term come first. MATERIALIZED: inlined, the per-term counts would rerun for
    every matching row."""
    quoted = tsquery_terms(terms)
    alias = table.split()[-1]
    match = tsquery_match(f"({' | '.join(quoted)})", scope, exclude)
    cur.execute(
        f"""
        WITH stats AS MATERIALIZED ({stats}
        ),
        terms AS MATERIALIZED (
            SELECT t.term,
                   (SELECT count(*) FROM {table.split()[0]} x
                    WHERE x.search_vector @@ t.q) AS df
            FROM unnest(%s::text[], %s::tsquery[]) AS t(term, q)
        ),
        weights AS MATERIALIZED (
            SELECT term, greatest(ln((stats.n - df + 0.5) / (df + 0.5)), 1e-6) AS idf
            FROM terms, stats
        )
        SELECT {columns}, s.score
        FROM {table}
        CROSS JOIN stats
        CROSS JOIN LATERAL (
            SELECT sum(w.idf * (u.tf * {K1_PLUS_1})
                       / (u.tf + {K1} * ({1 - B} + {B} * ({alias}.search_len + {scope_tokens})
                                                / stats.avgdl))) AS score,
                   count(*) AS matched
            FROM (SELECT lexeme, array_length(positions, 1)::float8 AS tf
                  FROM unnest({alias}.search_vector)) u
            JOIN weights w ON w.term = u.lexeme
        ) s
        WHERE {alias}.search_vector @@ %s::tsquery
        ORDER BY (s.matched = %s) DESC, s.score DESC, {alias}.seq DESC
        LIMIT %s
        """,
        [list(terms), quoted, match, len(terms), limit],
    )
    return list(cur.fetchall())


class Postgres(Shared):
    vendor = "postgresql"
    search_messages = staticmethod(postgres_messages)

    def give_back_free_pages(self, cur: Any) -> None:
        return None  # autovacuum's business

    def messages_deleted(self, cur: Any) -> None:
        return None  # the term statistics' triggers counted them already

    def fast_reads(self, cur: Any) -> None:
        """Parse timestamptz with psycopg's C loader on this cursor: Django's Python loader
        costs ~3 µs a row, a third of a 10,000-message path read. (Per cursor only:
        Django's connection setup expects its own loader class.)"""
        raw = getattr(cur, "cursor", cur)
        raw.adapters.register_loader("timestamptz", _TimestamptzLoader)

    def to_datetime(self, value: Any) -> datetime:
        return value if isinstance(value, datetime) else datetime.fromisoformat(value)

    def db_datetime(self, value: datetime) -> Any:
        return value

    def message_time(self, value: datetime) -> Any:
        return value

    def lock_session(self, cur: Any, session_id: str) -> str | None:
        # The row lock serialises appenders of one session (without it, concurrent
        # auto-parented appends would fork the chain).
        cur.execute(sql.LOCK_SESSION, [session_id])
        return agent_of(cur, session_id)

    def insert_message(self, cur: Any, row: MessageRow, agent_id: str | None) -> int:
        assert agent_id is not None, "lock_session reads it on Postgres"
        vector = _tsvector(row.tokens, message_scope(row.session_id, agent_id))
        cur.execute(sql.INSERT_COUNTED, [self.db_datetime(now()), row.search_len,
                                         row.session_id, *row.values(), vector])
        return int(cur.fetchone()[0])

    def insert_messages(
        self, cur: Any, rows: Sequence[MessageRow], scope: Sequence[str] | None
    ) -> None:
        if scope is None:  # the column's empty default until copy_index fills it
            cur.executemany(sql.INSERT_LINKED, [r.linked_values() for r in rows])
            return
        if len(rows) > 1 and _self_contained(rows):
            _insert_at_once(cur, rows, scope)
            return
        cur.executemany(sql.INSERT_LINKED_WITH_VECTOR,
                        [[*r.linked_values(), _tsvector(r.tokens, scope)] for r in rows])

    def replace_index(self, cur: Any, seq: int, tokens: Sequence[str], scope: Sequence[str]) -> None:
        cur.execute("UPDATE arbor_message SET search_vector = %s::tsvector WHERE seq = %s",
                    [_tsvector(tokens, scope), seq])

    def copy_index(
        self, cur: Any, *, source_session: str, target_session: str, scope: Sequence[str]
    ) -> None:
        # The source's vectors with the session token swapped (same agent, same words);
        # `scope` is what a fresh row would carry, kept by the agent token already there.
        cur.execute(
            f"""UPDATE arbor_message t
               SET search_vector = ts_delete(s.search_vector, ARRAY[%s]) || %s::tsvector
               FROM arbor_message s
               WHERE t.session_key = {sql.SESSION_KEY} AND s.session_key = {sql.SESSION_KEY}
                 AND s.message_id = t.message_id""",
            [session_token(source_session), _tsvector([], [session_token(target_session)]),
             target_session,
             source_session],
        )

    def index_entry(self, cur: Any, seq: int, tokens: Sequence[str], namespace: str) -> None:
        cur.execute(
            "UPDATE arbor_entry SET search_vector = %s::tsvector WHERE seq = %s",
            [_tsvector(tokens, [namespace_token(namespace)]), seq],
        )

    def search_entries(
        self, cur: Any, namespace: str, terms: Sequence[str], limit: int
    ) -> list[tuple[Any, ...]]:
        return _pg_bm25(
            cur, table="arbor_entry e", columns="e.key, e.description, e.content, e.updated_at",
            stats=_ENTRY_STATS, scope_tokens=1, scope=namespace_token(namespace), terms=terms,
            limit=limit)


try:
    from psycopg.types.datetime import TimestamptzLoader as _TimestamptzLoader
except ImportError:  # pragma: no cover - psycopg is installed with the project
    _TimestamptzLoader = None  # type: ignore[assignment,misc]
