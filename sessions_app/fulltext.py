"""Message search statements, by vendor (dialects.py dispatches here).

Both rank as FTS5 does: rows holding every term first, then BM25 (k1=1.2, b=0.75, IDF
floored at 1e-6, corpus statistics over the whole index, document length counting the
two scope tokens), then newest first.

SQLite: an agent's index rows are one rowid range (sql.FTS_SHIFT), so an agent-wide
search walks only that range of the index; the session token stays in the match for a
session search. The best `limit` rows are found on the index alone and only they are
joined to their messages.

Postgres: document frequencies, the row count and the token total come from
`arbor_term_df` plus pending deltas (migration 0012), one indexed read per term. Only a
bounded set of candidates is scored: the rows holding every term, and the rows holding
one of the rarest terms; a row holding none of those scores below the sum of the other
terms' ceilings (2.2 × IDF each), so when the last row kept outscores that sum, no row
left out could enter. Otherwise the search scores every matching row.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from .storage import sql
from .storage.rows import agent_token, session_token

SCOPE_TOKENS = 2  # every indexed message carries a session token and an agent token
K1 = 1.2
B = 0.75
MIN_IDF = 1e-6
# A small session is read through its own index, then matched: cheaper than the GIN
# posting lists of common words.
SMALL_SESSION = 5_000
# Candidates first scored on Postgres: rows holding one of the rarest terms, up to
# this many documents in all.
RARE_DOCS = 10_000


def quoted(words: Sequence[str]) -> list[str]:
    # A quoted FTS5 string is text: NEAR, OR, -, :, * inside it are not operators.
    return ['"' + w.replace('"', '""') + '"' for w in words]


def tsquery_terms(terms: Sequence[str]) -> list[str]:
    return ["'" + t.replace("\\", "\\\\").replace("'", "''") + "'" for t in terms]


# Scope tokens come from ids, which an importer chooses: each is quoted as text, so no
# character of an id can act as query syntax (tests/db_both/test_search_scope_ids.py).

def fts5_match(words: Sequence[str], joiner: str, scope: str | None,
               exclude: str | None = None) -> str:
    """An FTS5 match of the quoted `words` joined by OR or AND, in the rows holding the
    `scope` token (any row when None), less those holding the `exclude` token."""
    match = f'body : ({f" {joiner} ".join(words)})'
    if scope is not None:
        match = f"scope : {quoted([scope])[0]} AND {match}"
    if exclude is not None:
        match = f"({match}) NOT scope : {quoted([exclude])[0]}"
    return match


def tsquery_match(wanted: str, scope: str, exclude: str | None = None) -> str:
    """A tsquery of `wanted` in the rows holding the `scope` token, less those holding
    the `exclude` token."""
    match = f"{tsquery_terms([scope])[0]} & {wanted}"
    return match if exclude is None else f"!{tsquery_terms([exclude])[0]} & {match}"


# --- SQLite ------------------------------------------------------------------------

# The agent's rowid range, as constants of the statement: FTS5 walks only that range.
_AGENT_RANGE = (f"f.rowid BETWEEN (SELECT key << {sql.FTS_SHIFT} FROM arbor_search_key "
                "WHERE agent_id = %s) "
                f"AND (SELECT (key << {sql.FTS_SHIFT}) | {sql.FTS_SEQ} FROM arbor_search_key "
                "WHERE agent_id = %s)")


# One statement (a search is one query). The rows holding every term are found first
# without ranking (an AND match, which skips through the terms' lists), at most limit + 1
# of them. When there are more than `limit`, no other row can be shown: only they are
# ranked (the MATCH takes the AND match). Otherwise the any-word match is ranked with
# them first. Either way FTS5 ranks once, as a plain bm25 search does; a row's score is
# the same in both matches (the same phrases in the same order).
# Params: every-term match, agent id ×2, limit + 1, [session id], limit ×2, every-term
# match, any-word match, agent id ×2, limit.
_MESSAGES = f"""
    WITH whole(id) AS MATERIALIZED (
        SELECT f.rowid FROM arbor_message_fts f
        WHERE arbor_message_fts MATCH %s AND {_AGENT_RANGE} LIMIT %s)
    SELECT m.message_id, {{session}}, m.role, m.parts, m.created_at, -f.score
    FROM (SELECT f.rowid AS id, (SELECT count(*) FROM whole) > %s OR f.rowid IN whole AS whole,
                 bm25(arbor_message_fts, 1.0, 0.0) AS score
          FROM arbor_message_fts f
          WHERE arbor_message_fts MATCH (CASE WHEN (SELECT count(*) FROM whole) > %s
                                              THEN %s ELSE %s END)
            AND {_AGENT_RANGE}
          ORDER BY whole DESC, score, id DESC LIMIT %s) f
    JOIN arbor_message m ON m.seq = f.id & {sql.FTS_SEQ}
    {{join}}
    ORDER BY f.whole DESC, f.score, f.id DESC"""
# A session's rows are its own: its id comes as a parameter, not from a join.
_IN_SESSION = _MESSAGES.format(session="%s", join="")
_IN_AGENT = _MESSAGES.format(session="s.id",
                             join="JOIN arbor_session s ON s.key = m.session_key")


def sqlite_messages(
    cur: Any, *, agent_id: str, session_id: str | None, exclude_session_id: str | None,
    terms: Sequence[str], limit: int,
) -> list[tuple[Any, ...]]:
    """(message_id, session_id, role, parts, created_at, score) best first (_MESSAGES)."""
    words = quoted(terms)
    scope = session_token(session_id) if session_id is not None else None
    exclude = session_token(exclude_session_id) if exclude_session_id is not None else None
    match = fts5_match(words, "OR", scope, exclude)
    # One term: every row holds every term; the AND match is the match itself.
    every = fts5_match(words, "AND", scope, exclude) if len(terms) > 1 else match
    statement, session = (_IN_AGENT, []) if session_id is None else (_IN_SESSION, [session_id])
    cur.execute(statement, [every, agent_id, agent_id, limit + 1, *session, limit, limit,
                            every, match, agent_id, agent_id, limit])
    return list(cur.fetchall())


# --- Postgres ----------------------------------------------------------------------

N_TERM, TOKENS_TERM = "§n", "§t"  # the row count and token total in arbor_term_df

_STATS = """
    SELECT t.term, coalesce(df.df, 0)
           + coalesce((SELECT sum(d) FROM arbor_term_delta x WHERE x.term = t.term), 0)
    FROM unnest(%s::text[]) AS t(term) LEFT JOIN arbor_term_df df ON df.term = t.term"""


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
        SELECT sum(w.idf * (u.tf * {K1 + 1})
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


# The hits (at most `limit` rows) with their session's id in place of its number.
_WITH_SESSION_IDS = """
    SELECT h.message_id, s.id, h.role, h.parts, h.created_at, h.score
    FROM ({hits}) h JOIN arbor_session s ON s.key = h.session_key
    ORDER BY h.whole DESC, h.score DESC, h.seq DESC"""


def _stats(cur: Any, terms: Sequence[str], session_id: str | None) -> tuple[dict[str, float], int]:
    """(figures by term, with N_TERM and TOKENS_TERM; the session's message count)."""
    cur.execute(_STATS + (
        " UNION ALL SELECT '', message_count FROM arbor_session WHERE id = %s"
        if session_id is not None else ""),
        [[*terms, N_TERM, TOKENS_TERM], *([session_id] if session_id is not None else [])])
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
    stats, session_size = _stats(cur, terms, session_id)
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
        if session_id is not None and session_size <= SMALL_SESSION:
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
        if rare and docs + df[t] > RARE_DOCS:
            break
        rare.append(t)
        docs += df[t]
    every, every_params = statement(terms)
    if rare and not (session_id is not None and session_size <= SMALL_SESSION):
        first, first_params = statement(rare)
        ceiling = sum(2.2 * idf[t] for t in terms if t not in rare)
        cur.execute(_WITH_SESSION_IDS.format(hits=_PRUNED.format(first=first, every=every)),
                    [*first_params, limit, ceiling, *every_params])
    else:
        cur.execute(_WITH_SESSION_IDS.format(hits=every), every_params)
    return list(cur.fetchall())
