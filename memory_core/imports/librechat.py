"""LibreChat's conversation export (JSON): {conversationId, title, endpoint, messages} with
`messages` flat (each {messageId, parentMessageId, isCreatedByUser, sender, text, content,
files, createdAt}; the all-zero id means a root), or its nested tree form (`messagesTree`,
or `messages` whose items hold `children`) where a message's parent is the one holding it.
The conversation's current message is its newest (`createdAt`).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from .tree import Conversation, Node, expect, title_of, to_time

FORMAT = "librechat"
NO_PARENT = "00000000-0000-0000-0000-000000000000"


def conversation(data: Any, index: int) -> Conversation:
    where = f"[{index}]"
    expect(data, dict, "an object (a conversation)", conversation=where, where=where)
    cid = expect(data.get("conversationId"), str, "a string", conversation=where,
                 where="conversationId")
    key = "messagesTree" if "messagesTree" in data else "messages"
    top = expect(data.get(key), list, "a list", conversation=cid, where=key)
    nested = key == "messagesTree" or any(isinstance(m, dict) and "children" in m for m in top)
    nodes = _nested(cid, key, top) if nested else [
        _node(cid, f"{key}[{i}]", m, None, nested=False) for i, m in enumerate(top)]
    # The newest createdAt is current; on a tie, the later one in the file.
    oldest = datetime.min.replace(tzinfo=UTC)
    newest = max(reversed(nodes), key=lambda n: n.created_at or oldest, default=None)
    return Conversation(
        format=FORMAT, id=cid,
        title=title_of(expect(data.get("title"), str, "a string", conversation=cid,
                              where="title", optional=True), "LibreChat conversation"),
        nodes=nodes, current=newest.id if newest else None,
        created_at=min((n.created_at for n in nodes if n.created_at), default=None),
        parent_field="parentMessageId")


def _nested(cid: str, key: str, top: list[Any]) -> list[Node]:
    """The tree form, depth first with a stack: a chain of any depth."""
    nodes: list[Node] = []
    stack: list[tuple[str, Any, str | None]] = [
        (f"{key}[{i}]", m, None) for i, m in reversed(list(enumerate(top)))]
    while stack:
        where, raw, parent = stack.pop()
        node = _node(cid, where, raw, parent, nested=True)
        nodes.append(node)
        children = expect(raw.get("children"), list, "a list", conversation=cid,
                          where=f"{where}.children", optional=True) or []
        stack.extend((f"{where}.children[{i}]", c, node.id)
                     for i, c in reversed(list(enumerate(children))))
    return nodes


def _node(cid: str, where: str, raw: Any, parent: str | None, *, nested: bool) -> Node:
    # A nested path names each level; past a few the message's own id says more.
    if where.count(".children") > 3:
        where = f"message {raw.get('messageId')!r}" if isinstance(raw, dict) else where
    expect(raw, dict, "an object", conversation=cid, where=where)
    mid = expect(raw.get("messageId"), str, "a string", conversation=cid,
                 where=f"{where}.messageId")
    if not nested:
        parent = expect(raw.get("parentMessageId"), str, "a message id or null",
                        conversation=cid, where=f"{where}.parentMessageId", optional=True)
        parent = None if parent in (NO_PARENT, "") else parent
    by_user = expect(raw.get("isCreatedByUser"), bool, "a boolean", conversation=cid,
                     where=f"{where}.isCreatedByUser", optional=True)
    parts = _parts(cid, where, raw)
    for f in expect(raw.get("files"), list, "a list", conversation=cid,
                    where=f"{where}.files", optional=True) or ():
        if isinstance(f, dict) and isinstance(f.get("filename") or f.get("filepath"), str):
            mime = f.get("type")
            parts.append({"type": "file", "filename": f.get("filename") or f["filepath"],
                          "mediaType": mime if isinstance(mime, str) and "/" in mime
                          else "application/octet-stream",
                          "url": str(f.get("filepath") or f"librechat-file:{f.get('file_id')}")})
    extra = {k: raw[k] for k in ("model", "sender", "endpoint") if isinstance(raw.get(k), str)}
    created = to_time(raw.get("createdAt"), conversation=cid, where=f"{where}.createdAt")
    return Node(mid, parent, "user" if by_user else "assistant", parts, created, extra, where)


def _parts(cid: str, where: str, raw: dict[str, Any]) -> list[dict[str, Any]]:
    content = expect(raw.get("content"), list, "a list", conversation=cid,
                     where=f"{where}.content", optional=True)
    parts: list[dict[str, Any]] = []
    for c in content or ():
        if not isinstance(c, dict):
            continue
        kind = c.get("type")
        if kind == "text":
            text = c.get("text")
            text = text.get("value") if isinstance(text, dict) else text  # older exports
            parts.append({"type": "text", "text": text if isinstance(text, str) else ""})
        elif kind == "think":
            parts.append({"type": "reasoning", "text": str(c.get("think") or "")})
        elif kind == "tool_call" and isinstance(c.get("tool_call"), dict):
            call = c["tool_call"]
            name = str(call.get("name") or call.get("type") or "tool")
            part: dict[str, Any] = {"type": f"tool-{name}",
                                    "toolCallId": str(call.get("id") or f"{where}-{len(parts)}"),
                                    "state": "input-available", "input": call.get("args") or {}}
            if call.get("output") is not None:
                part.update(state="output-available", output=call["output"])
            parts.append(part)
    if not parts:
        text = expect(raw.get("text"), str, "a string", conversation=cid,
                      where=f"{where}.text", optional=True)
        parts.append({"type": "text", "text": text or ""})
    return parts
