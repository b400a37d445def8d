"""The neutral shape every format's parser produces, and the one place that turns it into
messages ready to store: links checked, skipped nodes bridged, the current leaf last.

A parser reads its format into `Conversation`s of `Node`s that keep the source's own ids
and parent links; `plan()` does what is common to all formats. Everything here walks the
tree with explicit stacks and queues: a chain of thousands of messages is ordinary, so no
recursion may depend on its depth.
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from ..errors import InvalidInput
from ..limits import MAX_NAME, is_id, strip_nul
from ..messages import new_id

# How deep a chain may be: far past the longest real conversations (a few thousand
# messages), low enough that a hostile file cannot make one path read unbounded.
MAX_IMPORT_DEPTH = 100_000


class BadExport(InvalidInput):
    """A file that cannot be imported whole; detail names the conversation and the field."""

    code = "invalid_export"

    def __init__(self, detail: str, *, conversation: str | None = None,
                 field: str | None = None) -> None:
        where = f"conversation {conversation}: " if conversation else ""
        super().__init__(where + detail, field=field)
        self.conversation = conversation

    @property
    def located(self) -> dict[str, str | None]:
        """Where in the file, for an error answer beside its detail."""
        return {"conversation": self.conversation, "field": self.field}


@dataclass(slots=True)
class Node:
    """One entry of the source tree. role None: not a message (its children are
    re-attached to the nearest kept ancestor)."""

    id: str
    parent: str | None
    role: str | None
    parts: list[dict[str, Any]] = field(default_factory=list)
    created_at: datetime | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    where: str = ""  # how the source locates it, for errors: mapping["a1"], messages[3]


@dataclass(slots=True)
class Conversation:
    format: str
    id: str
    title: str
    nodes: list[Node]
    current: str | None = None  # the source id of the node the person last saw
    created_at: datetime | None = None
    updated_at: datetime | None = None
    model: str | None = None
    parent_field: str = "parent"  # the source's name for a parent link, for errors
    current_field: str = "current"


@dataclass(frozen=True, slots=True)
class Planned:
    """A conversation as messages (dicts of Message's shape, parents first, the current
    leaf last) with its registry fields."""

    conversation: Conversation
    name: str
    messages: list[dict[str, Any]]
    created_at: datetime
    updated_at: datetime


def to_time(value: Any, *, conversation: str, where: str) -> datetime | None:
    """A source timestamp (ISO 8601 text, or Unix seconds or milliseconds) in UTC."""
    if value is None or value == "":
        return None
    try:
        if isinstance(value, int | float) and not isinstance(value, bool):
            seconds = value / 1000 if value > 1e11 else value  # ms in JavaScript exports
            return datetime.fromtimestamp(seconds, UTC)
        if isinstance(value, str):
            stamp = datetime.fromisoformat(value.replace("Z", "+00:00"))
            return stamp.replace(tzinfo=UTC) if stamp.tzinfo is None else stamp.astimezone(UTC)
    except (ValueError, OverflowError, OSError):
        pass  # out of range or not a date: said below
    raise BadExport(f"{where} must be a timestamp (ISO 8601 text or Unix seconds), "
                    f"got {_shown(value)}", conversation=conversation, field=where)


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def expect(value: Any, kind: type | tuple[type, ...], what: str, *, conversation: str,
           where: str, optional: bool = False) -> Any:
    """value if it has the JSON type kind (None too when optional), else BadExport."""
    if value is None and optional:
        return None
    if isinstance(value, kind) and not (isinstance(value, bool) and kind in (int, float)):
        return value
    raise BadExport(f"{where} must be {what}, got {_shown(value)}", conversation=conversation,
                    field=where)


def text_part(block: dict[str, Any], *, conversation: str,
              where: str) -> dict[str, Any] | None:
    """A `text` or `thinking` content block (Claude's and Pi's share the shape) as an AI SDK
    text or reasoning part; None for any other type."""
    kind = block.get("type")
    if kind == "text":
        return {"type": "text", "text": expect(block.get("text"), str, "a string",
                                               conversation=conversation, where=f"{where}.text")}
    if kind == "thinking":
        return {"type": "reasoning", "text": str(block.get("thinking") or "")}
    return None


def one_of(value: Any, choices: Mapping[str, str], *, conversation: str, where: str) -> str:
    """choices[value], else BadExport listing the values the format allows."""
    if isinstance(value, str) and value in choices:
        return choices[value]
    raise BadExport(f"{where} must be one of {', '.join(choices)}, got {_shown(value)}",
                    conversation=conversation, field=where)


def title_of(value: str | None, fallback: str) -> str:
    name = " ".join(strip_nul(value or "").split())
    return (name or fallback)[:MAX_NAME]


# -------------------------------------------------------------------------- plan
def plan(conv: Conversation) -> Planned:
    """Check the links, drop skipped nodes, order parents first with the current leaf last.

    Raises BadExport: a duplicate id, a parent link to a missing node, a cycle, a chain
    deeper than MAX_IMPORT_DEPTH, a current node that is not in the tree.
    """
    by_id = _index(conv)
    order = _walk(conv, by_id)
    kept_parent: dict[str, str | None] = {}
    for node in order:  # parents come first, so a parent's answer is known
        up = node.parent
        kept_parent[node.id] = up if up is None or by_id[up].role is not None else kept_parent[up]
    kept = [n for n in order if n.role is not None]
    ids = _arbor_ids(kept)
    children: dict[str | None, list[Node]] = defaultdict(list)
    for node in kept:
        children[kept_parent[node.id]].append(node)
    for siblings in children.values():
        if len(siblings) > 1 and all(n.created_at is not None for n in siblings):
            siblings.sort(key=lambda n: n.created_at)  # type: ignore[arg-type,return-value]
    current = _current(conv, by_id, children, kept)
    messages: list[dict[str, Any]] = []
    last: dict[str, Any] | None = None
    stamps: dict[str, datetime] = {}
    start = conv.created_at or _first_time(kept) or datetime.now(UTC)
    stack = list(reversed(children[None]))
    while stack:  # pre-order, siblings oldest first: the switchers read as the source did
        node = stack.pop()
        up = kept_parent[node.id]
        stamp = node.created_at or (stamps[up] if up is not None else start)
        stamps[node.id] = stamp
        message = {
            "id": ids[node.id], "parent_id": None if up is None else ids[up],
            "role": node.role, "parts": node.parts or [{"type": "text", "text": ""}],
            "metadata": {**node.metadata, "source": {
                "format": conv.format, "conversation_id": conv.id, "message_id": node.id}},
            "created_at": stamp,
        }
        if node.id == current:
            last = message  # a leaf: storing it last makes it the latest leaf
        else:
            messages.append(message)
        stack.extend(reversed(children[node.id]))
    if last is not None:
        messages.append(last)
    updated = conv.updated_at or max(stamps.values(), default=start)
    return Planned(conv, title_of(conv.title, f"{conv.format} conversation"), messages,
                   start, max(updated, start))


def _index(conv: Conversation) -> dict[str, Node]:
    by_id: dict[str, Node] = {}
    for node in conv.nodes:
        if node.id in by_id:
            raise BadExport(f"{node.where}: id {node.id!r} appears twice",
                            conversation=conv.id, field=node.where)
        by_id[node.id] = node
    for node in conv.nodes:
        if node.parent is not None and node.parent not in by_id:
            where = f"{node.where}.{conv.parent_field}"
            raise BadExport(f"{where} names {node.parent!r}, which is not in the "
                            "conversation", conversation=conv.id, field=where)
    return by_id


def _walk(conv: Conversation, by_id: Mapping[str, Node]) -> list[Node]:
    """Breadth-first from the roots: every node once, parents first. A node left over
    sits on (or under) a cycle of parent links."""
    children: dict[str, list[Node]] = defaultdict(list)
    roots = []
    for node in conv.nodes:
        if node.parent is None:
            roots.append(node)
        else:
            children[node.parent].append(node)
    depth: dict[str, int] = {n.id: 1 for n in roots}
    order: list[Node] = []
    queue = deque(roots)
    while queue:
        node = queue.popleft()
        order.append(node)
        for child in children[node.id]:
            depth[child.id] = depth[node.id] + 1
            if depth[child.id] > MAX_IMPORT_DEPTH:
                raise BadExport(f"{child.where}: the chain is deeper than the limit of "
                                f"{MAX_IMPORT_DEPTH} messages", conversation=conv.id,
                                field=child.where)
            queue.append(child)
    if len(order) < len(conv.nodes):
        node = next(n for n in conv.nodes if n.id not in depth)
        seen: set[str] = set()
        while node.id not in seen:  # walk up until the loop closes
            seen.add(node.id)
            node = by_id[node.parent]  # type: ignore[index]  # links were checked
        where = f"{node.where}.{conv.parent_field}"
        raise BadExport(f"{where}: parent links form a cycle through {node.id!r}",
                        conversation=conv.id, field=where)
    return order


def _current(conv: Conversation, by_id: Mapping[str, Node],
             children: Mapping[str | None, list[Node]], kept: list[Node]) -> str | None:
    """The kept leaf the person last saw: the current node or its nearest kept ancestor;
    when that has children, the newest leaf under it."""
    if not kept:
        return None
    current = conv.current
    if current is not None and current not in by_id:
        raise BadExport(f"{conv.current_field} names {current!r}, which is not in the "
                        "conversation", conversation=conv.id, field=conv.current_field)
    if current is None:
        current = kept[-1].id
    while current is not None and by_id[current].role is None:
        current = by_id[current].parent
    if current is None:  # only skipped nodes above: the newest root's newest leaf
        current = children[None][-1].id
    while children.get(current):
        current = children[current][-1].id
    return current


def _first_time(nodes: list[Node]) -> datetime | None:
    return min((n.created_at for n in nodes if n.created_at is not None), default=None)


def _arbor_ids(kept: list[Node]) -> dict[str, str]:
    """Source ids are kept when Arbor can hold them (they are unique in the conversation,
    and the session is new); others get a fresh id, the source id stays in metadata."""
    return {n.id: n.id if is_id(n.id) and n.id.strip() == n.id else new_id() for n in kept}
