"""Export a whole session as one JSON-ready document, and import such a document.

The document holds the registry row, every message of the tree in insertion order
(parents before children), the compaction overlays, the session-scoped blocks with
their contents (agent-scoped blocks belong to the agent: only their declaration travels),
which skills are loaded or unloaded, the frozen system prompt, and each session-scoped
block's kept versions (versions.py). Import keeps every id
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
from .tokens import estimate_tokens
from .tree import Compaction
from .versions import ACTIONS, ACTORS, BlockVersion

if TYPE_CHECKING:
    from .manager import SessionManager
    from .session import Session

FORMAT = "arbor.session"
VERSION = 1
ALL_VERSIONS = 2**31 - 1  # an export holds every kept version
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
                                 "content": None, "entries": [], "versions": []}
        if not removed and _holds_own_content(spec):
            namespace = session.context.namespace(BlockSpec.build(label, **spec))
            block["versions"] = [
                _version_out(v, session.id) for v in reversed(session.storage.block_versions(
                    namespace, limit=ALL_VERSIONS, before=None))]
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


def _version_out(v: BlockVersion, session_id: str) -> dict[str, Any]:
    """A version as the document holds it: its source session only when another (a
    fork's inherited history), since an import may give the session a new id."""
    return {
        "number": v.number, "action": v.action, "key": v.key, "content": v.content,
        "entries": None if v.entries is None else [
            {"key": e["key"], "content": e["content"], "description": e.get("description") or "",
             "source": None if not e.get("source") else {
                 "message_id": e["source"].get("message_id"),
                 "leaf_id": e["source"].get("leaf_id")}}
            for e in v.entries],
        "loaded": v.loaded, "actor": v.actor, "actor_id": v.actor_id,
        "message_id": v.message_id, "leaf_id": v.leaf_id,
        "source_session_id": None if v.session_id == session_id else v.session_id,
        "source_deleted": v.source_deleted, "restored_from": v.restored_from,
        "created_at": v.created_at,
    }


def _version_in(label: str, data: Mapping[str, Any], session_id: str) -> BlockVersion:
    return BlockVersion(
        label=label, number=data["number"], action=data["action"], content=data.get("content"),
        entries=None if data.get("entries") is None else [
            {"key": e["key"], "content": strip_nul(e["content"]),
             "description": strip_nul(e.get("description") or ""), "source": e.get("source")}
            for e in data["entries"]],
        loaded=data.get("loaded"), key=data.get("key"), actor=data["actor"],
        actor_id=data.get("actor_id"), message_id=data.get("message_id"),
        leaf_id=data.get("leaf_id"), session_id=data.get("source_session_id") or session_id,
        source_deleted=bool(data.get("source_deleted")), restored_from=data.get("restored_from"),
        created_at=data["created_at"])


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
        _check_versions(b)
    skills = [(s["label"], s["key"]) for s in document.get("skills") or ()]
    if len(skills) != len(set(skills)):
        raise InvalidInput("each skill may appear once in skills")
    for label, key in skills:
        if label not in labels:
            raise InvalidInput(f"skill {key!r} names unknown block {label!r}")


def _check_versions(block: Mapping[str, Any]) -> None:
    """Numbers rise, actors and actions are known, each value fits the block's limits."""
    versions = block.get("versions") or []
    numbers = [v["number"] for v in versions]
    if numbers != sorted(set(numbers)):
        raise InvalidInput(f"block {block['label']!r}: version numbers must rise")
    limit = _spec(block).get("max_tokens")
    for v in versions:
        if v["actor"] not in ACTORS or v["action"] not in ACTIONS:
            raise InvalidInput(f"block {block['label']!r} version {v['number']}: unknown "
                               "actor or action")
        values = [v.get("content") or ""] + [e["content"] for e in v.get("entries") or ()]
        if limit is not None and any(estimate_tokens(text) > limit for text in values):
            raise InvalidInput(f"block {block['label']!r} version {v['number']} is over "
                               f"the block's {limit} tokens")


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
    news = [prepare(m, keep_created_at=True, max_tool_output=limit)
            for m in document["messages"]]
    messages: list[Message] = [n.to_message(m["parent_id"])
                               for n, m in zip(news, document["messages"], strict=True)]
    prompt = document.get("prompt")
    return SessionSnapshot(
        id=meta["id"], name=meta.get("name") or "", parent_session_id=meta.get("parent_session_id"),
        model=meta.get("model"), source=meta.get("source"), end_reason=meta.get("end_reason"),
        input_tokens=meta.get("input_tokens", 0), output_tokens=meta.get("output_tokens", 0),
        estimated_cost=meta.get("estimated_cost", 0.0), created_at=meta["created_at"],
        updated_at=meta["updated_at"],
        blocks=[(b["label"], _spec(b), b["removed"]) for b in document["blocks"]],
        messages=messages, encoded=[(n.parts_json, n.metadata_json, n.text) for n in news],
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
    # Through the engine, so budgets, read-only rules and search indexing all apply. A
    # document with versions brings them as they were (the writes make none); an older
    # one's contents become versions written by `import`.
    for b in blocks:
        if b["removed"] or not _holds_own_content(_spec(b)):
            continue
        versions = b.get("versions")
        with session.acting("import"), session.context.recorded(versions is None):
            if b.get("content") is not None:
                session.replace_context_block(b["label"], b["content"])
            for e in b.get("entries") or ():
                session.set_context_entry(b["label"], e["key"], e["content"],
                                          e.get("description") or None)
        if versions:
            namespace = session.context.namespace(BlockSpec.build(b["label"], **_spec(b)))
            session.storage.restore_versions(
                namespace, [_version_in(b["label"], v, session.id) for v in versions],
                agent_id=session.agent_id)
