"""ChatGPT's "Export data" conversations.json: a list of conversations, each a `mapping`
of nodes {id, parent, children, message} and the `current_node` the person last saw.

A message has `author.role`, `content` by `content_type` (text, multimodal_text, code,
execution_output, thoughts, tether_* from browsing, ...), `create_time` in Unix seconds,
and `recipient` ("all", or the tool an assistant message calls: python, browser, ...).
Hidden nodes are kept as skipped nodes so their children are re-attached: the null-message
root, empty system messages, `model_editable_context` (the memory ChatGPT injects) and
anything marked `is_visually_hidden_from_conversation`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from .tree import Conversation, Node, expect, one_of, title_of, to_time

FORMAT = "chatgpt"
ROLES = {"user": "user", "assistant": "assistant", "system": "system", "tool": "tool"}
# How far up a tool's output looks for the assistant message that called it.
CALL_DEPTH = 16


def conversation(data: Any, index: int) -> Conversation:
    where = f"[{index}]"
    expect(data, dict, "an object (a conversation)", conversation=where, where=where)
    cid = data.get("conversation_id") or data.get("id")
    cid = expect(cid, str, "a string", conversation=where, where=f"{where}.id")
    mapping = expect(data.get("mapping"), dict, "an object of nodes", conversation=cid,
                     where="mapping")
    current = expect(data.get("current_node"), str, "a node id", conversation=cid,
                     where="current_node", optional=True)
    nodes = [_node(cid, key, raw) for key, raw in mapping.items()]
    _link_tool_results(nodes)
    model = data.get("default_model_slug")
    return Conversation(
        format=FORMAT, id=cid, title=title_of(expect(
            data.get("title"), str, "a string", conversation=cid, where="title", optional=True),
            "ChatGPT conversation"),
        nodes=nodes, current=current,
        created_at=to_time(data.get("create_time"), conversation=cid, where="create_time"),
        updated_at=to_time(data.get("update_time"), conversation=cid, where="update_time"),
        model=model if isinstance(model, str) else None,
        parent_field="parent", current_field="current_node")


def _node(cid: str, key: Any, raw: Any) -> Node:
    # A field goes through expect() only when it is wrong, to word the error: every
    # message of a file comes through here, and building each field's location up front
    # was a sixth of the parse.
    where = f"mapping[{orjson.dumps(key).decode()}]"
    if not isinstance(raw, dict):
        expect(raw, dict, "an object", conversation=cid, where=where)
    parent = raw.get("parent")
    if parent is not None and not isinstance(parent, str):
        expect(parent, str, "a node id or null", conversation=cid, where=f"{where}.parent")
    message = raw.get("message")
    if message is None:
        return Node(key, parent, None, where=where)
    m = f"{where}.message"
    if not isinstance(message, dict):
        expect(message, dict, "an object or null", conversation=cid, where=m)
    author = message.get("author")
    if not isinstance(author, dict):
        expect(author, dict, "an object", conversation=cid, where=f"{m}.author")
    role = author.get("role")
    if not isinstance(role, str) or role not in ROLES:
        one_of(role, ROLES, conversation=cid, where=f"{m}.author.role")
    role = ROLES[role]
    content = message.get("content")
    if not isinstance(content, dict):
        expect(content, dict, "an object", conversation=cid, where=f"{m}.content")
    ctype = content.get("content_type")
    if not isinstance(ctype, str):
        expect(ctype, str, "a string", conversation=cid, where=f"{m}.content.content_type")
    meta = message.get("metadata") if isinstance(message.get("metadata"), dict) else {}
    created = to_time(message.get("create_time"), conversation=cid, where=f"{m}.create_time")
    if _hidden(role, ctype, content, meta):
        return Node(key, parent, None, created_at=created, where=where)
    recipient = message.get("recipient")
    name = author.get("name") if isinstance(author.get("name"), str) else None
    parts = _parts(cid, m, ctype, content)
    parts += _attachments(meta)
    extra: dict[str, Any] = {}
    if isinstance(meta.get("model_slug"), str):
        extra["model"] = meta["model_slug"]
    if role == "assistant" and isinstance(recipient, str) and recipient != "all":
        # An assistant message addressed to a tool is the call; its text is the input.
        text = " ".join(p.get("text", "") for p in parts if p["type"] == "text")
        key_name = "code" if ctype == "code" else "text"
        parts = [{"type": "tool-call", "toolCallId": str(message.get("id") or key),
                  "toolName": recipient, "input": {key_name: text}}]
    elif role == "tool":
        text = "\n".join(p.get("text", "") for p in parts if p["type"] == "text")
        files = [p for p in parts if p["type"] == "file"]
        parts = [{"type": "tool-result", "toolCallId": "", "toolName": name or "tool",
                  "output": text}, *files]
    return Node(key, parent, role, parts, created, extra, where)


def _hidden(role: str, ctype: str, content: Mapping[str, Any], meta: Mapping[str, Any]) -> bool:
    if meta.get("is_visually_hidden_from_conversation") is True:
        return True
    if ctype == "model_editable_context":
        return True
    if role == "system":
        texts = [p for p in content.get("parts") or () if isinstance(p, str)]
        return not any(t.strip() for t in texts) and not content.get("text")
    return False


def _parts(cid: str, where: str, ctype: str, content: Mapping[str, Any]) -> list[dict[str, Any]]:
    if ctype == "thoughts":
        return [{"type": "reasoning", "text": "\n\n".join(
            str(t.get("content") or t.get("summary") or "")
            for t in content.get("thoughts") or () if isinstance(t, dict))}]
    if ctype == "reasoning_recap":
        return [{"type": "reasoning", "text": str(content.get("content") or "")}]
    if ctype == "tether_quote":
        return [{"type": "text", "text": "\n".join(str(content.get(k) or "") for k in (
            "title", "url", "text") if content.get(k))}]
    if ctype == "tether_browsing_display":
        return [{"type": "text", "text": str(content.get("result") or content.get("summary")
                                             or "")}]
    raw_parts = content.get("parts")
    if raw_parts is None:
        text = content.get("text")
        return [{"type": "text", "text": text if isinstance(text, str) else ""}]
    expect(raw_parts, list, "a list", conversation=cid, where=f"{where}.content.parts")
    out: list[dict[str, Any]] = []
    texts = []
    for part in raw_parts:
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, dict) and isinstance(part.get("asset_pointer"), str):
            pointer = part["asset_pointer"]
            out.append({"type": "file", "mediaType": "image/*", "url": pointer,
                        "filename": pointer.rsplit("/", 1)[-1]})
    if texts or not out:
        out.insert(0, {"type": "text", "text": "\n".join(texts)})
    return out


def _attachments(meta: Mapping[str, Any]) -> list[dict[str, Any]]:
    out = []
    for a in meta.get("attachments") or ():
        if isinstance(a, dict) and isinstance(a.get("name"), str):
            mime = a.get("mime_type") or a.get("mimeType")
            out.append({"type": "file", "filename": a["name"],
                        "mediaType": mime if isinstance(mime, str) else "application/octet-stream",
                        "url": f"chatgpt-file:{a.get('id') or a['name']}"})
    return out


def _link_tool_results(nodes: list[Node]) -> None:
    """A tool's output answers the nearest call above it (the split tool form)."""
    by_id = {n.id: n for n in nodes}
    for node in nodes:
        if node.role != "tool":
            continue
        up, hops = node.parent, 0
        while up is not None and up in by_id and hops < CALL_DEPTH:
            calls = [p for p in by_id[up].parts if p["type"] == "tool-call"]
            if calls:
                node.parts[0]["toolCallId"] = calls[0]["toolCallId"]
                break
            up, hops = by_id[up].parent, hops + 1
        if not node.parts[0]["toolCallId"]:
            node.parts[0]["toolCallId"] = f"call-{node.id}"
