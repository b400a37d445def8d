"""A Pi coding agent session (.jsonl): a `session` header line {id, timestamp, cwd}, then
entries {type, id, parentId, timestamp}. `message` entries hold an agent message (user,
assistant with text/thinking/toolCall blocks, toolResult, bashExecution, custom); the
other entries (model_change, thinking_level_change, label, session_info, compaction,
branch_summary, custom) are skipped and their children re-attached. The file's last entry
is where the person was: the current message is the nearest message at or above it. The
name is the latest session_info's, else the first user words.
"""

from __future__ import annotations

from typing import Any

from .tree import Conversation, Node, expect, one_of, text_part, title_of, to_time

FORMAT = "pi"
ROLES = {"user": "user", "assistant": "assistant", "toolResult": "tool",
         "bashExecution": "tool", "custom": "user"}


def conversation(lines: list[Any]) -> Conversation:
    """lines: the file's JSON values, one per line, header first."""
    header = lines[0] if lines else None
    if not isinstance(header, dict) or header.get("type") != "session":
        expect(None, dict, "a session header ({\"type\": \"session\", \"id\": ...})",
               conversation="line 1", where="line 1")
    assert isinstance(header, dict)
    cid = expect(header.get("id"), str, "a string", conversation="line 1", where="line 1.id")
    nodes: list[Node] = []
    name: str | None = None
    for n, entry in enumerate(lines[1:], start=2):
        where = f"line {n}"
        expect(entry, dict, "an object (an entry)", conversation=cid, where=where)
        kind = expect(entry.get("type"), str, "a string", conversation=cid, where=f"{where}.type")
        eid = entry.get("id")
        if eid is None and "parentId" not in entry:  # version 1: a linear list
            eid, parent = f"entry-{n}", (nodes[-1].id if nodes else None)
        else:
            eid = expect(eid, str, "a string", conversation=cid, where=f"{where}.id")
            parent = expect(entry.get("parentId"), str, "an entry id or null",
                            conversation=cid, where=f"{where}.parentId", optional=True)
        created = to_time(entry.get("timestamp"), conversation=cid, where=f"{where}.timestamp")
        if kind == "session_info" and isinstance(entry.get("name"), str):
            name = entry["name"]
        if kind != "message":
            nodes.append(Node(eid, parent, None, created_at=created, where=where))
            continue
        nodes.append(_message(cid, where, eid, parent, created, entry.get("message")))
    if name is None:
        name = next((p["text"] for node in nodes if node.role == "user"
                     for p in node.parts if p["type"] == "text" and p["text"].strip()), None)
    return Conversation(
        format=FORMAT, id=cid, title=title_of((name or "")[:80], f"Pi session {cid[:8]}"),
        nodes=nodes, current=nodes[-1].id if nodes else None,
        created_at=to_time(header.get("timestamp"), conversation=cid, where="line 1.timestamp"),
        parent_field="parentId", current_field="last entry")


def _message(cid: str, where: str, eid: str, parent: str | None, created: Any,
             message: Any) -> Node:
    at = f"{where}.message"
    expect(message, dict, "an object", conversation=cid, where=at)
    source_role = message.get("role")
    role = one_of(source_role, ROLES, conversation=cid, where=f"{at}.role")
    extra = {k: message[k] for k in ("model", "provider") if isinstance(message.get(k), str)}
    if source_role == "bashExecution":
        parts: list[dict[str, Any]] = [{
            "type": "tool-bash", "toolCallId": eid, "state": "output-available",
            "input": {"command": str(message.get("command") or "")},
            "output": str(message.get("output") or "")}]
    else:
        parts = _blocks(cid, at, message.get("content"))
    if source_role == "toolResult":
        call = expect(message.get("toolCallId"), str, "a string", conversation=cid,
                      where=f"{at}.toolCallId")
        text = "\n".join(p["text"] for p in parts if p["type"] == "text")
        parts = [{"type": "tool-result", "toolCallId": call,
                  "toolName": str(message.get("toolName") or "tool"), "output": text,
                  "isError": message.get("isError") is True},
                 *(p for p in parts if p["type"] == "file")]
    return Node(eid, parent, role, parts, created, extra, where)


def _blocks(cid: str, at: str, content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    blocks = expect(content, list, "a string or a list of blocks", conversation=cid,
                    where=f"{at}.content")
    parts: list[dict[str, Any]] = []
    for i, b in enumerate(blocks):
        bw = f"{at}.content[{i}]"
        expect(b, dict, "an object", conversation=cid, where=bw)
        kind = b.get("type")
        text = text_part(b, conversation=cid, where=bw)
        if text is not None:
            parts.append(text)
        elif kind == "toolCall":
            parts.append({"type": "tool-call",
                          "toolCallId": expect(b.get("id"), str, "a string",
                                               conversation=cid, where=f"{bw}.id"),
                          "toolName": expect(b.get("name"), str, "a string",
                                             conversation=cid, where=f"{bw}.name"),
                          "input": b.get("arguments") or {}})
        elif kind == "image":
            mime = b.get("mimeType") if isinstance(b.get("mimeType"), str) else "image/*"
            parts.append({"type": "file", "mediaType": mime, "filename": f"image-{i + 1}",
                          "url": f"pi-image:{i + 1}"})  # the base64 data is not kept
    return parts
