"""Compaction overlays: add, list, remove, and the per-path read of overlays with the
session's unloaded skills."""

from __future__ import annotations

from typing import Any, Protocol

from django.db import IntegrityError, connection, transaction

from memory_core.errors import InvalidInput, NotFound
from memory_core.limits import strip_nul
from memory_core.messages import Message, now
from memory_core.tree import Compaction

from .. import models
from . import sql
from .vendors.chosen import current


class PathReader(Protocol):
    def path(
        self, session_id: str, leaf_id: str | None, *, with_overlays: bool
    ) -> tuple[list[Message], list[Compaction], dict[tuple[str, str], Any]]: ...

    def get_message(self, session_id: str, message_id: str) -> Message | None: ...


Views = tuple[list[Compaction], dict[tuple[str, str], Any]]


def read_views(cur: Any, session_id: str) -> Views:
    """Overlays (oldest first) and unloaded skills ((label, key) -> when), in one query."""
    cur.execute(sql.VIEWS, [session_id, session_id])
    return _views(cur.fetchall())[1]


def read_stamped_views(cur: Any, session_id: str) -> tuple[Any, Views]:
    """The session's stamp (path_cache.py; None when there is no such session) and its
    views, in one query."""
    cur.execute(sql.STAMPED_VIEWS, [session_id] * 4)
    return _views(cur.fetchall())


def _views(rows: list[Any]) -> tuple[Any, Views]:
    to_dt = current().to_datetime
    overlays: list[Compaction] = []
    unloaded: dict[tuple[str, str], Any] = {}
    stamp = None
    for kind, a, b, c, d, when, _ in rows:
        if kind == "c":
            overlays.append(Compaction(a, b, c, d, to_dt(when)))
        elif kind == "s":
            unloaded[(a, b)] = to_dt(when)
        else:
            stamp = (a, b, c, when)
    return stamp, (overlays, unloaded)


class Overlays:
    """Compaction overlays. Adding one checks that its range lies on one path, read
    through the storage's Paths (the self-type: paths.py imports this module)."""

    def add_compaction(
        self: PathReader, session_id: str, *, summary: str, from_id: str, to_id: str
    ) -> Compaction:
        with transaction.atomic():
            path, _, _ = self.path(session_id, to_id, with_overlays=False)
            if from_id not in {m.id for m in path}:
                if self.get_message(session_id, from_id) is None:
                    raise NotFound(f"message {from_id} not found in session {session_id}")
                raise InvalidInput(f"message {from_id} is not on the path to {to_id}")
            try:
                row = models.Compaction.objects.create(
                    session_id=session_id, summary=strip_nul(summary),
                    from_message_id=from_id, to_message_id=to_id, created_at=now(),
                )
            except IntegrityError as exc:  # the session vanished meanwhile
                raise NotFound(f"session {session_id} not found") from exc
        return Compaction(row.overlay_id, row.summary, from_id, to_id, row.created_at)

    def get_compactions(self, session_id: str) -> list[Compaction]:
        to_dt = current().to_datetime
        with connection.cursor() as cur:
            cur.execute(sql.COMPACTIONS, [session_id])
            return [Compaction(r[0], r[1], r[2], r[3], to_dt(r[4])) for r in cur.fetchall()]

    def remove_compaction(self, session_id: str, compaction_id: str) -> bool:
        deleted, _ = models.Compaction.objects.filter(
            session_id=session_id, overlay_id=compaction_id
        ).delete()
        return bool(deleted)
