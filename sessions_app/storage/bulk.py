"""Bulk message writes: a tree or a chain of messages stored with a fixed number of
statements, whatever its length (append_all and the batch endpoint, import).

The tree is built here, in Python: seqs are taken for the whole batch first (SQLite: past
the table's AUTOINCREMENT counter, under the write lock the transaction holds; Postgres:
from the sequence, in one call), so each row names its parent's seq, and the rows go in
with one statement per table: SQLite's message rows and index rows each by one
executemany (a loop in C), Postgres' rows with their search vectors by one COPY, the
batch's term statistics counted here from the tokens and added by the statement that
takes the seqs (the COPY's trigger is told to skip them). The session's counters (and
`branched`) move once.

Per-vendor pieces are small functions below; the vendors (vendors/) keep the single-row writes.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, NamedTuple

import orjson
from django.db import connection

from memory_core.messages import tool_calls_in
from memory_core.search import index_tokens

from . import sql
from .rows import message_scope
from .vendors import postgres_vector as vector

# Session number, search-key number (SQLite) and agent of a session, with the first free
# message seq (SQLite: past both the largest seq and the AUTOINCREMENT counter, so no seq
# of a deleted message is reused).
_SQLITE_START = """
    SELECT s.key, k.key, s.agent_id,
           max(coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'arbor_message'), 0),
               coalesce((SELECT max(seq) FROM arbor_message), 0)) + 1
    FROM arbor_session s JOIN arbor_search_key k ON k.agent_id = s.agent_id
    WHERE s.id = %s"""
# Postgres: the batch's term counts (a JSON object: term -> rows holding it, and the
# totals '§n', '§t' as the trigger keeps them) added to this transaction's slot, in term
# order.
_POSTGRES_ADD = """
    INSERT INTO arbor_term_df AS t (term, slot, df)
    SELECT c.key, (SELECT arbor_term_slot()), c.value::bigint
    FROM json_each_text(%s::json) c ORDER BY c.key
    ON CONFLICT (term, slot) DO UPDATE SET df = t.df + excluded.df"""
# Postgres takes the seqs (adding the counts first, unless they are held for the end of
# the transaction: counts_once) and sets the flag that makes the COPY's trigger count
# nothing (migration 0008). The sequence is named once (an InitPlan): looked up per row,
# it cost three times the nextval()s.
_POSTGRES_SEQS = """
    SELECT s.key, NULL, s.agent_id,
           (SELECT array_agg(nextval(
               (SELECT pg_get_serial_sequence('arbor_message', 'seq'))::regclass))
            FROM generate_series(1, %s)),
           set_config('arbor.terms_counted', 'next', true)
    FROM arbor_session s WHERE s.id = %s"""
_POSTGRES_START = f"WITH counted AS ({_POSTGRES_ADD}) {_POSTGRES_SEQS}"
_SQLITE_INSERT = (f"INSERT INTO arbor_message (seq, {sql.INSERT_COLUMNS}) "
                  "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)")
# Postgres: COPY, a third faster than one INSERT from arrays (measured on 1,000 rows); its
# trigger counts nothing, the batch's term counts having been added just before.
_POSTGRES_COPY = (f"COPY arbor_message (seq, {sql.INSERT_COLUMNS}, search_vector) FROM STDIN")
# Counters, updated_at and the branched hint in one statement (the batch's own shape is
# known here: whether it gave some parent, or the session, a second child).
_COUNT = ("UPDATE arbor_session SET updated_at = %s, message_count = message_count + %s, "
          "search_tokens = search_tokens + %s, branched = branched OR %s WHERE id = %s")
# The parts of a message and its ancestors, nearest first (a tool result's call is looked
# for among them, as an append does).
_ANCESTOR_PARTS = f"""
    WITH RECURSIVE up(seq, parent_seq, depth) AS (
        SELECT seq, parent_seq, 0 FROM arbor_message WHERE seq = %s
        UNION ALL
        SELECT m.seq, m.parent_seq, up.depth + 1
        FROM up JOIN arbor_message m ON m.seq = up.parent_seq
        WHERE up.depth < {sql.TOOL_CALL_DEPTH})
    SELECT m.parts FROM up JOIN arbor_message m ON m.seq = up.seq ORDER BY up.depth"""


class BulkRow(NamedTuple):
    """One message to store: its parent by id (in the batch, or `outside`). A tuple: one
    is made for every message (a frozen dataclass's __init__ cost 0.8 µs)."""

    message_id: str
    parent_id: str | None
    role: str
    parts: str  # JSON text
    metadata: str  # JSON text
    created_at: Any  # already in the database's form (Dialect.message_time)
    tokens: Sequence[str]  # index tokens: the text's, then search_extra's
    search_extra: str | None


def tokens_of(text: str, parts: Sequence[dict[str, Any]], parent_id: str | None,
              parts_by_id: dict[str, Sequence[dict[str, Any]]],
              parent_by_id: dict[str, str | None],
              stored_above: Sequence[Sequence[dict[str, Any]]] = ()
              ) -> tuple[list[str], str | None]:
    """A message's index tokens as an append makes them: a tool result's carry its call's
    name and input, found among its nearest TOOL_CALL_DEPTH + 1 ancestors (the batch's,
    by `parts_by_id`/`parent_by_id`, then `stored_above`: the stored ancestors of the
    batch's outside parent, nearest first)."""
    tokens = index_tokens(text)
    call_ids = [str(p["toolCallId"]) for p in parts
                if p.get("type") == "tool-result" and p.get("toolCallId") is not None]
    if not call_ids:
        return tokens, None
    found: dict[str, str] = {}
    budget = sql.TOOL_CALL_DEPTH + 1
    ancestor = parent_id
    while ancestor is not None and ancestor in parts_by_id and budget:
        for call_id, words in tool_calls_in(parts_by_id[ancestor]).items():
            found.setdefault(call_id, words)
        ancestor, budget = parent_by_id.get(ancestor), budget - 1
    if ancestor is not None:  # left the batch: its outside parent's stored line
        for stored in stored_above[:budget]:
            for call_id, words in tool_calls_in(stored).items():
                found.setdefault(call_id, words)
    context = " ".join(found[c] for c in call_ids if c in found)
    extra = index_tokens(context) if context else []
    return (tokens + extra, " ".join(extra)) if extra else (tokens, None)


def ancestor_parts(cur: Any, seq: int) -> list[Any]:
    """The parts of the message `seq` and its ancestors, nearest first (one statement)."""
    cur.execute(_ANCESTOR_PARTS, [seq])
    return [orjson.loads(p) for (p,) in cur.fetchall()]


def branches(rows: Sequence[BulkRow], outside_has_child: bool, has_root: bool) -> bool:
    """Whether the batch gives some parent (or the session's roots) a second child:
    `outside_has_child`, the outside parent already has one; `has_root`, a root is stored."""
    seen: set[str | None] = set()
    for r in rows:
        if r.parent_id in seen:
            return True
        seen.add(r.parent_id)
    outside = {r.parent_id for r in rows if r.parent_id is not None} - {r.message_id
                                                                         for r in rows}
    return bool(outside and outside_has_child) or (None in seen and has_root)


def _term_counts(rows: Sequence[BulkRow], counts: Sequence[Counter[str]]) -> Counter[str]:
    """What the insert trigger would add for these rows (migration 0005): each text token
    once per row holding it, '§n' the rows, '§t' their tokens plus two scope tokens each."""
    df: Counter[str] = Counter()
    for c in counts:
        df.update(c.keys())
    df["§n"] = len(rows)
    df["§t"] = sum(len(r.tokens) + 2 for r in rows)
    return df


# Term counts held for the end of the transaction (counts_once), with the savepoint depth
# they were opened at.
_held = threading.local()


def _savepoints() -> int:
    # (atomic(savepoint=False) blocks are listed too, as None)
    return sum(1 for sid in connection.savepoint_ids if sid is not None)


@contextmanager
def counts_once() -> Iterator[None]:
    """Around many bulk writes in one transaction (an import of a file of conversations):
    on Postgres, their term counts are summed here and added by one statement on the way
    out, still inside the transaction. Each update of a counter row leaves a version the
    next one in the same transaction walks past (none can be pruned before the commit):
    a write per conversation updating the same common words' rows cost ever more, 8 ms a
    conversation by the 200th. Writes within a savepoint taken inside count at once (a
    rollback to it must take their counts too)."""
    if connection.vendor != "postgresql" or getattr(_held, "counts", None) is not None:
        yield
        return
    _held.counts, _held.depth = Counter(), _savepoints()
    try:
        yield
        counts = _held.counts
    finally:
        _held.counts = None
    if counts:
        with connection.cursor() as cur:
            cur.execute(_POSTGRES_ADD, [orjson.dumps(counts).decode()])


def insert(cur: Any, vendor: str, session_id: str, rows: Sequence[BulkRow],
           outside: dict[str, int], *, stamp: Any, branched: bool) -> str:
    """Store `rows` (parents first) in the session with their index rows, and move its
    counters, updated_at (`stamp`, in the database's form) and branched hint; returns the
    agent id. Parents outside the batch are in `outside` (id -> seq). Three statements on
    SQLite, three on Postgres, whatever the batch's size."""
    if vendor == "sqlite":
        cur.execute(_SQLITE_START, [session_id])
        session_key, fts_key, agent_id, first = cur.fetchone()
        seqs: Sequence[int] = range(first, first + len(rows))
    else:
        counts = [Counter(r.tokens) for r in rows]
        df = _term_counts(rows, counts)
        held = getattr(_held, "counts", None)
        if held is not None and _held.depth == _savepoints():
            held.update(df)
            cur.execute(_POSTGRES_SEQS, [len(rows), session_id])
        else:
            cur.execute(_POSTGRES_START, [orjson.dumps(df).decode(), len(rows), session_id])
        session_key, fts_key, agent_id, taken, _ = cur.fetchone()
        seqs = sorted(taken)  # the latest leaf is the last row: seqs in the rows' order
    seq_of = dict(outside)
    seq_of.update((r.message_id, s) for r, s in zip(rows, seqs, strict=True))
    parent = [None if r.parent_id is None else seq_of[r.parent_id] for r in rows]
    scope = message_scope(session_id, agent_id)
    if vendor == "sqlite":
        cur.executemany(_SQLITE_INSERT, [
            (s, session_key, r.message_id, p, r.role, r.parts, r.metadata, len(r.tokens),
             r.created_at, r.search_extra)
            for r, s, p in zip(rows, seqs, parent, strict=True)])
        from .vendors.sqlite import index_rows  # (with the counts its search reads)

        high = fts_key << sql.FTS_SHIFT
        index_rows(cur, [(high | s, r.tokens) for r, s in zip(rows, seqs, strict=True)], scope)
    else:
        tail = vector.scope_tail(scope)
        # (On the driver's cursor: Django's wrapper has no copy(), and logs no COPY.)
        with getattr(cur, "cursor", cur).copy(_POSTGRES_COPY) as copy:
            for r, s, p, c in zip(rows, seqs, parent, counts, strict=True):
                copy.write_row((s, session_key, r.message_id, p, r.role, r.parts, r.metadata,
                                len(r.tokens), r.created_at, r.search_extra,
                                vector.literal(c, tail)))
    cur.execute(_COUNT, [stamp, len(rows), sum(len(r.tokens) for r in rows), branched,
                         session_id])
    return str(agent_id)
