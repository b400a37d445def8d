"""What SQLite's BM25 needs besides the FTS5 index, kept so a search never counts over
other agents' rows (issue 27; migration 0009).

FTS5's own `bm25()` counts each query term's documents by walking that term's postings
over the whole index, every agent's: a search cost grew with everyone's data. The
ranking (sqlite_search.py) computes the same formula itself from:

- `arbor_search_df`: documents per term, with the rows (`§n`) and their tokens (`§t`,
  scope tokens counted, as FTS5 counts them), as of the last fold;
- `arbor_search_pending`: one row per index row appended (+1) or removed (-1) since,
  with its distinct terms (and an appended row's repeat counts, which its trigger files).
  An append adds one row here instead of updating a counter per distinct word (that cost
  0.3 ms an append); the WAL thread folds them into the counters (fold_step), and a search
  adds the few left to the counters. Bulk writes count into the counters at once;
- `arbor_search_tf`: an index row's counts of the terms it holds more than once, as one
  JSON object {term: count} (a row holding each term once has none), for every term but
  the stop words' stems: a query holding one of those is ranked by FTS5's bm25() as
  before (sqlite_search.py). One row per index row, not one per term (migration 0010):
  text that repeats its words made twenty a message, a third of an import's time.

Inserts write these beside the index rows (sqlite.py); the message triggers keep them
on deletes and edits through the SQL functions registered with sqlite_index's.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections import Counter
from collections.abc import Sequence
from itertools import chain
from typing import Any

import orjson

from memory_core.stop_words import STOP_WORDS
from memory_core.words import index_tokens

# Index tokens whose repeats are not kept: the stop words as the index stems them.
UNCOUNTED = frozenset(STOP_WORDS) | frozenset(index_tokens(" ".join(STOP_WORDS)))
N_TERM, TOKENS_TERM = "§n", "§t"
# Pending rows folded per step: a few milliseconds holding the write lock.
FOLD_ROWS = 500
# Pending rows past which the WAL thread folds even while writes go on (it looks every
# few ms), so a search never adds up more than about this many: each one costs a search
# ~2.5 µs (400 pending made a probe session's search 0.63 -> 1.60 ms of CPU).
FOLD_AT = 64


def row_terms(tokens: Sequence[str]) -> tuple[str, list[tuple[str, int]]]:
    """(the distinct terms as a JSON array, the counted terms held more than once)."""
    distinct = dict.fromkeys(tokens)
    terms = orjson.dumps(list(distinct)).decode()
    if len(distinct) == len(tokens):
        return terms, []
    return terms, list(repeated(Counter(tokens)).items())


def repeated(counts: Counter[str]) -> dict[str, int]:
    """A row's counted terms held more than once, with their counts (what a search reads
    from arbor_search_tf): the stop words' stems are left out."""
    held = {t: n for t, n in counts.items() if n > 1}
    for term in UNCOUNTED.intersection(held):
        del held[term]
    return held


# An appended index row's pending row, its rowid named by SQL taking `{rowid}`'s params.
APPENDED = ("INSERT INTO arbor_search_pending(sign, size, terms, repeats, row) "
            "VALUES (1, %s, %s, %s, {rowid})")


def appended_values(tokens: Sequence[str]) -> tuple[int, str, str | None]:
    """APPENDED's parameters before the rowid's: its trigger files the repeat counts
    (migration 0009)."""
    terms, repeated = row_terms(tokens)
    return len(tokens) + 2, terms, orjson.dumps(dict(repeated)).decode() if repeated else None


def written(cur: Any, rows: Sequence[tuple[int, Sequence[str]]]) -> None:
    """Count index rows written in bulk, (rowid, tokens) each: the documents per term summed
    over the rows into one statement whose trigger adds them to the counters at once
    (pending rows would outgrow the folds under bulk loads), the repeat counts by one
    executemany, a row each (a loop in C; through the trigger's JSON each cost half as
    much again)."""
    if not rows:
        return
    counted = [Counter(tokens) for _, tokens in rows]
    df = Counter(chain.from_iterable(counted))  # (each row's distinct terms, in one C loop)
    repeats: list[tuple[int, str]] = []
    for (rowid, tokens), counts in zip(rows, counted, strict=True):
        if len(counts) < len(tokens) and (held := repeated(counts)):
            repeats.append((rowid, orjson.dumps(held).decode()))
    df[N_TERM] = len(rows)
    df[TOKENS_TERM] = sum(len(tokens) + 2 for _, tokens in rows)
    cur.execute("INSERT INTO arbor_search_pending(sign, size, terms) VALUES (0, 0, %s)",
                [orjson.dumps(df).decode()])
    # (even when none: a bulk write's statements are the same whatever its rows)
    cur.executemany("INSERT INTO arbor_search_tf(id, tf) VALUES (%s, %s)", repeats)


