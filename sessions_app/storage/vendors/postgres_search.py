"""Postgres' message search.

It ranks as FTS5 does (vendors/__init__.py): rows holding every term first, then BM25,
then newest first. Document frequencies, the row count and the token total come from
`arbor_term_df` (counters kept by triggers, migration 0005), one index range per term.
Only a bounded set of candidates is scored: the rows holding every term, and the rows
holding one of the rarest terms; a row holding none of those scores below the sum of the other
terms' ceilings (K1_PLUS_1 × IDF each), so when the last row kept outscores that sum, no
row left out could enter. Otherwise the search scores every matching row, and does so at
once when the scope is expected to match few rows (PRUNE_FROM_ROWS).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from .. import sql
from ..rows import agent_token, session_token
from . import K1, K1_PLUS_1, MIN_IDF, SCOPE_TOKENS, B

# A small session is read through its own index, then matched: cheaper than the GIN
# posting lists of common words.
SMALL_SESSION = 5_000
# Candidates first scored on Postgres: rows holding one of the rarest terms, up to this
# share of the database's documents in all (at least RARE_MIN_DOCS). A share, not a
# count: which terms are rare then does not change as other agents' data grows, so the
# candidates of a scope stay about this share of the scope's own rows.
RARE_SHARE = 0.05
RARE_MIN_DOCS = 1_000
# The rare terms' candidates are scored first only when the scope is expected to match
# at least this many rows: scoring fewer at once is cheap, and when the candidates cannot
# decide the top `limit` (common words' rows in a small agent: their scores stay below
# the other terms' ceiling) the full search runs after them anyway, a second pass through
# the index and the rows. benchmarks.scale's probe (one rarer and two common words, an
# agent of 12,500 messages, ~1,200 rows matched): 3.9 -> 2.6 ms at 50,000 messages and
# 5.4 -> 3.3 at 500,000 (last/first 1.37 -> 1.25).
PRUNE_FROM_ROWS = 4_000


def tsquery_terms(terms: Sequence[str]) -> list[str]:
    return ["'" + t.replace("\\", "\\\\").replace("'", "''") + "'" for t in terms]


def tsquery_match(wanted: str, scope: str, exclude: str | None = None) -> str:
    """A tsquery of `wanted` in the rows holding the `scope` token, less those holding
    the `exclude` token."""
    match = f"{tsquery_terms([scope])[0]} & {wanted}"
    return match if exclude is None else f"!{tsquery_terms([exclude])[0]} & {match}"


N_TERM, TOKENS_TERM = "§n", "§t"  # the row count and token total in arbor_term_df

# A term's count is the sum of its slots' counters (at most 16 rows, migration 0005).
_STATS = """
    SELECT t.term, coalesce((SELECT sum(df) FROM arbor_term_df x WHERE x.term = t.term), 0)
    FROM unnest(%s::text[]) AS t(term)"""


def _scored(source: str, where: str) -> str:
    """Score the rows of `source` (alias m) meeting `where` against the weights (idf per
    term); params: term count, the source's, avgdl, terms, terms, idfs, the where's, limit.
    Only the query's lexemes are unnested: marked with weight A, then filtered on it (both
    in C), a few entries instead of every word of the message."""
    return f"""
    SELECT m.message_id, m.session_key, m.role, m.parts, m.created_at, s.score,
           s.matched = %s AS whole, m.seq
    FROM {source}
    CROSS JOIN LATERAL (
        SELECT sum(w.idf * (u.tf * {K1_PLUS_1})
                   / (u.tf + {K1} * ({1 - B} + {B} * (m.search_len + {SCOPE_TOKENS}) / %s)))
                 AS score,
               count(*) AS matched
        FROM (SELECT lexeme, cardinality(positions)::float8 AS tf
              FROM unnest(ts_filter(setweight(m.search_vector, 'A', %s::text[]), '{{a}}'))) u
        JOIN unnest(%s::text[], %s::float8[]) AS w(term, idf) ON w.term = u.lexeme
    ) s
    WHERE {where}
    ORDER BY whole DESC, s.score DESC, m.seq DESC
    LIMIT %s"""


# The candidates first; every match only when the last candidate kept could be beaten
# by a row left out (it is neither a whole match nor above the ceiling). The second scan
# is a one-time-filtered plan node: it does not run when the candidates suffice.
_PRUNED = """
    WITH first AS MATERIALIZED ({first}),
    enough AS MATERIALIZED (
        SELECT (SELECT count(*) FROM first) = %s
               AND coalesce((SELECT whole OR score > %s FROM first
                             ORDER BY whole, score, seq LIMIT 1), false) AS ok)
    SELECT * FROM first WHERE (SELECT ok FROM enough)
    UNION ALL
    SELECT * FROM ({every}) e WHERE NOT (SELECT ok FROM enough)
    ORDER BY whole DESC, score DESC, seq DESC"""


# The hits (at most `limit` rows) with their session's id in place of its number: an
# index lookup per hit (a join may hash every session of the database).
_WITH_SESSION_IDS = """
    SELECT h.message_id, (SELECT s.id FROM arbor_session s WHERE s.key = h.session_key),
           h.role, h.parts, h.created_at, h.score
    FROM ({hits}) h
    ORDER BY h.whole DESC, h.score DESC, h.seq DESC"""


# The scope's size: the session's message count, or the agent's.
_SESSION_SIZE = " UNION ALL SELECT '', message_count FROM arbor_session WHERE id = %s"
_AGENT_SIZE = f" UNION ALL SELECT '', ({sql.AGENT_MESSAGES})"


def _stats(cur: Any, terms: Sequence[str], session_id: str | None,
           agent_id: str) -> tuple[dict[str, float], int]:
    """(figures by term, with N_TERM and TOKENS_TERM; the scope's message count)."""
    cur.execute(_STATS + (_SESSION_SIZE if session_id is not None else _AGENT_SIZE),
                [[*terms, N_TERM, TOKENS_TERM], session_id if session_id is not None else agent_id])
    got = {str(term): float(value) for term, value in cur.fetchall()}
    return got, int(got.pop("", 0))


def _idf(n: float, df: float) -> float:
    ratio = (n - df + 0.5) / (df + 0.5)
    return max(math.log(ratio), MIN_IDF) if ratio > 0 else MIN_IDF


def postgres_messages(
    cur: Any, *, agent_id: str, session_id: str | None, exclude_session_id: str | None,
    terms: Sequence[str], limit: int,
) -> list[tuple[Any, ...]]:
    """(message_id, session_id, role, parts, created_at, score) best first."""
    stats, scope_size = _stats(cur, terms, session_id, agent_id)
    small_session = session_id is not None and scope_size <= SMALL_SESSION
    n = max(stats[N_TERM], 1.0)
    avgdl = stats[TOKENS_TERM] / n if stats[N_TERM] > 0 else 1.0
    df = {t: stats[t] for t in terms}
    idf = {t: _idf(n, df[t]) for t in terms}
    words = dict(zip(terms, tsquery_terms(terms), strict=True))

    def statement(some: Sequence[str]) -> tuple[str, list[Any]]:
        """Scoring the rows holding every term or any of `some`, best first."""
        alternatives = [words[t] for t in some]
        if len(terms) > 1 and len(some) < len(terms):
            alternatives.append("(" + " & ".join(words.values()) + ")")
        wanted = "(" + " | ".join(alternatives) + ")"
        if small_session:
            source, source_params = (
                f"(SELECT * FROM arbor_message WHERE session_key = {sql.SESSION_KEY} OFFSET 0) m",
                [session_id])
            match = wanted
        else:
            source, source_params = "arbor_message m", []
            scope = session_token(session_id) if session_id is not None else agent_token(agent_id)
            match = tsquery_match(wanted, scope, session_token(exclude_session_id)
                                  if exclude_session_id is not None else None)
        return _scored(source, "m.search_vector @@ %s::tsquery"), [
            len(terms), *source_params, avgdl, list(terms), list(terms), [idf[t] for t in terms],
            match, limit]

    by_rarity = sorted(terms, key=lambda t: (df[t], t))
    rare: list[str] = []
    docs = 0.0
    for t in by_rarity[:-1]:  # never all of them: that is the full search
        if rare and docs + df[t] > max(RARE_SHARE * n, RARE_MIN_DOCS):
            break
        rare.append(t)
        docs += df[t]
    every, every_params = statement(terms)
    # The rows the scope is expected to match (each term's share of the database's
    # documents, applied to the scope's size: a bound, rows holding two terms count twice).
    expected = scope_size * sum(df.values()) / n
    if rare and expected >= PRUNE_FROM_ROWS and not small_session:
        first, first_params = statement(rare)
        ceiling = sum(K1_PLUS_1 * idf[t] for t in terms if t not in rare)
        cur.execute(_WITH_SESSION_IDS.format(hits=_PRUNED.format(first=first, every=every)),
                    [*first_params, limit, ceiling, *every_params])
    else:
        cur.execute(_WITH_SESSION_IDS.format(hits=every), every_params)
    return list(cur.fetchall())
