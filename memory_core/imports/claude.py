"""Claude's data export conversations.json: a list of conversations {uuid, name,
created_at, updated_at, chat_messages}. A message has `uuid`, `sender` (human or
assistant), `text`, `content` blocks (text, thinking, tool_use, tool_result),
`attachments` and `files`, and in newer exports `parent_message_uuid`, where the all-zero
uuid means a root. Older exports have no parent links: the list is then one chain.
`current_leaf_message_uuid`, when present, is the leaf the person last saw; otherwise the
last message listed is.
"""

from __future__ import annotations

from typing import Any

from .tree import Conversation, Node, expect, one_of, text_part, title_of, to_time

FORMAT = "claude"
ROLES = {"human": "user", "user": "user", "assistant": "assistant"}
NO_PARENT = "00000000-0000-4000-8000-000000000000"


def conversation(data: Any, index: int) -> Conversation:
    where = f"[{index}]"
    expect(data, dict, "an object (a conversation)", conversation=where, where=where)
    cid = expect(data.get("uuid"), str, "a string", conversation=where, where=f"{where}.uuid")
    raw = expect(data.get("chat_messages"), list, "a list", conversation=cid,
                 where="chat_messages")
    linked = any(isinstance(m, dict) and "parent_message_uuid" in m for m in raw)
    nodes: list[Node] = []
    for i, message in enumerate(raw):
        node = _node(cid, i, message)
        if not linked or node.parent is None and "parent_message_uuid" not in message:
            node.parent = nodes[-1].id if nodes else None  # a chain in list order
        nodes.append(node)
    current = expect(data.get("current_leaf_message_uuid"), str, "a message uuid",
                     conversation=cid, where="current_leaf_message_uuid", optional=True)
    return Conversation(
        format=FORMAT, id=cid,
        title=title_of(expect(data.get("name"), str, "a string", conversation=cid,
                              where="name", optional=True), "Claude conversation"),
        nodes=nodes, current=current if current else (nodes[-1].id if nodes else None),
        created_at=to_time(data.get("created_at"), conversation=cid, where="created_at"),
        updated_at=to_time(data.get("updated_at"), conversation=cid, where="updated_at"),
        parent_field="parent_message_uuid", current_field="current_leaf_message_uuid")


def _node(cid: str, i: int, message: Any) -> Node:
    where = f"chat_messages[{i}]"
    expect(message, dict, "an object", conversation=cid, where=where)
    mid = expect(message.get("uuid"), str, "a string", conversation=cid, where=f"{where}.uuid")
    role = one_of(message.get("sender"), ROLES, conversation=cid, where=f"{where}.sender")
    parent = expect(message.get("parent_message_uuid"), str, "a message uuid or null",
                    conversation=cid, where=f"{where}.parent_message_uuid", optional=True)
    if parent == NO_PARENT or parent == "":
        parent = None
    blocks = expect(message.get("content"), list, "a list of blocks", conversation=cid,
                    where=f"{where}.content", optional=True)
    parts = _parts(cid, where, blocks) if blocks else []
    if not parts:
        text = expect(message.get("text"), str, "a string", conversation=cid,
                      where=f"{where}.text", optional=True)
        parts = [{"type": "text", "text": text or ""}]
    for key in ("attachments", "files"):
        for f in expect(message.get(key), list, "a list", conversation=cid,
                        where=f"{where}.{key}", optional=True) or ():
            if isinstance(f, dict) and isinstance(f.get("file_name"), str):
                mime = f.get("file_type")
                parts.append({"type": "file", "filename": f["file_name"],
                              "mediaType": mime if isinstance(mime, str) and "/" in mime
                              else "application/octet-stream",
                              "url": f"claude-file:{f.get('file_uuid') or f['file_name']}"})
    created = to_time(message.get("created_at"), conversation=cid, where=f"{where}.created_at")
    return Node(mid, parent, role, parts, created, {}, where)


def _parts(cid: str, where: str, blocks: list[Any]) -> list[dict[str, Any]]:
    """Text and thinking as such; a tool_use and its tool_result (same message, matched
    by id or else in order) as one AI SDK tool part."""
    parts: list[dict[str, Any]] = []
    open_calls: list[dict[str, Any]] = []
    for j, block in enumerate(blocks):
        at = f"{where}.content[{j}]"
        expect(block, dict, "an object", conversation=cid, where=at)
        kind = block.get("type")
        text = text_part(block, conversation=cid, where=at)
        if text is not None:
            parts.append(text)
        elif kind == "tool_use":
            name = expect(block.get("name"), str, "a string", conversation=cid,
                          where=f"{at}.name")
            call = {"type": f"tool-{name}", "toolCallId": str(block.get("id") or f"{at}"),
                    "state": "input-available", "input": block.get("input") or {}}
            parts.append(call)
            open_calls.append(call)
        elif kind == "tool_result":
            matched = _match(open_calls, block)
            output = _result_text(block.get("content"))
            if matched is not None:
                call = matched
            else:
                name = str(block.get("name") or "tool")
                call = {"type": f"tool-{name}", "toolCallId": str(block.get("tool_use_id")
                                                                   or at), "input": {}}
                parts.append(call)
            if block.get("is_error") is True:
                call.update(state="output-error", errorText=output)
            else:
                call.update(state="output-available", output=output)
    return parts


def _match(open_calls: list[dict[str, Any]], block: dict[str, Any]) -> dict[str, Any] | None:
    wanted = block.get("tool_use_id")
    for call in open_calls:
        if wanted is not None and call["toolCallId"] == wanted or (
                wanted is None and call["type"] == f"tool-{block.get('name')}"):
            open_calls.remove(call)
            return call
    return None


def _result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(c.get("text") or "") for c in content if isinstance(c, dict))
    return ""
