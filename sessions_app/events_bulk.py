"""A bulk write's events stored with one statement (ChannelsSink.emit_many): the same
events, numbered and kept in the outbox as one by one (events.py), their frames published
after the commit in order.

Postgres: the session's counter moves by the batch's size and the rows come from arrays,
numbered from it. SQLite: the counter is read once (the transaction holds the write
lock) and the rows go in by one executemany; the numbering trigger (migration 0008) moves
the counter row by row.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

from memory_core.events import Event

_POSTGRES = (
    "WITH s AS (UPDATE arbor_session SET event_seq = event_seq + %s WHERE id = %s "
    "RETURNING key, event_seq) "
    "INSERT INTO arbor_session_event (session_key, seq, type, data, created_at) "
    "SELECT s.key, s.event_seq - %s + u.n, u.type, u.data, %s "
    "FROM s, unnest(%s::text[], %s::text[]) WITH ORDINALITY AS u(type, data, n) "
    "RETURNING seq")
_SQLITE_COUNTER = "SELECT key, event_seq FROM arbor_session WHERE id = %s"
_SQLITE_INSERT = ("INSERT INTO arbor_session_event (session_key, seq, type, data, created_at) "
                  "VALUES (%s, %s, %s, %s, %s)")


def store(cur: Any, vendor: str, session_id: str, events: Sequence[Event],
          encode: Callable[[Event], str], stamp: Any) -> list[int] | None:
    """Number and store `events` (all of `session_id`, none ephemeral) in order; their
    seqs, or None when the session is gone. Two statements at most, whatever their count."""
    types = [e.type for e in events]
    data = [encode(e) for e in events]
    if vendor == "postgresql":
        cur.execute(_POSTGRES, [len(events), session_id, len(events), stamp, types, data])
        seqs = sorted(int(r[0]) for r in cur.fetchall())
        return seqs or None
    cur.execute(_SQLITE_COUNTER, [session_id])
    row = cur.fetchone()
    if row is None:
        return None
    key, last = row
    seqs = list(range(int(last) + 1, int(last) + 1 + len(events)))
    cur.executemany(_SQLITE_INSERT, [(key, s, t, d, stamp)
                                     for s, t, d in zip(seqs, types, data, strict=True)])
    return seqs


def prune_up_to(seqs: Sequence[int], every: int, kept: int) -> int | None:
    """The seq up to which the outbox is pruned after these seqs (as one by one would:
    when a seq reaches a multiple of `every` past the retention), or None."""
    marks = [s for s in seqs if s % every == 0 and s > kept]
    return marks[-1] - kept if marks else None


def now_utc() -> datetime:
    return datetime.now(UTC)
