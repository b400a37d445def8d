"""Open WebUI's chat export: a list of chat records {id, title, chat, created_at,
updated_at} (one record alone is accepted too). `chat.history` holds the tree:
`messages` by id, each {id, parentId, childrenIds, role, content, timestamp, model,
files}, and `currentId`, the message the person last saw. Times are Unix seconds. An
answer's tool calls are blocks in its content (openwebui_tools.py).
"""

from __future__ import annotations

from typing import Any

import orjson

from .openwebui_tools import content_parts
from .tree import Conversation, Node, expect, one_of, title_of, to_time

FORMAT = "openwebui"
ROLES = {"user": "user", "assistant": "assistant", "system": "system"}


def conversation(data: Any, index: int) -> Conversation:
    where = f"[{index}]"
    expect(data, dict, "an object (a chat)", conversation=where, where=where)
    chat = data.get("chat") if "chat" in data else data
    expect(chat, dict, "an object", conversation=where, where=f"{where}.chat")
    cid = data.get("id") or chat.get("id")
    cid = expect(cid, str, "a string", conversation=where, where=f"{where}.id")
    history = expect(chat.get("history"), dict, "an object", conversation=cid,
                     where="chat.history")
    messages = expect(history.get("messages"), dict, "an object of messages",
                      conversation=cid, where="chat.history.messages")
    current = expect(history.get("currentId"), str, "a message id", conversation=cid,
                     where="chat.history.currentId", optional=True)
    nodes = [_node(cid, key, raw) for key, raw in messages.items()]
    title = data.get("title") or chat.get("title")
    return Conversation(
        format=FORMAT, id=cid, title=title_of(title if isinstance(title, str) else None,
                                              "Open WebUI chat"),
        nodes=nodes, current=current,
        created_at=to_time(data.get("created_at"), conversation=cid, where="created_at"),
        updated_at=to_time(data.get("updated_at"), conversation=cid, where="updated_at"),
        parent_field="parentId", current_field="chat.history.currentId")


def _node(cid: str, key: str, raw: Any) -> Node:
    where = f"chat.history.messages[{orjson.dumps(key).decode()}]"
    expect(raw, dict, "an object", conversation=cid, where=where)
    role = one_of(raw.get("role"), ROLES, conversation=cid, where=f"{where}.role")
    parent = expect(raw.get("parentId"), str, "a message id or null", conversation=cid,
                    where=f"{where}.parentId", optional=True)
    content = expect(raw.get("content"), str, "a string", conversation=cid,
                     where=f"{where}.content", optional=True)
    parts: list[dict[str, Any]] = (  # an answer's tool-call blocks become tool parts
        content_parts(content or "", key) if role == "assistant"
        else [{"type": "text", "text": content or ""}])
    for i, f in enumerate(expect(raw.get("files"), list, "a list", conversation=cid,
                                 where=f"{where}.files", optional=True) or ()):
        if isinstance(f, dict):
            parts.append(_file(f, i))
    extra = {"model": raw["model"]} if isinstance(raw.get("model"), str) else {}
    created = to_time(raw.get("timestamp"), conversation=cid, where=f"{where}.timestamp")
    return Node(key, parent, role, parts, created, extra, where)


def _file(f: dict[str, Any], i: int) -> dict[str, Any]:
    """A part naming the file; an inline data: URL is not copied (no binary is kept)."""
    inner: dict[str, Any] = f["file"] if isinstance(f.get("file"), dict) else {}
    name = f.get("name") or inner.get("filename") or f"{f.get('type') or 'file'}-{i + 1}"
    meta: dict[str, Any] = inner["meta"] if isinstance(inner.get("meta"), dict) else {}
    mime = meta.get("content_type") or ("image/*" if f.get("type") == "image" else None)
    url: str = f["url"] if isinstance(f.get("url"), str) else ""
    if url.startswith("data:"):
        url = f"openwebui-file:{name}"
    return {"type": "file", "filename": str(name),
            "mediaType": mime if isinstance(mime, str) else "application/octet-stream",
            "url": url or f"openwebui-file:{f.get('id') or name}"}
