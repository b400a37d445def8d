"""SQLite's message search.

It ranks as FTS5's bm25() does: rows holding every term first, then BM25
(vendors/__init__.py), then newest first. An agent's index rows are one rowid range
(sql.FTS_SHIFT), so an agent-wide search walks only that range of the index; the
session token stays in the match for a session search.

bm25() itself counts each term's documents by walking the term's postings over every
agent's rows, so its cost grew with the whole database. The search computes the same
scores itself instead (sqlite_rank.py), from counts kept beside the index
(sqlite_counts.py), reading nothing outside its scope: the terms' statistics with each
term's rows in the scope and their sizes, then the best `limit` messages (two queries). A query
holding a stop word (whose repeats are not kept) is ranked by bm25() in one statement, and
so is a search in an agent that holds a large share of the database (sqlite_rank.WHOLE_SHARE),
after the statistics' query has said so.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from .. import sql
from ..rows import session_token
from .sqlite_counts import UNCOUNTED
from .sqlite_rank import agent_range, ranked


def quoted(words: Sequence[str]) -> list[str]:
    # A quoted FTS5 string is text: NEAR, OR, -, :, * inside it are not operators.
    return ['"' + w.replace('"', '""') + '"' for w in words]


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


# The agent's rowid range, as constants of the statement: FTS5 walks only that range.
_AGENT_RANGE = agent_range("f.rowid")


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


# Agents whose searches bm25() ranks for less (sqlite_rank.WHOLE_SHARE), until when: the
# answer is kept BM25_SECONDS, so a burst of searches skips the statistics' statement.
# Briefly: other agents' bulk loads (10,000 messages a second) can shrink an agent's share
# of the database tenfold within 30 s, and bm25() would then walk their rows too (the
# scale benchmark caught it at 30 s). Either path gives the same scores.
BM25_SECONDS = 5.0
BM25_AGENTS_KEPT = 10_000
_bm25_until: dict[str, float] = {}


def forget_bm25_agents() -> None:
    """Ask again at each agent's next search (tests; after a bulk delete)."""
    _bm25_until.clear()


def sqlite_messages(
    cur: Any, *, agent_id: str, session_id: str | None, exclude_session_id: str | None,
    terms: Sequence[str], limit: int,
) -> list[tuple[Any, ...]]:
    """(message_id, session_id, role, parts, created_at, score) best first."""
    if any(t in UNCOUNTED for t in terms) or _bm25_until.get(agent_id, 0.0) > time.monotonic():
        return bm25_messages(cur, agent_id=agent_id, session_id=session_id,
                             exclude_session_id=exclude_session_id, terms=terms, limit=limit)
    scope = session_token(session_id) if session_id is not None else None
    exclude = session_token(exclude_session_id) if exclude_session_id is not None else None
    matches = [fts5_match(quoted([t]), "OR", scope, exclude) for t in terms]
    best = ranked(cur, agent_id=agent_id, terms=terms, matches=matches, limit=limit)
    if best is None:  # bm25() ranks this agent's searches for less: for a while, at once
        if len(_bm25_until) >= BM25_AGENTS_KEPT:
            _bm25_until.clear()
        _bm25_until[agent_id] = time.monotonic() + BM25_SECONDS
        return bm25_messages(cur, agent_id=agent_id, session_id=session_id,
                             exclude_session_id=exclude_session_id, terms=terms, limit=limit)
    if not best:
        return []
    statement, session = (_HITS_IN_AGENT, []) if session_id is None else (_HITS_IN_SESSION,
                                                                         [session_id])
    cur.execute(statement.format(marks=", ".join(["%s"] * len(best))),
                [*session, *(rowid & sql.FTS_SEQ for rowid, _ in best)])
    found = {seq: row for seq, *row in cur.fetchall()}
    # (an index row left without its message is left out, as the join of bm25's statement does)
    return [(*found[rowid & sql.FTS_SEQ], score) for rowid, score in best
            if rowid & sql.FTS_SEQ in found]


# The best rows' messages (sqlite_rank found them on the index), seq first.
_HITS_IN_SESSION = ("SELECT m.seq, m.message_id, %s, m.role, m.parts, m.created_at "
                    "FROM arbor_message m WHERE m.seq IN ({marks})")
_HITS_IN_AGENT = ("SELECT m.seq, m.message_id, s.id, m.role, m.parts, m.created_at "
                  "FROM arbor_message m JOIN arbor_session s ON s.key = m.session_key "
                  "WHERE m.seq IN ({marks})")


def bm25_messages(
    cur: Any, *, agent_id: str, session_id: str | None, exclude_session_id: str | None,
    terms: Sequence[str], limit: int,
) -> list[tuple[Any, ...]]:
    """sqlite_messages by FTS5's bm25() in one statement (_MESSAGES)."""
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
