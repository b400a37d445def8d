"""Block version rows (memory_core/versions.py): the head read before a write, the insert
and its pruning, pages, one version, the versions at a moment, and bulk restores."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import orjson
from django.db import connection
from django.db.models import OuterRef, Subquery

from memory_core.messages import now
from memory_core.versions import BlockVersion

from .. import models
from . import sql

LEAF_ID = f"SELECT message_id FROM arbor_message WHERE seq = ({sql.LATEST_LEAF})"
# The block's newest version and the session's latest leaf, in one statement.
HEAD = f"""
    SELECT ({LEAF_ID}), v.number, v.action, v.content, v.entries, v.loaded
    FROM (SELECT 1 AS one) o LEFT JOIN (
        SELECT number, action, content, entries, loaded FROM arbor_block_version
        WHERE key = %s ORDER BY number DESC LIMIT 1) v ON 1 = 1"""


def _json(value: Any) -> Any:
    return None if value is None else orjson.loads(value)


def _label(namespace: str) -> str:
    return namespace.rsplit(":", 1)[1]  # labels hold no ':'


def _owner_session(namespace: str) -> str | None:
    scope, owner, _ = namespace.split(":", 2)
    return owner if scope == "session" else None


def to_version(row: models.BlockVersion) -> BlockVersion:
    return BlockVersion(
        label=_label(row.key), number=row.number, action=row.action, content=row.content,
        entries=row.entries, loaded=row.loaded, key=row.entry_key, actor=row.actor,
        actor_id=row.actor_id, message_id=row.message_id, leaf_id=row.leaf_id,
        session_id=row.source_session_id, source_deleted=row.source_deleted,
        restored_from=row.restored_from, created_at=row.created_at)


def _row(namespace: str, v: BlockVersion, *, agent_id: str) -> models.BlockVersion:
    return models.BlockVersion(
        key=namespace, number=v.number, agent_id=agent_id, session_id=_owner_session(namespace),
        action=v.action, entry_key=v.key, content=v.content, entries=v.entries,
        loaded=v.loaded, actor=v.actor, actor_id=v.actor_id, message_id=v.message_id,
        leaf_id=v.leaf_id, source_session_id=v.session_id, source_deleted=v.source_deleted,
        restored_from=v.restored_from, created_at=v.created_at)


class VersionRows:
    def version_head(
        self, namespace: str, session_id: str
    ) -> tuple[BlockVersion | None, str | None]:
        if connection.features.has_select_for_update:
            # Writers of one block take the same row (the session, or the agent for an
            # agent-wide block) before reading its newest number; SQLite's IMMEDIATE
            # transaction already holds the database.
            owner = _owner_session(namespace)
            rows: Any = (models.Session.objects.filter(id=owner) if owner is not None
                         else models.Agent.objects.filter(id=namespace.split(":", 2)[1]))
            list(rows.select_for_update().values_list("id"))
        with connection.cursor() as cur:
            cur.execute(HEAD, [session_id, namespace])
            leaf, number, action, content, entries, loaded = cur.fetchone()
        if number is None:
            return None, leaf
        return BlockVersion(_label(namespace), number, action, content, _json(entries),
                            _json(loaded)), leaf

    def add_version(
        self, namespace: str, version: BlockVersion, *, agent_id: str, keep: int
    ) -> BlockVersion:
        version = replace(version, created_at=now())
        _row(namespace, version, agent_id=agent_id).save(force_insert=True)
        if version.number > keep:  # only then is there anything to prune
            models.BlockVersion.objects.filter(
                key=namespace, number__lte=version.number - keep).delete()
        return version

    def block_versions(
        self, namespace: str, *, limit: int, before: int | None
    ) -> list[BlockVersion]:
        rows = models.BlockVersion.objects.filter(key=namespace)
        if before is not None:
            rows = rows.filter(number__lt=before)
        return [to_version(r) for r in rows.order_by("-number")[:limit]]

    def get_version(self, namespace: str, number: int) -> BlockVersion | None:
        row = models.BlockVersion.objects.filter(key=namespace, number=number).first()
        return to_version(row) if row is not None else None

    def versions_at(
        self, namespaces: Sequence[str], at: Any
    ) -> dict[str, tuple[BlockVersion | None, bool]]:
        newest = (models.BlockVersion.objects.filter(key=OuterRef("key"), created_at__lte=at)
                  .order_by("-number").values("number")[:1])
        found = {r.key: to_version(r) for r in models.BlockVersion.objects.filter(
            key__in=list(namespaces), number=Subquery(newest))}
        known = set(models.BlockVersion.objects.filter(key__in=list(namespaces))
                    .values_list("key", flat=True).distinct())
        return {ns: (found.get(ns), ns in known) for ns in namespaces}

    def restore_versions(
        self, namespace: str, versions: Sequence[BlockVersion], *, agent_id: str
    ) -> None:
        models.BlockVersion.objects.bulk_create(
            [_row(namespace, v, agent_id=agent_id) for v in versions], batch_size=500)

    def mark_deleted_sources(self, session_id: str, message_ids: Sequence[str] | None) -> None:
        """Versions written from these messages (None: every version the session wrote,
        its messages all gone) keep their source ids, marked deleted."""
        rows = models.BlockVersion.objects.filter(source_session_id=session_id,
                                                  source_deleted=False)
        if message_ids is not None:
            rows = rows.filter(message_id__in=list(message_ids))
        rows.update(source_deleted=True)

    def copy_versions(self, agent_id: str, source: str, target: str) -> None:
        """A fork or continuation keeps its blocks' history (their sources stay those of
        the session they were written in)."""
        rows = [_row(f"session:{target}:{_label(r.key)}", to_version(r), agent_id=agent_id)
                for r in models.BlockVersion.objects.filter(session_id=source)]
        models.BlockVersion.objects.bulk_create(rows, batch_size=500)
