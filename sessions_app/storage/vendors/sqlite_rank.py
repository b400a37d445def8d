"""FTS5's bm25() worked out by hand on SQLite, from what one scope holds (issue 27).

The same figures as bm25(arbor_message_fts, 1.0, 0.0) computes, in the same order of
floating-point operations, so the scores are the same to the last bit: the row count N,
the tokens of every row (avgdl = tokens / N) and each term's documents from the counts
(sqlite_counts.py); a row's size (body and scope tokens) from FTS5's docsize; a term's
count in a row from arbor_search_tf, else 1. Only the rows of the scope are read:
each term's match in the agent's rowid range (a session's token in the match).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import groupby
from operator import itemgetter
from typing import Any

import orjson

from .. import sql
from . import K1, K1_PLUS_1, MIN_IDF, B
from .sqlite_counts import N_TERM, STATS, TOKENS_TERM


def agent_range(column: str) -> str:
    """`column` in the agent's rowid range (params: the agent's id twice)."""
    return (f"{column} BETWEEN (SELECT key << {sql.FTS_SHIFT} FROM arbor_search_key "
            "WHERE agent_id = %s) "
            f"AND (SELECT (key << {sql.FTS_SHIFT}) | {sql.FTS_SEQ} FROM arbor_search_key "
            "WHERE agent_id = %s)")


# One statement: the terms' statistics (-1), then each term's rows in the scope with
# their docsize and the term's count when the row repeats it (term i: i; the count picked
# out of the row's JSON object by the path $."term", so a term of digits is a key too).
# Each part is led by `go` (one row, or none when bm25() ranks instead): a CROSS JOIN
# keeps it the outer loop, so no index row is read when it is empty.
_ROWS = ("SELECT f.rowid, {i}, d.sz, r.tf ->> %s FROM ({go}) g CROSS JOIN arbor_message_fts f "
         "JOIN arbor_message_fts_docsize d ON d.id = f.rowid "
         "LEFT JOIN arbor_search_tf r ON r.id = f.rowid "
         f"WHERE arbor_message_fts MATCH %s AND {agent_range('f.rowid')}")


def _idf(n: int, df: int) -> float:
    # As FTS5: (N - df) in integers, then in doubles; at most 0 becomes MIN_IDF.
    idf = math.log((n - df + 0.5) / (df + 0.5))
    return MIN_IDF if idf <= 0.0 else idf


def doc_size(sz: bytes) -> int:
    """A docsize record's token count over all columns (SQLite varints)."""
    total = at = 0
    while at < len(sz):
        value = 0
        for j in range(9):
            byte = sz[at]
            at += 1
            if j == 8:  # a ninth byte counts all its 8 bits
                value = (value << 8) | byte
                break
            value = (value << 7) | (byte & 0x7F)
            if byte < 0x80 or at == len(sz):
                break
        total += value
    return total


# Where the agent holds half the database or more (1 / WHOLE_SHARE of its rows: a lone
# agent, say), FTS5's bm25() walks at most twice the agent's rows, and faster than this
# ranking reads them: it ranks instead (the same scores), in a session too. The choice is
# made in the statement, before any index row is read (_ROWS). At 10 (a tenth), bm25()
# was a little cheaper for an agent holding a quarter (benchmarks.scale's probe at 50,000
# messages: 1.14 against 1.45 ms), but its cost then followed the others' data until the
# switch, and the probe's agent-wide search went 1.14 -> 1.5 ms as they grew (last/first
# 1.31 to 1.57 run to run); at 2 the probe's is 1.45 -> 1.50 (1.03 to 1.06).
WHOLE_SHARE = 2
_BM25_CHEAPER = ("(coalesce((SELECT df FROM arbor_search_df WHERE term = '§n'), 0) "
                 "<= {share} * {rows})")


def ranked(
    cur: Any, *, agent_id: str, terms: Sequence[str], matches: Sequence[str], limit: int,
) -> list[tuple[int, float]] | None:
    """(index rowid, score) of the best `limit` rows matching any of `matches` (one per
    term, in the terms' order; a session's token in them for a session's rows) in the
    agent's range: rows holding every term first, then by score, then the newest. None
    when bm25() would rank them for less (WHOLE_SHARE)."""
    k = len(terms)
    cheaper = _BM25_CHEAPER.format(share=int(WHOLE_SHARE), rows=f"({sql.AGENT_MESSAGES})")
    parts = [f"SELECT *, NULL FROM ({STATS})", f"SELECT '', -1, {cheaper}, NULL"]
    params = [orjson.dumps([*terms, N_TERM, TOKENS_TERM]).decode(), agent_id]
    go = f"SELECT 1 WHERE NOT {cheaper}"
    for i, (term, match) in enumerate(zip(terms, matches, strict=True)):
        parts.append(_ROWS.format(i=i, go=go))
        params += [f'$."{term}"', agent_id, match, agent_id, agent_id]  # (terms: no ")
    cur.execute(" UNION ALL ".join(parts), params)
    sizes: dict[int, bytes] = {}
    bits: dict[int, int] = {}
    counts: dict[tuple[int, int], int] = {}
    figures: dict[str, int] = {}
    for i, group in groupby(cur.fetchall(), itemgetter(1)):
        if i < 0:
            figures.update((term, count) for term, _, count, _ in group)
            continue
        rows = list(group)
        part = {rowid: sz for rowid, _, sz, _ in rows}
        counts.update(((rowid, i), tf) for rowid, _, _, tf in rows if tf is not None)
        sizes.update(part)
        bit = 1 << i
        for rowid in part:
            bits[rowid] = bits.get(rowid, 0) | bit
    if figures[""]:
        return None
    if not bits:
        return []
    n = figures[N_TERM]
    avgdl = figures[TOKENS_TERM] / n
    idf = [_idf(n, figures[t]) for t in terms]
    every = (1 << k) - 1

    kds: dict[bytes, float] = {}  # by docsize record: rows of one size share it

    def score(rowid: int, held: int, sz: bytes) -> float:
        kd = kds.get(sz)
        if kd is None:
            kd = kds[sz] = K1 * (1 - B + B * doc_size(sz) / avgdl)
        total = 0.0
        for i in range(k):
            if held >> i & 1:
                tf = counts.get((rowid, i), 1)
                total += idf[i] * ((tf * K1_PLUS_1) / (tf + kd))
        return total

    # Rows without repeat counts that hold the same terms and have the same size score
    # alike: each such group is scored once, its rows newest first.
    alike: dict[tuple[int, bytes], list[int]] = {}
    entries: list[tuple[bool, float, list[int]]] = []
    repeated = {rowid for rowid, _ in counts}
    for rowid, held in bits.items():
        if rowid in repeated:
            entries.append((held == every, score(rowid, held, sizes[rowid]), [rowid]))
        else:
            alike.setdefault((held, sizes[rowid]), []).append(rowid)
    entries += [(held == every, score(0, held, sz), rowids) for (held, sz), rowids in alike.items()]
    entries.sort(key=itemgetter(0, 1), reverse=True)
    best: list[tuple[bool, float, int]] = []
    for whole, value, rowids in entries:
        if len(best) >= limit and (whole, value) < best[-1][:2]:
            break  # (equal keys may follow: their rows are taken too, then ordered)
        best += [(whole, value, rowid) for rowid in rowids]
    best.sort(reverse=True)
    return [(rowid, value) for _, value, rowid in best[:limit]]
