"""Pure tree logic: compaction overlays on a path, rows for tree views."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from .messages import Mappable, Message

SUMMARY_PREFIX = "[Summary of earlier conversation]\n"
PREVIEW_CHARS = 120


@dataclass(frozen=True, slots=True)
class Compaction(Mappable):
    """An overlay: the path from `from_message_id` to `to_message_id` reads as a summary."""

    id: str
    summary: str
    from_message_id: str
    to_message_id: str
    created_at: datetime

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "summary": self.summary,
            "from_message_id": self.from_message_id,
            "to_message_id": self.to_message_id,
            "created_at": self.created_at.isoformat(),
        }


def summary_message(overlay: Compaction, parent_id: str | None) -> Message:
    text = SUMMARY_PREFIX + overlay.summary
    return Message(
        id=f"compaction-{overlay.id}",
        parent_id=parent_id,
        role="system",
        parts=[{"type": "text", "text": text}],
        metadata={
            "compaction": {
                "id": overlay.id,
                "from_message_id": overlay.from_message_id,
                "to_message_id": overlay.to_message_id,
            }
        },
        created_at=overlay.created_at,
    )


def apply_overlays(path: Sequence[Message], overlays: Sequence[Compaction]) -> list[Message]:
    """The path as read, with overlays applied.

    `overlays` come oldest first (created_at, then insertion order). An overlay applies
    only when both endpoints are on this path, `from` not after `to`. Newer overlays win:
    an older one that overlaps a chosen newer one is hidden.
    """
    if not overlays or not path:
        return list(path)
    position = {m.id: i for i, m in enumerate(path)}
    chosen: list[tuple[int, int, Compaction]] = []
    for overlay in reversed(overlays):
        start = position.get(overlay.from_message_id)
        end = position.get(overlay.to_message_id)
        if start is None or end is None or start > end:
            continue
        if any(start <= c_end and c_start <= end for c_start, c_end, _ in chosen):
            continue
        chosen.append((start, end, overlay))
    if not chosen:
        return list(path)
    chosen.sort(key=lambda c: c[0])
    out: list[Message] = []
    cursor = 0
    for start, end, overlay in chosen:
        out.extend(path[cursor:start])
        parent = path[start].parent_id
        out.append(summary_message(overlay, parent))
        cursor = end + 1
    out.extend(path[cursor:])
    return out


@dataclass(frozen=True, slots=True)
class TreeRow(Mappable):
    id: str
    parent_id: str | None
    role: str
    preview: str
    created_at: datetime
    child_count: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "parent_id": self.parent_id,
            "role": self.role,
            "preview": self.preview,
            "created_at": self.created_at.isoformat(),
            "child_count": self.child_count,
        }


@dataclass(frozen=True, slots=True)
class SiblingInfo(Mappable):
    """Where a message stands among its siblings (its parent's children, or the session's
    roots), in creation order: `index` is 1-based, previous/next name the neighbours."""

    index: int
    count: int
    previous_id: str | None
    next_id: str | None

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.index, "count": self.count, "previous_id": self.previous_id,
                "next_id": self.next_id}


@dataclass(frozen=True, slots=True)
class PathPage(Mappable):
    """A page of the path ending at `leaf_id`: raw messages (no overlays), oldest first.
    `has_more`: older messages exist above the page. `siblings`: message id -> its
    SiblingInfo, for every message on the page."""

    messages: list[Message]
    has_more: bool
    leaf_id: str | None
    siblings: dict[str, SiblingInfo]

    def to_dict(self) -> dict[str, Any]:
        return {"messages": [m.to_dict() for m in self.messages], "has_more": self.has_more,
                "leaf_id": self.leaf_id,
                "siblings": {k: v.to_dict() for k, v in self.siblings.items()}}


def tree_rows(rows: Sequence[tuple[str, str | None, str, str, datetime]]) -> list[TreeRow]:
    """(id, parent_id, role, text, created_at) in insertion order -> tree rows."""
    children = Counter(parent for _, parent, _, _, _ in rows if parent is not None)
    return [
        TreeRow(mid, parent, role, preview(text), created, children.get(mid, 0))
        for mid, parent, role, text, created in rows
    ]


def preview(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= PREVIEW_CHARS else flat[: PREVIEW_CHARS - 1] + "…"


def depth_order(rows: Sequence[TreeRow]) -> list[tuple[TreeRow, int]]:
    """Rows in depth-first order (children oldest first) with their depth, for displays."""
    by_parent: dict[str | None, list[TreeRow]] = {}
    for row in rows:
        by_parent.setdefault(row.parent_id, []).append(row)
    out: list[tuple[TreeRow, int]] = []
    stack: list[tuple[TreeRow, int]] = [(r, 0) for r in reversed(by_parent.get(None, []))]
    while stack:
        row, depth = stack.pop()
        out.append((row, depth))
        stack.extend((c, depth + 1) for c in reversed(by_parent.get(row.id, [])))
    return out


def hide_unloaded_skills(
    path: Sequence[Message], unloaded: dict[tuple[str, str], datetime]
) -> list[Message]:
    """Show load_context results of skills unloaded since as `[skill unloaded: <key>]`.

    A read-time view: stored messages keep the skill text. Both tool forms are handled:
    a `tool-load_context` part with input and output, and split call/result parts.
    """
    if not unloaded:
        return list(path)
    calls: dict[str, tuple[str, str]] = {}
    out: list[Message] = []
    for message in path:
        new_parts = None
        for i, part in enumerate(message.parts):
            kind = part.get("type")
            target = None
            if kind in ("tool-load_context", "dynamic-tool", "tool-call"):
                if kind != "tool-load_context" and part.get("toolName") != "load_context":
                    continue
                args = part.get("input")
                if not isinstance(args, dict):
                    continue
                pair = (str(args.get("label")), str(args.get("key")))
                if kind == "tool-call":
                    calls[str(part.get("toolCallId"))] = pair
                    continue
                target = pair if "output" in part else None
            elif kind == "tool-result":
                target = calls.get(str(part.get("toolCallId")))
            when = unloaded.get(target) if target else None
            if target is None or when is None or message.created_at > when:
                continue
            if new_parts is None:
                new_parts = [dict(p) for p in message.parts]
            new_parts[i]["output"] = f"[skill unloaded: {target[1]}]"
        out.append(message if new_parts is None else message._replace(parts=new_parts))
    return out


def leaf_paths(messages: Sequence[Message]) -> list[list[Message]]:
    """Every leaf's root-to-leaf path, leaves in the order given (insertion order: the
    last is the latest leaf). `messages`: a whole session, parents before children."""
    by_id = {m.id: m for m in messages}
    parents = {m.parent_id for m in messages if m.parent_id is not None}
    out: list[list[Message]] = []
    for message in messages:
        if message.id in parents:
            continue
        path: list[Message] = []
        node: Message | None = message
        while node is not None:
            path.append(node)
            node = by_id.get(node.parent_id) if node.parent_id is not None else None
        path.reverse()
        out.append(path)
    return out
