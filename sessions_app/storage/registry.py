"""The session registry through the ORM: create, list, rename, delete, usage, fork,
continue, and the per-session compaction and estimate state."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from django.db import connection, transaction
from django.db.models import BigIntegerField, F, FloatField, Value
from django.db.models.sql import InsertQuery

from memory_core.context import specs_from_templates
from memory_core.errors import InvalidInput, NotFound
from memory_core.limits import MAX_COST, MAX_TOKEN_TOTAL, strip_nul
from memory_core.messages import SessionInfo, now
from memory_core.snapshot import SessionSnapshot

from .. import models
from . import erasure
from .context import ContextRows
from .messages import Messages, delete_rows, stored_count
from .paths import Paths
from .vendors.chosen import current

_REGISTRY_FIELDS = ("name", "model", "source", "end_reason", "parent_session_id")


def _info(row: models.Session) -> SessionInfo:
    return SessionInfo(
        id=row.id,
        agent_id=row.agent_id,
        name=row.name,
        parent_session_id=row.parent_session_id,
        model=row.model,
        source=row.source,
        input_tokens=row.input_tokens,
        output_tokens=row.output_tokens,
        estimated_cost=row.estimated_cost,
        end_reason=row.end_reason,
        message_count=row.message_count,
        created_at=row.created_at,
        updated_at=row.updated_at,
        status=row.shown_status,
        pinned=row.pinned,
    )


# A session row's INSERT, its text made once per vendor: an import stores a session for
# each conversation of a file, and create() built the statement anew each time (with
# conversations of ten messages, a fifth of the import).
_SESSION_INSERT: dict[str, str] = {}


def _insert_session(cur: Any, row: models.Session) -> None:
    """Store a new session row as create() does (its key taken already; no signals)."""
    fields = models.Session._meta.local_concrete_fields
    statement = _SESSION_INSERT.get(connection.vendor)
    if statement is None:
        query = InsertQuery(models.Session)
        query.insert_values(fields, [row])
        [(statement, _)] = query.get_compiler(connection=connection).as_sql()
        _SESSION_INSERT[connection.vendor] = statement
    cur.execute(statement, [f.get_db_prep_save(f.pre_save(row, True), connection)
                            for f in fields])


def _as_read(value: Any) -> datetime:
    """A time given to a row's DateTimeField (a datetime, or ISO text from a document) as
    reading the row back gives it: aware, in UTC (a naive one was saved as UTC)."""
    parsed = models.Session._meta.get_field("updated_at").to_python(value)
    return (parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)).astimezone(UTC)


class Registry(Paths, Messages, ContextRows):
    """Session rows. A fork reads a path (Paths), copies it (Messages) and the blocks
    (ContextRows)."""

    def _sessions(self, agent_id: str) -> Any:
        return models.Session.objects.filter(agent_id=agent_id)

    def create_session(
        self, agent_id: str, *, name: str, parent_session_id: str | None,
        model: str | None, source: str | None,
    ) -> SessionInfo:
        if parent_session_id is not None and not self._sessions(agent_id).filter(
            id=parent_session_id
        ).exists():
            raise NotFound(f"parent session {parent_session_id} not found")
        if not models.Agent.objects.filter(id=agent_id).exists():
            raise NotFound(f"agent {agent_id} not found")
        templates = specs_from_templates(self.agent_templates(agent_id))
        stamp = now()
        with transaction.atomic():
            row = models.Session.objects.create(
                agent_id=agent_id, name=name, parent_session_id=parent_session_id,
                model=model, source=source, created_at=stamp, updated_at=stamp,
            )
            # Every session starts with the agent's block templates.
            self.create_session_blocks(
                row.id, [{"label": t.label, **t.stored()} for t in templates])
        return _info(row)

    def get_session(self, agent_id: str, session_id: str) -> SessionInfo | None:
        row = self._sessions(agent_id).filter(id=session_id).first()
        return _info(row) if row else None

    def list_sessions(self, agent_id: str) -> list[SessionInfo]:
        return [_info(r) for r in self._sessions(agent_id).order_by("-updated_at", "-created_at")]

    def update_session(self, agent_id: str, session_id: str, **fields: Any) -> SessionInfo:
        unknown = set(fields) - set(_REGISTRY_FIELDS)
        if unknown:
            raise InvalidInput(f"cannot set {', '.join(sorted(unknown))} on a session")
        changed = self._sessions(agent_id).filter(id=session_id).update(**fields, updated_at=now())
        if not changed:
            raise NotFound(f"session {session_id} not found")
        info = self.get_session(agent_id, session_id)
        assert info is not None
        return info

    def delete_session(self, agent_id: str, session_id: str) -> bool:
        with transaction.atomic():
            if not self._sessions(agent_id).filter(id=session_id).exists():
                return False
            with connection.cursor() as cur:
                erasure.erased(agent_id=agent_id, session_id=session_id, scope="session",
                               sessions=1, messages=stored_count(cur, session_id),
                               overlays=erasure.ALL_OVERLAYS)
                delete_rows(cur, session_id)
            # Its own blocks' versions cascade; agent-wide ones it wrote stay, marked.
            self.mark_deleted_sources(session_id, None)
            models.Session.objects.filter(parent_session_id=session_id).update(parent_session=None)
            # Blocks, values, entries, prompt and skill states cascade from the row.
            models.Session.objects.filter(id=session_id).delete()
            with connection.cursor() as cur:
                current().give_back_free_pages(cur)
        return True

    def add_usage(
        self, agent_id: str, session_id: str, *, input_tokens: int, output_tokens: int, cost: float
    ) -> SessionInfo:
        """Accumulate usage counters. Raises NotFound, or InvalidInput past a limit."""
        # The bounds sit in the UPDATE's WHERE, so two racing increments cannot both pass.
        # Values are typed bigint: Django would send a bare int as int4 and Postgres wraps it.
        changed = self._sessions(agent_id).filter(
            id=session_id,
            input_tokens__lte=MAX_TOKEN_TOTAL - input_tokens,
            output_tokens__lte=MAX_TOKEN_TOTAL - output_tokens,
            estimated_cost__lte=MAX_COST - cost,
        ).update(
            input_tokens=F("input_tokens") + Value(input_tokens, output_field=BigIntegerField()),
            output_tokens=F("output_tokens") + Value(output_tokens, output_field=BigIntegerField()),
            estimated_cost=F("estimated_cost") + Value(cost, output_field=FloatField()),
            updated_at=now(),
        )
        info = self.get_session(agent_id, session_id)
        if info is None:
            raise NotFound(f"session {session_id} not found")
        if not changed:
            raise _over_limit(info, input_tokens, output_tokens, cost)
        return info

    def continue_session(self, agent_id: str, session_id: str, *, name: str) -> SessionInfo:
        source = self.get_session(agent_id, session_id)
        if source is None:
            raise NotFound(f"session {session_id} not found")
        stamp = now()
        with transaction.atomic():
            row = models.Session.objects.create(
                agent_id=agent_id, name=name, parent_session_id=session_id,
                model=source.model, source=source.source, created_at=stamp, updated_at=stamp,
            )
            self.copy_blocks(agent_id, session_id, row.id)
        return _info(row)

    def fork(
        self, agent_id: str, session_id: str, at_message_id: str, *, name: str
    ) -> SessionInfo:
        source = self.get_session(agent_id, session_id)
        if source is None:
            raise NotFound(f"session {session_id} not found")
        with transaction.atomic(savepoint=False):
            path, overlays, _ = self.path(session_id, at_message_id, with_overlays=True)
            stamp = now()
            target = models.Session.objects.create(
                agent_id=agent_id, name=name, parent_session_id=session_id, model=source.model,
                source=source.source, created_at=stamp, updated_at=stamp,
            )
            self.copy_path(target.id, agent_id, [
                m._replace(metadata={**m.metadata, "forked_from": {
                    "session_id": session_id, "message_id": m.id}})
                for m in path
            ], index_from=session_id)
            self.copy_blocks(agent_id, session_id, target.id)
            kept = {m.id for m in path}
            models.Compaction.objects.bulk_create([
                models.Compaction(
                    session_id=target.id, summary=o.summary, from_message_id=o.from_message_id,
                    to_message_id=o.to_message_id, created_at=o.created_at,
                )
                for o in overlays
                if o.from_message_id in kept and o.to_message_id in kept
            ])
        info = self.get_session(agent_id, target.id)
        assert info is not None
        return info

    def restore_session(self, agent_id: str, snapshot: SessionSnapshot) -> SessionInfo:
        with transaction.atomic(savepoint=False), connection.cursor() as cur:
            # Whether the id is taken, and the new row's number, in one statement (the
            # row then saves without a transaction of its own: see Session.save).
            cur.execute("SELECT EXISTS (SELECT 1 FROM arbor_session WHERE id = %s), "
                        f"({models.NEXT_SESSION_KEY[connection.vendor]})", [snapshot.id])
            taken, key = cur.fetchone()
            session_id = models.uuid_str() if taken else snapshot.id  # ids are global
            parent = snapshot.parent_session_id
            if parent and not self._sessions(agent_id).filter(id=parent).exists():
                parent = None
            row = models.Session(
                key=int(key), id=session_id, agent_id=agent_id, name=snapshot.name, parent_session_id=parent,
                model=snapshot.model, source=snapshot.source, end_reason=snapshot.end_reason,
                input_tokens=snapshot.input_tokens, output_tokens=snapshot.output_tokens,
                estimated_cost=snapshot.estimated_cost, created_at=snapshot.created_at,
                updated_at=snapshot.updated_at,
            )
            _insert_session(cur, row)
            if snapshot.blocks:  # (an empty bulk_create still builds its query: ~0.3 ms)
                models.SessionBlock.objects.bulk_create([
                    models.SessionBlock(session_id=session_id, label=label, position=i,
                                        spec=spec, removed=removed)
                    for i, (label, spec, removed) in enumerate(snapshot.blocks)
                ])
            # (The copy counts the messages and sets the snapshot's updated_at.)
            # (as read: the dialects' parsers take text for the database's own, in UTC)
            self.copy_path(session_id, agent_id, snapshot.messages,
                           updated_at=_as_read(snapshot.updated_at), encoded=snapshot.encoded)
            self._restore_views(session_id, snapshot)
        # The row as stored, without reading it back (a query a conversation, in an import
        # of thousands): the copy moved only the count (and updated_at to the same time).
        row.message_count = len(snapshot.messages)
        row.created_at, row.updated_at = _as_read(row.created_at), _as_read(row.updated_at)
        return _info(row)

    def _restore_views(self, session_id: str, snapshot: SessionSnapshot) -> None:
        """Overlays (ids kept unless taken), skill states and the frozen prompt. (An
        import of another tool's conversation has none: nothing is built for it.)"""
        if snapshot.compactions:
            self._restore_overlays(session_id, snapshot)
        if snapshot.skills:
            models.SkillState.objects.bulk_create([
                models.SkillState(session_id=session_id, label=s.label, key=s.key,
                                  loaded=s.loaded, loaded_at=s.loaded_at,
                                  unloaded_at=s.unloaded_at)
                for s in snapshot.skills
            ])
        if snapshot.prompt is not None:
            # The exact text the model saw, so a provider's prompt cache stays warm.
            models.SessionPrompt.objects.create(
                session_id=session_id, text=snapshot.prompt.text,
                sections=snapshot.prompt.sections, frozen_at=snapshot.prompt.frozen_at)

    def _restore_overlays(self, session_id: str, snapshot: SessionSnapshot) -> None:
        taken = set(models.Compaction.objects.filter(
            overlay_id__in=[c.id for c in snapshot.compactions]).values_list("overlay_id", flat=True))
        models.Compaction.objects.bulk_create([
            models.Compaction(
                session_id=session_id, summary=c.summary, from_message_id=c.from_message_id,
                to_message_id=c.to_message_id, created_at=c.created_at,
                **({} if c.id in taken else {"overlay_id": c.id}))
            for c in snapshot.compactions
        ])

    def compaction_state(self, session_id: str) -> tuple[str, Any, Any]:
        row = models.Session.objects.filter(id=session_id).values_list(
            "compaction_error", "compaction_failed_at", "compaction_retry_at").first()
        return (row[0], row[1], row[2]) if row else ("", None, None)

    def set_compaction_state(
        self, session_id: str, *, error: str, failed_at: Any, retry_at: Any
    ) -> None:
        models.Session.objects.filter(id=session_id).update(
            compaction_error=strip_nul(error)[:2000], compaction_failed_at=failed_at,
            compaction_retry_at=retry_at)

    def check_state(self, session_id: str) -> tuple[Any, str | None, int]:
        row = models.Session.objects.filter(id=session_id).values_list(
            "compaction_retry_at", "estimate_leaf_id", "estimate_tokens").first()
        return (row[0], row[1], int(row[2])) if row else (None, None, 0)

    def set_estimate(self, session_id: str, leaf_id: str | None, tokens: int) -> None:
        models.Session.objects.filter(id=session_id).update(
            estimate_leaf_id=leaf_id, estimate_tokens=tokens)


def _over_limit(
    info: SessionInfo, input_tokens: int, output_tokens: int, cost: float
) -> InvalidInput:
    """The error for an increment that would take a total past its limit."""
    totals = (("input_tokens", info.input_tokens + input_tokens, MAX_TOKEN_TOTAL),
              ("output_tokens", info.output_tokens + output_tokens, MAX_TOKEN_TOTAL),
              ("estimated_cost", info.estimated_cost + cost, MAX_COST))
    name, total, limit = next(((n, t, lim) for n, t, lim in totals if t > lim), totals[2])
    return InvalidInput(f"{name} would become {total}, over the limit of {limit}; "
                        "no usage was added")
