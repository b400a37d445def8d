"""The live-event outbox's SQL (`arbor_session_event`): number and store an event, prune
past the retention, read the stored events after a seq. What an event means, and how a
frame is published, is sessions_app/live/events.py's business."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from django.db import connection

from memory_core.messages import Message

from .. import dialects, models
from . import hot, sql
from .paths import find

PRUNE_EVERY = 100  # events; pruning runs when a session's seq reaches a multiple of this

# One statement per stored event: the session's next seq and the outbox row (both vendors
# return the seq). Postgres: the UPDATE (which holds the session row until commit, so two
# writers get consecutive numbers) feeds the INSERT. SQLite: the INSERT reads event_seq + 1
# under the transaction's write lock and a trigger (migration 0008) moves the counter.
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
    d = dialects.current()
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
