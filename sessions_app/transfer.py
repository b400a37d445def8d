"""Export a whole session as one JSON document, and import such a document.

The document holds the registry row, every message of the tree in insertion order
(parents before children), the compaction overlays, the session-scoped blocks with
their contents (agent-scoped blocks belong to the agent: only their declaration travels),
which skills are loaded or unloaded, and the frozen system prompt. Import keeps every id
unless it would collide (the session id and overlay ids are global) and every timestamp,
so export -> import -> export gives the same bytes. `skills` and `prompt` came later:
documents without them still import (no skill state, a prompt frozen on first use).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import orjson
from django.db import transaction

from memory_core import InvalidInput, NotFound, Session, SessionInfo, SessionManager
from memory_core.context import BlockSpec
from memory_core.messages import prepare

from . import models

FORMAT = "arbor.session"
VERSION = 1
_REGISTRY = ("id", "name", "parent_session_id", "model", "source", "input_tokens",
             "output_tokens", "estimated_cost", "end_reason", "created_at", "updated_at")


def _holds_own_content(spec: Mapping[str, Any]) -> bool:
    return spec.get("scope", "session") == "session"


# ---------------------------------------------------------------------- export
def export_session(manager: SessionManager, session_id: str) -> dict[str, Any]:
    info = manager.get(session_id)
    if info is None:
        raise NotFound(f"session {session_id} not found")
    session = manager.get_session(session_id)
    rows = (models.Message.objects.filter(session_id=session_id).order_by("seq")
            .values_list("message_id", "parent_message_id", "role", "parts", "metadata",
                         "created_at"))
    messages = [
        {"id": mid, "parent_id": parent, "role": role, "parts": orjson.loads(parts),
         "metadata": orjson.loads(metadata), "created_at": created}
        for mid, parent, role, parts, metadata, created in rows
    ]
    return {
        "format": FORMAT,
        "version": VERSION,
        "session": {name: getattr(info, name) for name in _REGISTRY},
        "messages": messages,
        "compactions": [c.to_dict() for c in session.get_compactions()],
        "blocks": _export_blocks(session),
        "skills": _export_skills(session_id),
        "prompt": _export_prompt(session_id),
    }


def _canonical(mapping: Mapping[str, Any]) -> dict[str, Any]:
    """Sorted keys without nulls: JSON objects come back from the databases in different
    key orders (jsonb sorts them, SQLite keeps them), the document must not."""
    return {k: mapping[k] for k in sorted(mapping) if mapping[k] is not None}


def _export_skills(session_id: str) -> list[dict[str, Any]]:
    rows = (models.SkillState.objects.filter(session_id=session_id).order_by("label", "key")
            .values("label", "key", "loaded", "loaded_at", "unloaded_at"))
    return list(rows)


def _export_prompt(session_id: str) -> dict[str, Any] | None:
    row = models.SessionPrompt.objects.filter(session_id=session_id).first()
    if row is None:
        return None
    return {"text": row.text, "sections": _canonical(row.sections), "frozen_at": row.frozen_at}


def _export_blocks(session: Session) -> list[dict[str, Any]]:
    out = []
    for label, spec, removed in session.storage.session_blocks(session.id):
        block: dict[str, Any] = {"label": label, "spec": _canonical(spec), "removed": removed,
                                 "content": None, "entries": []}
        if not removed and _holds_own_content(spec):
            namespace = session.context.namespace(BlockSpec.build(label, **spec))
            kind = spec.get("kind") or "writable"
            if kind == "writable":
                block["content"] = session.storage.get_value(namespace)
            elif kind == "search" or (kind == "skill" and not spec.get("files")):
                block["entries"] = [
                    {"key": key, "content": content, "description": description}
                    for key, content, description in models.Entry.objects.filter(
                        namespace=namespace).order_by("key").values_list(
                        "key", "content", "description")
                ]
        out.append(block)
    return out


# ---------------------------------------------------------------------- import
def _check(document: Mapping[str, Any]) -> None:
    """Refuse a document that could not be stored whole (InvalidInput), before any write."""
    seen: set[str] = set()
    for m in document["messages"]:
        if m["id"] in seen:
            raise InvalidInput(f"message id {m['id']} appears twice")
        if m["parent_id"] is not None and m["parent_id"] not in seen:
            raise InvalidInput(f"message {m['id']} comes before its parent {m['parent_id']}")
        seen.add(m["id"])
    for c in document["compactions"]:
        for end in (c["from_message_id"], c["to_message_id"]):
            if end not in seen:
                raise InvalidInput(f"compaction {c['id']} names unknown message {end}")
    labels = [b["label"] for b in document["blocks"]]
    if len(labels) != len(set(labels)):
        raise InvalidInput("block labels must be unique")
    for b in document["blocks"]:
        BlockSpec.build(b["label"], **_spec(b))
    skills = [(s["label"], s["key"]) for s in document.get("skills") or ()]
    if len(skills) != len(set(skills)):
        raise InvalidInput("each skill may appear once in skills")
    for label, key in skills:
        if label not in labels:
            raise InvalidInput(f"skill {key!r} names unknown block {label!r}")


def _spec(block: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in block["spec"].items() if v is not None}


def _chains(messages: Sequence[Mapping[str, Any]]) -> list[tuple[str | None, list[Any]]]:
    """Runs of messages each the child of the one before: (parent of the first, run)."""
    chains: list[tuple[str | None, list[Any]]] = []
    previous = None
    for m in messages:
        if chains and m["parent_id"] is not None and m["parent_id"] == previous:
            chains[-1][1].append(m)
        else:
            chains.append((m["parent_id"], [m]))
        previous = m["id"]
    return chains


def import_session(manager: SessionManager, document: Mapping[str, Any]) -> SessionInfo:
    """Store the document as a new session of the manager's agent. Atomic."""
    _check(document)
    meta = document["session"]
    with transaction.atomic():
        session_id = meta["id"]
        if models.Session.objects.filter(id=session_id).exists():
            session_id = models.uuid_str()
        parent = meta.get("parent_session_id")
        if parent and not models.Session.objects.filter(id=parent,
                                                        agent_id=manager.agent_id).exists():
            parent = None
        models.Session.objects.create(
            id=session_id, agent_id=manager.agent_id, name=meta.get("name") or "",
            parent_session_id=parent, model=meta.get("model"), source=meta.get("source"),
            created_at=meta["created_at"], updated_at=meta["updated_at"],
        )
        models.SessionBlock.objects.bulk_create([
            models.SessionBlock(session_id=session_id, label=b["label"], position=i,
                                spec=_spec(b), removed=b["removed"])
            for i, b in enumerate(document["blocks"])
        ])
        session = manager.get_session(session_id)
        _import_contents(session, document["blocks"])
        _import_messages(manager, session, document["messages"])
        _import_compactions(session, document["compactions"])
        _import_skills(session_id, document.get("skills") or ())
        _import_prompt(session_id, document.get("prompt"))
        # Appends bumped the row; the document's counters and times win.
        models.Session.objects.filter(id=session_id).update(
            input_tokens=meta.get("input_tokens", 0), output_tokens=meta.get("output_tokens", 0),
            estimated_cost=meta.get("estimated_cost", 0.0), end_reason=meta.get("end_reason"),
            updated_at=meta["updated_at"],
        )
    info = manager.get(session_id)
    assert info is not None
    return info


