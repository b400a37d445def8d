"""The session registry through the ORM: create, list, rename, delete, fork, continue."""

from __future__ import annotations

from typing import Any

import orjson
from django.db import connection, transaction
from django.db.models import BigIntegerField, F, FloatField, Value

from memory_core.context import specs_from_templates
from memory_core.errors import InvalidInput, NotFound
from memory_core.limits import MAX_COST, MAX_TOKEN_TOTAL
from memory_core.messages import SessionInfo, now

from . import dialects, models

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
    )


class OrmRegistry:
    """The registry half of OrmStorage; uses the message half for forks."""

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
                # Raw deletes: the ORM would load every message to cascade.
                cur.execute("DELETE FROM arbor_message WHERE session_id = %s", [session_id])
                cur.execute("DELETE FROM arbor_compaction WHERE session_id = %s", [session_id])
            models.Session.objects.filter(parent_session_id=session_id).update(parent_session=None)
            # Blocks, values, entries, prompt and skill states cascade from the row.
            models.Session.objects.filter(id=session_id).delete()
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
            self._copy_blocks(agent_id, session_id, row.id)
        return _info(row)

    def fork(
        self, agent_id: str, session_id: str, at_message_id: str, *, name: str
    ) -> SessionInfo:
        source = self.get_session(agent_id, session_id)
        if source is None:
            raise NotFound(f"session {session_id} not found")
        d = dialects.current()
        with transaction.atomic(), connection.cursor() as cur:
            path, overlays, _ = self.path(session_id, at_message_id, with_overlays=True)
            stamp = now()
            target = models.Session.objects.create(
                agent_id=agent_id, name=name, parent_session_id=session_id, model=source.model,
                source=source.source, created_at=stamp, updated_at=stamp,
                message_count=len(path),
            )
            cur.execute(
                "SELECT message_id, search_len FROM arbor_message WHERE session_id = %s",
                [session_id],
            )
            lengths = dict(cur.fetchall())
            rows = []
            for m in path:
                metadata = dict(m.metadata)
                metadata["forked_from"] = {"session_id": session_id, "message_id": m.id}
                rows.append((
                    target.id, m.id, m.parent_id, m.role, orjson.dumps(m.parts).decode(),
                    orjson.dumps(metadata).decode(), m.text, lengths.get(m.id, 0),
                    d.db_datetime(m.created_at),
                ))
            cur.executemany(
                "INSERT INTO arbor_message (session_id, message_id, parent_message_id, role, "
                "parts, metadata, text, search_len, created_at) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
                rows,
            )
            cur.execute(
                """UPDATE arbor_message SET parent_seq = (
                       SELECT p.seq FROM arbor_message p
                       WHERE p.session_id = arbor_message.session_id
                         AND p.message_id = arbor_message.parent_message_id)
                   WHERE session_id = %s AND parent_message_id IS NOT NULL""",
                [target.id],
            )
            d.copy_index(cur, source_session=session_id, target_session=target.id,
                         agent_id=agent_id)
            models.Session.objects.filter(id=target.id).update(
                search_tokens=sum(r[7] for r in rows)
            )
            self._copy_blocks(agent_id, session_id, target.id)
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

    def _copy_blocks(self, agent_id: str, source: str, target: str) -> None:
        """A fork starts with the source session's blocks and their session contents."""
        models.SessionBlock.objects.bulk_create([
            models.SessionBlock(session_id=target, label=b.label, position=b.position,
                                spec=b.spec, removed=b.removed)
            for b in models.SessionBlock.objects.filter(session_id=source)
        ])
        old, new = f"session:{source}:", f"session:{target}:"
        models.BlockValue.objects.bulk_create([
            models.BlockValue(key=new + v.key[len(old):], agent_id=agent_id, session_id=target,
                              content=v.content)
            for v in models.BlockValue.objects.filter(session_id=source)
        ])
        for e in models.Entry.objects.filter(session_id=source):
            self.put_entry(new + e.namespace[len(old):], e.key, e.content, e.description)

    def compaction_state(self, session_id: str) -> tuple[str, Any, Any]:
        row = models.Session.objects.filter(id=session_id).values_list(
            "compaction_error", "compaction_failed_at", "compaction_retry_at").first()
        return (row[0], row[1], row[2]) if row else ("", None, None)

    def set_compaction_state(
        self, session_id: str, *, error: str, failed_at: Any, retry_at: Any
    ) -> None:
        models.Session.objects.filter(id=session_id).update(
            compaction_error=error.replace("\x00", "")[:2000], compaction_failed_at=failed_at,
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