def counted_json(tokens: Sequence[str]) -> str:
    """A stored row's distinct terms and repeat counts, as the message triggers read them
    (arbor_search_counted, registered with sqlite_index's functions)."""
    terms, repeats = row_terms(tokens)
    return ('{"terms":' + terms + ',"repeats":'
            + (orjson.dumps(dict(repeats)).decode() if repeats else "null") + "}")


# The figures a search needs for `terms` (a JSON array with N_TERM and TOKENS_TERM), as
# (term, -1, figure) rows (sqlite_rank reads them with the terms' rows):
# counters plus what is pending. A pending row holds a term when its JSON array holds
# the quoted term (terms are word characters: nothing in them needs escaping).
STATS = f"""
    SELECT t.value, -1, coalesce((SELECT df FROM arbor_search_df WHERE term = t.value), 0)
      + coalesce((SELECT sum(CASE t.value WHEN '{N_TERM}' THEN sign
                                          WHEN '{TOKENS_TERM}' THEN sign * size
                                          ELSE sign * (instr(terms, '"' || t.value || '"') > 0) END)
                  FROM arbor_search_pending), 0)
    FROM json_each(%s) t"""


_FOLD = """
    INSERT INTO arbor_search_df(term, df)
    SELECT j.value, sum(p.sign) FROM arbor_search_pending p, json_each(p.terms) j
    WHERE p.id <= ?1 GROUP BY j.value
    UNION ALL SELECT '§n', sum(sign) FROM arbor_search_pending WHERE id <= ?1
    UNION ALL SELECT '§t', sum(sign * size) FROM arbor_search_pending WHERE id <= ?1
    ON CONFLICT(term) DO UPDATE SET df = df + excluded.df"""


def fold(cur: Any, upto: int) -> None:
    """Move the pending rows up to id `upto` into the counters (a sqlite3 cursor or
    Django's: its SQL has no %s, and Django passes ? through)."""
    cur.execute(_FOLD, [upto])
    cur.execute("DELETE FROM arbor_search_df WHERE df = 0 AND term IN "
                "(SELECT j.value FROM arbor_search_pending p, json_each(p.terms) j "
                "WHERE p.id <= ?)", [upto])
    cur.execute("DELETE FROM arbor_search_pending WHERE id <= ?", [upto])


def fold_pending(cur: Any, at_least: int = FOLD_AT) -> None:
    """Fold every pending row in the caller's transaction, when at least `at_least` are
    pending (~40 µs a row)."""
    cur.execute("SELECT max(id), count(*) FROM arbor_search_pending")
    top, count = cur.fetchone()
    if count >= at_least:
        fold(cur, top)


def fold_step(conn: sqlite3.Connection, at_least: int = 1) -> bool:
    """Fold up to FOLD_ROWS pending rows when at least `at_least` are pending, in a
    transaction of its own on `conn` (autocommit, timeout 0: never waits for the lock).
    True when it folded some (there may be more)."""
    try:
        conn.execute("BEGIN IMMEDIATE")
    except sqlite3.Error:
        return False
    try:
        low, count = conn.execute(
            "SELECT min(id), count(*) FROM arbor_search_pending").fetchone()
        if not count or count < at_least:
            conn.execute("COMMIT")
            return False
        fold(conn, low + FOLD_ROWS - 1)
        conn.execute("COMMIT")
    except sqlite3.Error:  # no such table (an unmigrated file), or a write failed
        with contextlib.suppress(sqlite3.Error):
            conn.execute("ROLLBACK")
        return False
    return True


def emptied(cur: Any) -> None:
    """After the index was emptied whole (a flush): nothing left to count. (A file migrated
    to 0009 only has its repeat counts in arbor_search_repeat, not arbor_search_tf.)"""
    cur.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name IN "
                "('arbor_search_df', 'arbor_search_pending', 'arbor_search_tf', "
                "'arbor_search_repeat')")
    for (table,) in cur.fetchall():
        cur.execute(f"DELETE FROM {table}")
