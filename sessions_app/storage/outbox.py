"""The live-event outbox's SQL (`arbor_session_event`): number and store an event, prune
past the retention, read the stored events after a seq. What an event means, and how a
frame is published, is sessions_app/live/events.py's business."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import orjson
from django.db import connection, transaction

from memory_core.messages import Message

from .. import models
from . import hot, sql
from .paths import find
from .vendors.chosen import current

PRUNE_EVERY = 100  # events; pruning runs when a session's seq reaches a multiple of this

# One statement per stored event: the session's next seq and the outbox row (both vendors
# return the seq). Postgres: the UPDATE (which holds the session row until commit, so two
# writers get consecutive numbers) feeds the INSERT. SQLite: the INSERT reads event_seq + 1
# under the transaction's write lock and a trigger (migration 0003) moves the counter.
INSERT_EVENT = {
    "postgresql": (
        "WITH s AS (UPDATE arbor_session SET event_seq = event_seq + 1 WHERE id = %s "
        "RETURNING key, event_seq) "
        "INSERT INTO arbor_session_event (session_key, seq, type, data, created_at) "
        "SELECT key, event_seq, %s, %s, %s FROM s RETURNING seq"),
    "sqlite": (
        "INSERT INTO arbor_session_event (session_key, seq, type, data, created_at) "
        "SELECT key, event_seq + 1, %s, %s, %s FROM arbor_session WHERE id = %s RETURNING seq"),
}


def insert_event_params(vendor: str, session_id: str, type_: str, data: str,
                        created_at: Any) -> list[Any]:
    """INSERT_EVENT[vendor]'s parameters, in its order."""
    if vendor == "postgresql":
        return [session_id, type_, data, created_at]
    return [type_, data, created_at, session_id]


def store(session_id: str, type_: str, data: str, keep: int) -> int | None:
    """Number the event with the session's next seq and store it (JSON text `data`), in
    the caller's transaction; every PRUNE_EVERY events, drop those older than the last
    `keep`. None when there is no such session (any more)."""
    d = current()
    with hot.cursor() as cur:
        cur.execute(INSERT_EVENT[d.vendor], insert_event_params(
            d.vendor, session_id, type_, data, d.db_datetime(datetime.now(UTC))))
        row = cur.fetchone()
        if row is None:
            return None
        seq = int(row[0])
        if seq % PRUNE_EVERY == 0 and seq > keep:
            cur.execute(sql.PRUNE_EVENTS, [session_id, seq - keep])
            d.give_back_free_pages(cur)
    return seq


# A bulk write's events in one statement (store_many): Postgres moves the counter by the
# batch's size and takes the rows from one JSON array of [type, data] pairs (orjson writes
# it in C; psycopg dumps a text[] element by element in Python, 20 ms for 1,000 events);
# SQLite moves the counter once (the transaction holds the write lock) and inserts by one
# executemany, rows the numbering trigger leaves alone (migration 0011: none is past it).
_INSERT_MANY_POSTGRES = (
    "WITH s AS (UPDATE arbor_session SET event_seq = event_seq + %s WHERE id = %s "
    "RETURNING key, event_seq) "
    "INSERT INTO arbor_session_event (session_key, seq, type, data, created_at) "
    "SELECT s.key, s.event_seq - %s + u.n, u.e ->> 0, u.e ->> 1, %s "
    "FROM s, json_array_elements(%s::json) WITH ORDINALITY AS u(e, n) "
    "RETURNING seq")
_SQLITE_COUNTER = ("UPDATE arbor_session SET event_seq = event_seq + %s WHERE id = %s "
                   "RETURNING key, event_seq")
_SQLITE_INSERT = ("INSERT INTO arbor_session_event (session_key, seq, type, data, created_at) "
                  "VALUES (%s, %s, %s, %s, %s)")


def store_many(session_id: str, rows: Sequence[tuple[str, str]], keep: int) -> list[int] | None:
    """Number and store a session's events (type, JSON text) in order, in the caller's
    transaction, as `store` would one by one (pruning included); their seqs, or None when
    the session is gone. Two statements at most, whatever their count."""
    d = current()
    stamp = d.db_datetime(datetime.now(UTC))
    with hot.cursor() as cur:
        if d.vendor == "postgresql":
            cur.execute(_INSERT_MANY_POSTGRES, [len(rows), session_id, len(rows), stamp,
                                                orjson.dumps(rows).decode()])
            seqs = sorted(int(r[0]) for r in cur.fetchall())
            if not seqs:
                return None
        else:
            cur.execute(_SQLITE_COUNTER, [len(rows), session_id])
            row = cur.fetchone()
            if row is None:
                return None
            key, last = row
            seqs = list(range(int(last) - len(rows) + 1, int(last) + 1))
            cur.executemany(_SQLITE_INSERT, [(key, s, t, x, stamp)
                                             for s, (t, x) in zip(seqs, rows, strict=True)])
        marks = [s for s in seqs if s % PRUNE_EVERY == 0 and s > keep]
        if marks:
            cur.execute(sql.PRUNE_EVENTS, [session_id, marks[-1] - keep])
            d.give_back_free_pages(cur)
    return seqs


def stored_after(session_id: str,
                 after_seq: int) -> list[tuple[int, str, dict[str, Any]]] | None:
    """(seq, type, data) of the session's stored events with seq > after_seq, in seq
    order; None when some of them are gone (pruned, or the session itself)."""
    found = models.Session.objects.filter(id=session_id).values_list(
        "event_seq", "key").first()
    if found is None:
        return None
    last, key = found
    if after_seq >= last:
        return []
    rows = list(models.SessionEvent.objects.filter(session_id=key, seq__gt=after_seq)
                .order_by("seq").values_list("seq", "type", "data"))
    if not rows or rows[0][0] != max(after_seq, 0) + 1:
        return None
    return rows


def messages(session_id: str, ids: Sequence[str]) -> dict[str, Message]:
    """id -> message, for those of `ids` still stored in the session."""
    with connection.cursor() as cur:
        return {id_: message for id_, (_, message) in find(cur, session_id, ids).items()}


PRUNE_BATCH = 200  # sessions per transaction
# A session's outbox rows that fell out of its window (the last `keep` seqs): one index
# range of the unique (session, seq).
_PRUNE_SESSION = "DELETE FROM arbor_session_event WHERE session_key = %s AND seq <= %s"


def prune_past(keep: int) -> int:
    """Every session's outbox rows older than its last `keep`, in batches of sessions, one
    short transaction each (background upkeep); how many went."""
    deleted, after = 0, -1
    while True:
        batch = list(models.Session.objects.filter(event_seq__gt=keep, key__gt=after)
                     .order_by("key").values_list("key", "event_seq")[:PRUNE_BATCH])
        if not batch:
            break
        with transaction.atomic(), connection.cursor() as cur:
            for key, seq in batch:
                cur.execute(_PRUNE_SESSION, [key, seq - keep])
                deleted += max(cur.rowcount, 0)
        after = batch[-1][0]
    if deleted:
        with connection.cursor() as cur:
            current().give_back_free_pages(cur)  # SQLite: the file shrinks
    return deleted
