"""What every deletion does besides removing rows (issue 31): it is logged (who, when,
what scope, how many; never content), the outbox's copies of deleted content go, and
this process's path cache lets go of the session's paths (other workers' caches follow
from the log: lifecycle/worker.py). Called inside the deletion's own transaction, so a deletion
that rolls back leaves no log row either.

Full-text entries go with their rows (SQLite: a trigger on arbor_message; Postgres: the
row's own column), as do overlays touching the messages (messages.py) and any
vectors (their reference cascades). Block versions written by a deleted message stay,
their source marked deleted (versions.py).
"""

from __future__ import annotations

from collections.abc import Collection

from django.db import connection, transaction
from django.utils import timezone

from .. import models
from . import actor, path_cache

# The outbox's events that carry derived content (a compaction's summary of the messages
# it covers); message events hold a reference only (live/events.py BY_REFERENCE).
ERASED = '{"compaction":null,"erased":true}'
ALL_OVERLAYS = (-1,)  # `overlays` for a deletion of every message: all of the session's


def erased(*, agent_id: str | None, session_id: str, scope: str, messages: int,
           sessions: int = 0, overlays: Collection[int] = ()) -> None:
    """Record a deletion of `messages` messages (and `sessions` sessions) of a session;
    `overlays`: the seqs of the compaction overlays it removed with them."""
    if overlays:
        _scrub_overlay_events(session_id, overlays)
    who = actor.current()
    agent = agent_id or _agent_of(session_id)
    models.Erasure.objects.create(
        created_at=timezone.now(), agent_id=agent or "", session_id=session_id,
        owner_id=_owner_of(agent), scope=scope, sessions=sessions, messages=messages,
        by=who.by, by_id=who.by_id, door=who.door)
    transaction.on_commit(lambda: forget({session_id}))


def forget(session_ids: set[str]) -> None:
    """This process's cached paths of these sessions."""
    path_cache.paths.forget(session_ids)


def policy_run(*, agent: models.Agent, sessions: int, messages: int) -> None:
    """The summary row of one policy run over an agent (each session it removed has its
    own row too)."""
    models.Erasure.objects.create(
        created_at=timezone.now(), agent_id=agent.id, owner_id=agent.owner_id,
        scope="policy", sessions=sessions, messages=messages, by="policy", by_id=agent.id,
        door="policy")


def _agent_of(session_id: str) -> str | None:
    return (models.Session.objects.filter(id=session_id)
            .values_list("agent_id", flat=True).first())


def _owner_of(agent_id: str | None) -> int | None:
    if not agent_id:
        return None
    return models.Agent.objects.filter(id=agent_id).values_list("owner_id", flat=True).first()


def _scrub_overlay_events(session_id: str, overlays: Collection[int]) -> None:
    """compaction.completed events of removed overlays keep their number, not their
    summary (a client that resumes sees the event and re-reads the history)."""
    rows = models.Compaction.objects.filter(session_id=session_id)
    if overlays != ALL_OVERLAYS:
        rows = rows.filter(seq__in=list(overlays))
    ids = set(rows.values_list("overlay_id", flat=True))
    if not ids:
        return
    rows = models.SessionEvent.objects.filter(
        session__id=session_id, type="compaction.completed").values_list("id", "data")
    doomed = [pk for pk, data in rows
              if isinstance(data, dict) and isinstance(data.get("compaction"), dict)
              and data["compaction"].get("id") in ids]
    if doomed:
        with connection.cursor() as cur:
            marks = ", ".join(["%s"] * len(doomed))
            cur.execute(f"UPDATE arbor_session_event SET data = %s WHERE id IN ({marks})",
                        [ERASED, *doomed])
