"""The only place where SQL differs by database: full-text writes and matches, dates.

Both vendors index the same Python-made tokens and rank with the same BM25 (FTS5's
formula: k1=1.2, b=0.75, IDF floored at 1e-6, document length counting the two scope
tokens), so a query answers the same on SQLite and Postgres.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from django.db import connection

SCOPE_TOKENS = 2  # every indexed row carries a session token and an agent token
MAX_POSITIONS = 256  # Postgres keeps at most 256 positions per lexeme


def session_token(session_id: str) -> str:
    # '§' is never part of a user word, so a query cannot name a scope token.
    return "§s" + session_id.replace("-", "")


def agent_token(agent_id: str) -> str:
    return "§a" + agent_id.replace("-", "")


def namespace_token(namespace: str) -> str:
    return "§n" + hashlib.sha1(namespace.encode()).hexdigest()[:24]


def _quoted(words: Sequence[str]) -> list[str]:
    # A quoted FTS5 string is text: NEAR, OR, -, :, * inside it are not operators.
    return ['"' + w.replace('"', '""') + '"' for w in words]


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
    words = _quoted(terms)
    rank = f"bm25({fts}, 1.0, 0.0)"  # the scope column weighs nothing
    order = f"{rank}, f.rowid DESC"
    match = f'scope : "{scope}" AND body : ({" OR ".join(words)})'
    if exclude is not None:  # any id is text here, quotes included
        match = f'({match}) NOT scope : {_quoted([exclude])[0]}'
    params: list[Any] = [match]
    if len(terms) > 1:
        order = f"(f.rowid IN (SELECT rowid FROM {fts} WHERE {fts} MATCH %s)) DESC, " + order
        params.append(f'scope : "{scope}" AND body : ({" AND ".join(words)})')
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


class Sqlite:
    vendor = "sqlite"

    @staticmethod
    def fast_reads(cur: Any) -> None:
        return None

    @staticmethod
    def to_datetime(value: Any) -> datetime:
        if isinstance(value, datetime):
            return value if value.tzinfo else value.replace(tzinfo=UTC)
        return datetime.fromisoformat(value).replace(tzinfo=UTC)

    @staticmethod
    def db_datetime(value: datetime) -> Any:
        return value.astimezone(UTC).replace(tzinfo=None).isoformat(" ")

    @staticmethod
    def insert_index(
        tokens: Sequence[str], session_id: str, agent_id: str
    ) -> tuple[str, str, list[Any]]:
        return "", "", []  # the FTS5 row is written after the message row

    @staticmethod
    def index_inserted(
        cur: Any, seq: int, tokens: Sequence[str], session_id: str, agent_id: str
    ) -> None:
        Sqlite.index(cur, seq, tokens, session_id, agent_id)

    @staticmethod
    def index(cur: Any, seq: int, tokens: Sequence[str], session_id: str, agent_id: str) -> None:
        _fts5_write(cur, "arbor_message_fts", seq, tokens,
                    f"{session_token(session_id)} {agent_token(agent_id)}")

    @staticmethod
    def reindex(cur: Any, seq: int, tokens: Sequence[str], session_id: str, agent_id: str) -> None:
        cur.execute("DELETE FROM arbor_message_fts WHERE rowid = %s", [seq])
        Sqlite.index(cur, seq, tokens, session_id, agent_id)

    @staticmethod
    def index_entry(cur: Any, seq: int, tokens: Sequence[str], namespace: str) -> None:
        cur.execute("DELETE FROM arbor_entry_fts WHERE rowid = %s", [seq])
        _fts5_write(cur, "arbor_entry_fts", seq, tokens, namespace_token(namespace))

    @staticmethod
    def search_entries(
        cur: Any, namespace: str, terms: Sequence[str], limit: int
    ) -> list[tuple[Any, ...]]:
        return _fts5_search(
            cur, fts="arbor_entry_fts", columns="e.key, e.description, e.content, e.updated_at",
            source="arbor_entry e", scope=namespace_token(namespace), terms=terms, limit=limit)

    @staticmethod
    def copy_index(cur: Any, *, source_session: str, target_session: str, agent_id: str) -> None:
        cur.execute(
            """INSERT INTO arbor_message_fts(rowid, body, scope)
               SELECT t.seq, f.body, %s
               FROM arbor_message t
               JOIN arbor_message s ON s.session_id = %s AND s.message_id = t.message_id
               JOIN arbor_message_fts f ON f.rowid = s.seq
               WHERE t.session_id = %s""",
            [f"{session_token(target_session)} {agent_token(agent_id)}", source_session,
             target_session],
        )

    @staticmethod
    def search(
        cur: Any, *, scope: str, terms: Sequence[str], limit: int, exclude: str | None = None,
    ) -> list[tuple[Any, ...]]:
        return _fts5_search(
            cur, fts="arbor_message_fts",
            columns="m.message_id, m.session_id, m.role, m.text, m.created_at",
            source="arbor_message m", scope=scope, terms=terms, limit=limit, exclude=exclude)


def _tsvector(tokens: Sequence[str], scope_tokens: Sequence[str]) -> str:
    """A tsvector literal built from our tokens, so Postgres' parser never re-splits them.

    Only counts matter (BM25 needs term frequency); positions are 1..n per lexeme.
    """
    counts = Counter(tokens)
    for token in scope_tokens:
        counts[token] = 1
    items = []
    for lexeme, count in counts.items():
        quoted = lexeme.replace("\\", "\\\\").replace("'", "''")
        positions = ",".join(str(i) for i in range(1, min(count, MAX_POSITIONS) + 1))
        items.append(f"'{quoted}':{positions}")
    return " ".join(items)


def _message_vector(tokens: Sequence[str], session_id: str, agent_id: str) -> str:
    return _tsvector(tokens, [session_token(session_id), agent_token(agent_id)])


def _tsquery_terms(terms: Sequence[str]) -> list[str]:
    return ["'" + t.replace("\\", "\\\\").replace("'", "''") + "'" for t in terms]


# Corpus size and mean document length, as FTS5 counts them (scope tokens included).
_MESSAGE_STATS = f"""
    SELECT greatest(sum(message_count), 1)::float8 AS n,
           (sum(search_tokens) + {SCOPE_TOKENS} * sum(message_count))::float8
             / greatest(sum(message_count), 1) AS avgdl
    FROM arbor_session"""
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
    quoted = _tsquery_terms(terms)
    alias = table.split()[-1]
    match = f"'{scope}' & ({' | '.join(quoted)})"
    if exclude is not None:  # any id is text here, quotes included
        match = f"!{_tsquery_terms([exclude])[0]} & {match}"
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
            SELECT sum(w.idf * (u.tf * 2.2)
                       / (u.tf + 1.2 * (0.25 + 0.75 * ({alias}.search_len + {scope_tokens})
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


class Postgres:
    vendor = "postgresql"

    @staticmethod
    def fast_reads(cur: Any) -> None:
        """Parse timestamptz with psycopg's C loader on this cursor: Django's Python loader
        costs ~3 µs a row, a third of a 10,000-message path read. (Per cursor only:
        Django's connection setup expects its own loader class.)"""
        raw = getattr(cur, "cursor", cur)
        raw.adapters.register_loader("timestamptz", _TimestamptzLoader)

    @staticmethod
    def to_datetime(value: Any) -> datetime:
        return value if isinstance(value, datetime) else datetime.fromisoformat(value)

    @staticmethod
    def db_datetime(value: datetime) -> Any:
        return value

    @staticmethod
    def insert_index(
        tokens: Sequence[str], session_id: str, agent_id: str
    ) -> tuple[str, str, list[Any]]:
        # The vector goes in with the row: one statement per append.
        return ", search_vector", ", %s::tsvector", [_message_vector(tokens, session_id, agent_id)]

    @staticmethod
    def index_inserted(
        cur: Any, seq: int, tokens: Sequence[str], session_id: str, agent_id: str
    ) -> None:
        return None

    @staticmethod
    def index(cur: Any, seq: int, tokens: Sequence[str], session_id: str, agent_id: str) -> None:
        cur.execute(
            "UPDATE arbor_message SET search_vector = %s::tsvector WHERE seq = %s",
            [_message_vector(tokens, session_id, agent_id), seq],
        )

    reindex = index

    @staticmethod
    def index_entry(cur: Any, seq: int, tokens: Sequence[str], namespace: str) -> None:
        cur.execute(
            "UPDATE arbor_entry SET search_vector = %s::tsvector WHERE seq = %s",
            [_tsvector(tokens, [namespace_token(namespace)]), seq],
        )

    @staticmethod
    def search_entries(
        cur: Any, namespace: str, terms: Sequence[str], limit: int
    ) -> list[tuple[Any, ...]]:
        return _pg_bm25(
            cur, table="arbor_entry e", columns="e.key, e.description, e.content, e.updated_at",
            stats=_ENTRY_STATS, scope_tokens=1, scope=namespace_token(namespace), terms=terms,
            limit=limit)

    @staticmethod
    def copy_index(cur: Any, *, source_session: str, target_session: str, agent_id: str) -> None:
        cur.execute(
            """UPDATE arbor_message t
               SET search_vector = ts_delete(s.search_vector, ARRAY[%s]) || %s::tsvector
               FROM arbor_message s
               WHERE t.session_id = %s AND s.session_id = %s AND s.message_id = t.message_id""",
            [session_token(source_session), f"'{session_token(target_session)}':1",
             target_session, source_session],
        )

    @staticmethod
    def search(
        cur: Any, *, scope: str, terms: Sequence[str], limit: int, exclude: str | None = None,
    ) -> list[tuple[Any, ...]]:
        return _pg_bm25(
            cur, table="arbor_message m",
            columns="m.message_id, m.session_id, m.role, m.text, m.created_at",
            stats=_MESSAGE_STATS, scope_tokens=SCOPE_TOKENS, scope=scope, terms=terms,
            limit=limit, exclude=exclude)


try:
    from psycopg.types.datetime import TimestamptzLoader as _TimestamptzLoader
except ImportError:  # pragma: no cover - psycopg is installed with the project
    _TimestamptzLoader = None  # type: ignore[assignment,misc]

DIALECTS: dict[str, type[Sqlite] | type[Postgres]] = {"sqlite": Sqlite, "postgresql": Postgres}


def current() -> type[Sqlite] | type[Postgres]:
    try:
        return DIALECTS[connection.vendor]
    except KeyError:  # pragma: no cover - settings allow only these two
        raise RuntimeError(f"Arbor supports SQLite and PostgreSQL, not {connection.vendor}") from None
