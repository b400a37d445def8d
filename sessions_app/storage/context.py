"""Context rows: block declarations, block values, entries (with their search index),
frozen prompts and skill states."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import orjson
from django.db import connection, transaction
from django.db.models import Max

from memory_core.limits import strip_nul
from memory_core.messages import now
from memory_core.search import index_tokens

from .. import models
from .vendors.chosen import current
from .versions import VersionRows


@dataclass(frozen=True, slots=True)
class Prompt:
    text: str
    sections: dict[str, str]
    frozen_at: datetime


def _owners(namespace: str) -> dict[str, Any]:
    """'session:<id>:<label>' or 'agent:<id>:<label>' -> the owning rows' ids."""
    scope, owner, _ = namespace.split(":", 2)
    if scope == "session":
        agent_id = models.Session.objects.filter(id=owner).values_list("agent_id", flat=True).first()
        return {"agent_id": agent_id, "session_id": owner}
    return {"agent_id": owner, "session_id": None}


class ContextRows(VersionRows):
    """Blocks, values, entries, frozen prompts and skill states; a copy of a session's
    blocks copies their versions (VersionRows)."""

    def agent_templates(self, agent_id: str) -> list[dict[str, Any]]:
        # Raw: read once a conversation of an imported file, where the ORM's query cost
        # ten times the statement (both drivers hand JSON columns over as text here).
        with connection.cursor() as cur:
            cur.execute("SELECT context FROM arbor_agent WHERE id = %s", [agent_id])
            row = cur.fetchone()
        return list(orjson.loads(row[0]) or []) if row and row[0] is not None else []

    def session_blocks(self, session_id: str) -> list[tuple[str, dict[str, Any], bool]]:
        return [
            (label, dict(spec), removed)
            for label, spec, removed in models.SessionBlock.objects.filter(
                session_id=session_id
            ).order_by("position", "id").values_list("label", "spec", "removed")
        ]

    def save_session_block(
        self, session_id: str, label: str, spec: dict[str, Any], *, removed: bool = False
    ) -> None:
        with transaction.atomic():
            row = models.SessionBlock.objects.filter(session_id=session_id, label=label).first()
            if row is not None:
                row.spec, row.removed = spec, removed
                row.save(update_fields=["spec", "removed"])
                return
            last = models.SessionBlock.objects.filter(session_id=session_id).aggregate(
                m=Max("position"))["m"]
            models.SessionBlock.objects.create(
                session_id=session_id, label=label, spec=spec, removed=removed,
                position=(last or 0) + 1,
            )

    def create_session_blocks(self, session_id: str, specs: Sequence[dict[str, Any]]) -> None:
        models.SessionBlock.objects.bulk_create([
            models.SessionBlock(session_id=session_id, label=spec["label"], position=i,
                                spec={k: v for k, v in spec.items() if k != "label"})
            for i, spec in enumerate(specs)
        ])

    def copy_blocks(self, agent_id: str, source: str, target: str) -> None:
        """A fork or continuation starts with the source's blocks and session contents."""
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
        self.copy_versions(agent_id, source, target)

    # ------------------------------------------------------------- values
    def get_value(self, key: str) -> str | None:
        return models.BlockValue.objects.filter(key=key).values_list("content", flat=True).first()

    def set_value(self, key: str, content: str) -> None:
        # One UPDATE for a block written before (the common case); only a first write
        # looks up the owners. Its callers hold the block (version_head), so no other
        # writer creates the row in between.
        content = strip_nul(content)
        if not models.BlockValue.objects.filter(key=key).update(content=content,
                                                                updated_at=now()):
            models.BlockValue.objects.create(key=key, content=content, **_owners(key))

    # ------------------------------------------------------------ entries
    def put_entry(self, namespace: str, key: str, content: str, description: str) -> None:
        content = strip_nul(content)
        description = strip_nul(description)
        tokens = index_tokens(f"{key} {description} {content}")
        stamp = now()
        with transaction.atomic():
            row, _ = models.Entry.objects.update_or_create(
                namespace=namespace, key=key,
                defaults={"content": content, "description": description,
                          "search_len": len(tokens), "updated_at": stamp},
                create_defaults={"content": content, "description": description,
                                 "search_len": len(tokens), "updated_at": stamp,
                                 "created_at": stamp, **_owners(namespace)},
            )
            with connection.cursor() as cur:
                current().index_entry(cur, row.seq, tokens, namespace)

    def delete_entry(self, namespace: str, key: str) -> None:
        # Its search index rows go with it (trigger on SQLite, the column on Postgres).
        models.Entry.objects.filter(namespace=namespace, key=key).delete()

    def get_entry(self, namespace: str, key: str) -> tuple[str, str] | None:
        row = models.Entry.objects.filter(namespace=namespace, key=key).values_list(
            "content", "description").first()
        return (row[0], row[1]) if row else None

    def list_entries(self, namespace: str) -> list[tuple[str, str]]:
        return list(models.Entry.objects.filter(namespace=namespace).order_by("key")
                    .values_list("key", "description"))

    def entries(self, namespace: str) -> list[tuple[str, str, str]]:
        return list(models.Entry.objects.filter(namespace=namespace).order_by("key")
                    .values_list("key", "content", "description"))

    def count_entries(self, namespace: str) -> int:
        return models.Entry.objects.filter(namespace=namespace).count()

    def search_entries(
        self, namespace: str, terms: Sequence[str], limit: int
    ) -> list[tuple[str, str, str, Any, float]]:
        d = current()
        with connection.cursor() as cur:
            rows = d.search_entries(cur, namespace, terms, limit)
        return [(r[0], r[1], r[2], d.to_datetime(r[3]), float(r[4])) for r in rows]

    # ------------------------------------------------------------- prompt
    def get_prompt(self, session_id: str) -> Prompt | None:
        row = models.SessionPrompt.objects.filter(session_id=session_id).first()
        return Prompt(row.text, dict(row.sections), row.frozen_at) if row else None

    def save_prompt(self, session_id: str, text: str, sections: dict[str, str]) -> datetime:
        stamp = now()
        models.SessionPrompt.objects.update_or_create(
            session_id=session_id, defaults={"text": text, "sections": sections, "frozen_at": stamp})
        return stamp

    # ------------------------------------------------------------- skills
    def set_skill_state(self, session_id: str, label: str, key: str, *, loaded: bool) -> None:
        stamp = now()
        fields: dict[str, Any] = {"loaded": loaded}
        fields["loaded_at" if loaded else "unloaded_at"] = stamp
        models.SkillState.objects.update_or_create(
            session_id=session_id, label=label, key=key, defaults=fields,
            create_defaults={**fields, "loaded_at": stamp},
        )

    def skill_states(self, session_id: str) -> list[tuple[str, str, bool, Any, Any]]:
        return list(models.SkillState.objects.filter(session_id=session_id).order_by("id")
                    .values_list("label", "key", "loaded", "loaded_at", "unloaded_at"))
