"""Export a whole session as one JSON-ready document, and import such a document.

The document holds the registry row, every message of the tree in insertion order
(parents before children), the compaction overlays, the session-scoped blocks with
their contents (agent-scoped blocks belong to the agent: only their declaration travels),
which skills are loaded or unloaded, and the frozen system prompt. Import keeps every id
unless it would collide (the session id and overlay ids are global) and every timestamp,
so export -> import -> export gives the same bytes. `skills` and `prompt` came later:
documents without them still import (no skill state, a prompt frozen on first use).

Everything goes through the storage Protocol: the storage restores the rows in one
bulk call, and block contents are written through the Session, so budgets, read-only
rules and search indexing apply as for any other write.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .blocks import BlockSpec
from .errors import InvalidInput, NotFound
from .limits import strip_nul
from .messages import Message, SessionInfo, prepare
from .snapshot import FrozenPrompt, SessionSnapshot, SkillState
from .tree import Compaction

if TYPE_CHECKING:
    from .manager import SessionManager
    from .session import Session

FORMAT = "arbor.session"
VERSION = 1
_REGISTRY = ("id", "name", "parent_session_id", "model", "source", "input_tokens",
             "output_tokens", "estimated_cost", "end_reason", "created_at", "updated_at")


def _holds_own_content(spec: Mapping[str, Any]) -> bool:
    return bool(spec.get("scope", "session") == "session")


def _canonical(mapping: Mapping[str, Any]) -> dict[str, Any]:
    """Sorted keys without nulls: JSON objects come back from the databases in different
    key orders (jsonb sorts them, SQLite keeps them), the document must not."""
    return {k: mapping[k] for k in sorted(mapping) if mapping[k] is not None}


# ---------------------------------------------------------------------- export
def export_session(manager: SessionManager, session_id: str) -> dict[str, Any]:
    info = manager.get(session_id)
    if info is None:
        raise NotFound(f"session {session_id} not found")
    session = manager.get_session(session_id)
    storage = manager.storage
    prompt = storage.get_prompt(session_id)
    return {
        "format": FORMAT,
        "version": VERSION,
        "session": {name: getattr(info, name) for name in _REGISTRY},
        "messages": [
            {"id": m.id, "parent_id": m.parent_id, "role": m.role, "parts": m.parts,
             "metadata": m.metadata, "created_at": m.created_at}
            for m in storage.all_messages(session_id)
        ],
        "compactions": [c.to_dict() for c in session.get_compactions()],
        "blocks": _export_blocks(session),
        "skills": [
            {"label": label, "key": key, "loaded": loaded, "loaded_at": loaded_at,
             "unloaded_at": unloaded_at}
            for label, key, loaded, loaded_at, unloaded_at in sorted(
                storage.skill_states(session_id), key=lambda s: (s[0], s[1]))
        ],
        "prompt": None if prompt is None else {
            "text": prompt.text, "sections": _canonical(prompt.sections),
            "frozen_at": prompt.frozen_at},
    }


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
                    for key, content, description in session.storage.entries(namespace)
                ]
        out.append(block)
    return out


# ---------------------------------------------------------------------- import
def _check(document: Mapping[str, Any]) -> None:
    """Refuse a document that could not be stored whole (InvalidInput), before any write."""
    parents: dict[str, str | None] = {}
    for m in document["messages"]:
        if m["id"] in parents:
            raise InvalidInput(f"message id {m['id']} appears twice")
        if m["parent_id"] is not None and m["parent_id"] not in parents:
            raise InvalidInput(f"message {m['id']} comes before its parent {m['parent_id']}")
        parents[m["id"]] = m["parent_id"]
    for c in document["compactions"]:
        if not isinstance(c["summary"], str) or not c["summary"].strip():
            raise InvalidInput("summary must be a non-empty string")
        for end in (c["from_message_id"], c["to_message_id"]):
            if end not in parents:
                raise InvalidInput(f"compaction {c['id']} names unknown message {end}")
        if c["from_message_id"] not in _ancestry(parents, c["to_message_id"]):
            raise InvalidInput(f"message {c['from_message_id']} is not on the path to "
                               f"{c['to_message_id']}")
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


def _ancestry(parents: Mapping[str, str | None], leaf: str) -> set[str]:
    """The ids on the path from the root to leaf."""
    seen: set[str] = set()
    current: str | None = leaf
    while current is not None and current not in seen:
        seen.add(current)
        current = parents.get(current)
    return seen


def _spec(block: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in block["spec"].items() if v is not None}


def _snapshot(manager: SessionManager, document: Mapping[str, Any]) -> SessionSnapshot:
    meta = document["session"]
    limit = manager.config.max_tool_output_chars
    messages: list[Message] = [
        prepare(m, keep_created_at=True, max_tool_output=limit).to_message(m["parent_id"])
        for m in document["messages"]
    ]
    prompt = document.get("prompt")
    return SessionSnapshot(
        id=meta["id"], name=meta.get("name") or "", parent_session_id=meta.get("parent_session_id"),
        model=meta.get("model"), source=meta.get("source"), end_reason=meta.get("end_reason"),
        input_tokens=meta.get("input_tokens", 0), output_tokens=meta.get("output_tokens", 0),
        estimated_cost=meta.get("estimated_cost", 0.0), created_at=meta["created_at"],
        updated_at=meta["updated_at"],
        blocks=[(b["label"], _spec(b), b["removed"]) for b in document["blocks"]],
        messages=messages,
        compactions=[Compaction(c["id"], strip_nul(c["summary"]), c["from_message_id"],
                                c["to_message_id"], c["created_at"])
                     for c in document["compactions"]],
        skills=[SkillState(s["label"], s["key"], s["loaded"], s["loaded_at"],
                           s.get("unloaded_at")) for s in document.get("skills") or ()],
        prompt=None if prompt is None else FrozenPrompt(
            prompt["text"], dict(prompt.get("sections") or {}), prompt["frozen_at"]),
    )


def import_session(manager: SessionManager, document: Mapping[str, Any]) -> SessionInfo:
    """Store the document as a new session of the manager's agent: all or nothing."""
    _check(document)
    snapshot = _snapshot(manager, document)
    with manager.storage.transaction():
        info = manager.storage.restore_session(manager.agent_id, snapshot)
        manager.announce_new(info.id)
    try:
        _import_contents(manager.bind(info.id), document["blocks"])
    except BaseException:
        manager.storage.delete_session(manager.agent_id, info.id)
        raise
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
