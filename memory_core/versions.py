"""Block versions: every write to a context block kept, with who made it and from which
message and branch (the audit trail of an agent's memory).

A version holds the block's value after the write: a writable block's text, or a keyed
block's entries (each with the source of its last write) and, for skill blocks, which
skills were loaded. `Writer` says who writes: the door sets it (the JSON API, the pages,
MCP, import) and a memory tool call is the model's, with the message that carried it.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from .messages import Mappable

Actor = Literal["model", "api", "ui", "mcp", "import", "system"]
ACTORS: tuple[Actor, ...] = ("model", "api", "ui", "mcp", "import", "system")
ACTIONS = ("replace", "append", "set_entry", "load", "unload", "restore", "import")
DEFAULT_KEEP = 1000  # versions kept per block (ARBOR_BLOCK_VERSIONS)
MAX_PAGE = 100


@dataclass(frozen=True, slots=True)
class Writer:
    """Who is writing and from where; `leaf_id` None: the session's latest leaf."""

    actor: Actor = "system"
    actor_id: str | None = None
    message_id: str | None = None
    leaf_id: str | None = None


@dataclass(frozen=True, slots=True)
class BlockVersion(Mappable):
    """One kept state of a block. `content` for text blocks; `entries` ([{key, content,
    description, source}], by key) for keyed ones, `loaded` (keys) for skill blocks."""

    label: str
    number: int
    action: str
    content: str | None = None
    entries: list[dict[str, Any]] | None = None
    loaded: list[str] | None = None
    key: str | None = None  # the entry or skill the action touched
    actor: str = "system"
    actor_id: str | None = None
    message_id: str | None = None
    leaf_id: str | None = None
    session_id: str | None = None  # the session the write came through
    source_deleted: bool = False  # the writing message was deleted since
    restored_from: int | None = None
    created_at: datetime | None = None

    @property
    def text(self) -> str:
        """The value as text, for diffs."""
        return version_text(self.content, self.entries, self.loaded)

    def source(self) -> dict[str, Any]:
        return {"message_id": self.message_id, "leaf_id": self.leaf_id,
                "session_id": self.session_id, "deleted": self.source_deleted}

    def to_dict(self) -> dict[str, Any]:
        return {
            "label": self.label, "number": self.number, "action": self.action,
            "key": self.key, "content": self.content, "entries": self.entries,
            "loaded": self.loaded, "actor": self.actor, "actor_id": self.actor_id,
            "message_id": self.message_id, "leaf_id": self.leaf_id, "source": self.source(),
            "restored_from": self.restored_from, "created_at": self.created_at,
        }


@dataclass(frozen=True, slots=True)
class VersionPage(Mappable):
    items: list[BlockVersion] = field(default_factory=list)
    next_cursor: int | None = None  # pass as `before` for the older page

    def to_dict(self) -> dict[str, Any]:
        return {"items": [v.to_dict() for v in self.items], "next_cursor": self.next_cursor}


def version_text(content: str | None, entries: Sequence[Mapping[str, Any]] | None,
                 loaded: Sequence[str] | None) -> str:
    if entries is None and loaded is None:
        return content or ""
    lines = []
    for e in entries or ():
        head = f"[{e['key']}]" + (f" {e['description']}" if e.get("description") else "")
        lines += [head, *(f"  {line}" for line in str(e.get("content", "")).splitlines())]
    if loaded is not None:
        lines.append("loaded: " + (", ".join(loaded) if loaded else "(none)"))
    return "\n".join(lines)


def same_value(a: BlockVersion, b: BlockVersion) -> bool:
    """Whether two versions hold the same value (entries' sources aside)."""
    return (a.content == b.content and a.loaded == b.loaded
            and _bare(a.entries) == _bare(b.entries))


def _bare(entries: list[dict[str, Any]] | None) -> list[tuple[Any, ...]] | None:
    if entries is None:
        return None
    return [(e["key"], e.get("content"), e.get("description") or "") for e in entries]


def unified_diff(old: BlockVersion | None, new: BlockVersion) -> str:
    """The unified diff of the values' text, from `old` (None: empty) to `new`."""
    before = old.text if old is not None else ""
    name = f"{new.label} v{old.number}" if old is not None else f"{new.label} (empty)"
    lines = difflib.unified_diff(before.splitlines(), new.text.splitlines(), name,
                                 f"{new.label} v{new.number}", lineterm="")
    return "\n".join(lines) + "\n" if before != new.text else ""


def shown(kind: str, version: BlockVersion) -> str:
    """The block's content as get_context_block reports it, for this version."""
    if kind == "search":
        return f"{len(version.entries or [])} entries indexed."
    if kind == "skill":
        return "\n".join(f"- {e['key']}: {e['description']}" if e.get("description")
                         else f"- {e['key']}" for e in version.entries or [])
    return version.content or ""