def _import_contents(session: Session, blocks: Sequence[Mapping[str, Any]]) -> None:
    # Through the engine, so budgets, read-only rules and search indexing all apply.
    for b in blocks:
        if b["removed"] or not _holds_own_content(_spec(b)):
            continue
        if b.get("content") is not None:
            session.replace_context_block(b["label"], b["content"])
        for e in b.get("entries") or ():
            session.set_context_entry(b["label"], e["key"], e["content"],
                                      e.get("description") or None)


def _import_messages(
    manager: SessionManager, session: Session, messages: Sequence[Mapping[str, Any]]
) -> None:
    limit = manager.config.max_tool_output_chars
    for parent_id, chain in _chains(messages):
        prepared = [prepare(m, keep_created_at=True, max_tool_output=limit) for m in chain]
        session.storage.append_chain(session.id, prepared, parent_id=parent_id)


def _import_skills(session_id: str, skills: Sequence[Mapping[str, Any]]) -> None:
    models.SkillState.objects.bulk_create([
        models.SkillState(session_id=session_id, label=s["label"], key=s["key"],
                          loaded=s["loaded"], loaded_at=s["loaded_at"],
                          unloaded_at=s.get("unloaded_at"))
        for s in skills
    ])


def _import_prompt(session_id: str, prompt: Mapping[str, Any] | None) -> None:
    # The exact text the model saw, so a provider's prompt cache stays warm after a move.
    if prompt is not None:
        models.SessionPrompt.objects.update_or_create(session_id=session_id, defaults={
            "text": prompt["text"], "sections": dict(prompt.get("sections") or {}),
            "frozen_at": prompt["frozen_at"]})


def _import_compactions(session: Session, compactions: Sequence[Mapping[str, Any]]) -> None:
    for c in compactions:
        overlay = session.add_compaction(c["summary"], c["from_message_id"], c["to_message_id"])
        fields: dict[str, Any] = {"created_at": c["created_at"]}
        if not models.Compaction.objects.filter(overlay_id=c["id"]).exists():
            fields["overlay_id"] = c["id"]
        models.Compaction.objects.filter(overlay_id=overlay.id).update(**fields)
