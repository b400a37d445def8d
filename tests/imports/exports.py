"""Small exports of each format, written from the formats' public documentation and
source, each with the branch cases the importer must keep: an edited question, a
regenerated answer, a current branch that is not the newest, hidden or non-message
entries in the middle of a chain, tool calls, attachments."""

from __future__ import annotations

import copy
from typing import Any

T0 = 1_700_000_000  # 2023-11-14T22:13:20Z


def _gpt_node(nid: str, parent: str | None, children: list[str], message: Any) -> dict:
    return {"id": nid, "parent": parent, "children": children, "message": message}


def _gpt_msg(mid: str, role: str, t: int | None, content: dict, **extra: Any) -> dict:
    msg = {"id": mid, "author": {"role": role, "name": extra.pop("name", None),
                                 "metadata": {}},
           "create_time": None if t is None else T0 + t, "update_time": None,
           "content": content, "status": "finished_successfully", "end_turn": True,
           "weight": 1.0, "metadata": extra.pop("metadata", {}),
           "recipient": extra.pop("recipient", "all")}
    msg.update(extra)
    return msg


def _text(*parts: str) -> dict:
    return {"content_type": "text", "parts": list(parts)}


def chatgpt() -> list[dict]:
    """Lisbon: hidden root, empty system message and memory context on top; the first
    question edited (two roots once they are dropped); the first answer regenerated;
    the person last looked at the first answer (a1), not the newest branch. Under a2 a
    code-interpreter call and its output, and an image. Second conversation: a hidden
    message between a question and its answer."""
    m = {
        "root": _gpt_node("root", None, ["sys"], None),
        "sys": _gpt_node("sys", "root", ["ctx"], _gpt_msg("sys", "system", None, _text(""))),
        "ctx": _gpt_node("ctx", "sys", ["u1", "u2"], _gpt_msg(
            "ctx", "user", 0, {"content_type": "model_editable_context",
                               "model_set_context": "Likes trains"})),
        "u1": _gpt_node("u1", "ctx", ["a1", "a2"], _gpt_msg(
            "u1", "user", 1, _text("Book a flight to Lisbon on May 3"))),
        "a1": _gpt_node("a1", "u1", [], _gpt_msg(
            "a1", "assistant", 2, _text("Booked the 9:10 flight."),
            metadata={"model_slug": "gpt-4o"})),
        "a2": _gpt_node("a2", "u1", ["u3"], _gpt_msg(
            "a2", "assistant", 3, _text("Booked the 18:40 evening flight."))),
        "u2": _gpt_node("u2", "ctx", ["a3"], _gpt_msg(
            "u2", "user", 4, _text("Book a train to Porto instead"),
            metadata={"attachments": [{"id": "file-abc", "name": "itinerary.pdf",
                                       "mime_type": "application/pdf", "size": 2048}]})),
        "a3": _gpt_node("a3", "u2", [], _gpt_msg("a3", "assistant", 5, _text("Train booked."))),
        "u3": _gpt_node("u3", "a2", ["c1"], _gpt_msg("u3", "user", 6, {
            "content_type": "multimodal_text",
            "parts": [{"content_type": "image_asset_pointer",
                       "asset_pointer": "file-service://file-seat42", "size_bytes": 10,
                       "width": 4, "height": 4}, "What is 2+2 seats?"]})),
        "c1": _gpt_node("c1", "u3", ["o1"], _gpt_msg(
            "c1", "assistant", 7, {"content_type": "code", "language": "python",
                                   "text": "print(2+2)"}, recipient="python")),
        "o1": _gpt_node("o1", "c1", ["a4"], _gpt_msg(
            "o1", "tool", 8, {"content_type": "execution_output", "text": "4"},
            name="python")),
        "a4": _gpt_node("a4", "o1", [], _gpt_msg("a4", "assistant", 9, _text("Four seats."))),
    }
    second = {
        "r": _gpt_node("r", None, ["q"], None),
        "q": _gpt_node("q", "r", ["h"], _gpt_msg("q", "user", 20, _text("Hello"))),
        "h": _gpt_node("h", "q", ["ans"], _gpt_msg(
            "h", "assistant", 21, _text("(searching)"),
            metadata={"is_visually_hidden_from_conversation": True})),
        "ans": _gpt_node("ans", "h", [], _gpt_msg("ans", "assistant", 22, _text("Hi!"))),
    }
    return [
        {"title": "Lisbon trip", "create_time": T0, "update_time": T0 + 9, "mapping": m,
         "current_node": "a1", "conversation_id": "conv-lisbon", "id": "conv-lisbon",
         "default_model_slug": "gpt-4o", "moderation_results": [], "is_archived": False},
        {"title": "Greeting", "create_time": T0 + 20, "update_time": T0 + 22,
         "mapping": second, "current_node": "ans", "conversation_id": "conv-hello",
         "id": "conv-hello"},
    ]


ZERO_CLAUDE = "00000000-0000-4000-8000-000000000000"


def _claude_msg(uuid: str, sender: str, t: int, content: list[dict], parent: str | None,
                **extra: Any) -> dict:
    msg = {"uuid": uuid, "text": "", "content": content, "sender": sender,
           "created_at": f"2024-03-01T10:00:{t:02d}.000000Z",
           "updated_at": f"2024-03-01T10:00:{t:02d}.000000Z", "attachments": [], "files": []}
    if parent is not None:
        msg["parent_message_uuid"] = parent
    msg.update(extra)
    return msg


def _ct(text: str) -> dict:
    return {"type": "text", "text": text, "start_timestamp": None, "stop_timestamp": None,
            "citations": []}


def claude() -> list[dict]:
    """Trip: a web search inside the first answer; the follow-up carries a file; its answer
    retried, and the person last saw the first answer (current_leaf_message_uuid). Old:
    an older export without parent links (one chain in list order)."""
    return [
        {"uuid": "c-trip", "name": "Trip questions", "created_at": "2024-03-01T10:00:00Z",
         "updated_at": "2024-03-01T10:00:09Z", "account": {"uuid": "acct"},
         "current_leaf_message_uuid": "m4",
         "chat_messages": [
             _claude_msg("m1", "human", 1, [_ct("Weather in Lisbon in May?")], ZERO_CLAUDE),
             _claude_msg("m2", "assistant", 2, [
                 {"type": "thinking", "thinking": "Look it up."},
                 {"type": "tool_use", "id": "tu1", "name": "web_search",
                  "input": {"query": "Lisbon May weather"}},
                 {"type": "tool_result", "tool_use_id": "tu1", "name": "web_search",
                  "content": [{"type": "text", "text": "22C and sunny"}], "is_error": False},
                 _ct("Usually 22C and sunny.")], "m1"),
             _claude_msg("m3", "human", 3, [_ct("And this plan?")], "m2",
                         attachments=[{"file_name": "plan.txt", "file_size": 12,
                                       "file_type": "txt", "extracted_content": "Day 1"}]),
             _claude_msg("m4", "assistant", 4, [_ct("The plan looks good.")], "m3"),
             _claude_msg("m5", "assistant", 5, [_ct("Retry: a fine plan.")], "m3"),
         ]},
        {"uuid": "c-old", "name": "", "created_at": "2023-05-01T09:00:00Z",
         "updated_at": "2023-05-01T09:00:03Z",
         "chat_messages": [
             {"uuid": "o1", "text": "Old question", "sender": "human",
              "created_at": "2023-05-01T09:00:01Z"},
             {"uuid": "o2", "text": "Old answer", "sender": "assistant",
              "created_at": "2023-05-01T09:00:02Z"},
             {"uuid": "o3", "text": "Thanks", "sender": "human",
              "created_at": "2023-05-01T09:00:03Z"},
         ]},
    ]


def _owui(mid: str, parent: str | None, children: list[str], role: str, text: str, t: int,
          **extra: Any) -> dict:
    return {"id": mid, "parentId": parent, "childrenIds": children, "role": role,
            "content": text, "timestamp": T0 + t, **extra}


def openwebui() -> list[dict]:
    """One chat: the question edited (u1, u1b), the first answer regenerated (a1, a2);
    currentId the first answer a1 though a2 and a3 are newer. u1 has an inline image
    and a file."""
    messages = {
        "u1": _owui("u1", None, ["a1", "a2"], "user", "Plan a day in Sintra", 1, files=[
            {"type": "image", "url": "data:image/png;base64,iVBORw0KGgo="},
            {"type": "file", "id": "f1", "name": "map.pdf", "url": "/api/v1/files/f1",
             "file": {"filename": "map.pdf", "meta": {"content_type": "application/pdf"}}}]),
        "a1": _owui("a1", "u1", [], "assistant", "Pena Palace first.", 2, model="llama3"),
        "a2": _owui("a2", "u1", [], "assistant", "Start at Quinta da Regaleira.", 3,
                    model="llama3"),
        "u1b": _owui("u1b", None, ["a3"], "user", "Plan a day in Cascais", 4),
        "a3": _owui("a3", "u1b", [], "assistant", "Beach in the morning.", 5),
    }
    chat = {"id": "", "title": "Sintra day", "models": ["llama3"],
            "history": {"messages": messages, "currentId": "a1"},
            "messages": [messages["u1"], messages["a1"]], "tags": [], "timestamp": T0 * 1000}
    return [{"id": "owui-1", "user_id": "u", "title": "Sintra day", "chat": chat,
             "updated_at": T0 + 5, "created_at": T0, "share_id": None, "archived": False,
             "pinned": False, "meta": {}, "folder_id": None}]


NO_PARENT_LC = "00000000-0000-0000-0000-000000000000"


def _lc(mid: str, parent: str, by_user: bool, text: str, t: int, **extra: Any) -> dict:
    return {"messageId": mid, "parentMessageId": parent, "conversationId": "lc-1",
            "isCreatedByUser": by_user, "sender": "User" if by_user else "GPT-4",
            "text": text, "createdAt": f"2024-06-01T12:00:{t:02d}.000Z",
            "updatedAt": f"2024-06-01T12:00:{t:02d}.000Z", "error": False,
            "unfinished": False, **extra}


def librechat_flat() -> dict:
    """Question, two answers (the second regenerated, so newest: current); a follow-up
    under the first answer is older than the regeneration. Tool call in content."""
    return {"conversationId": "lc-1", "endpoint": "openAI", "title": "Pasta",
            "exportAt": "12:00:00 GMT", "branches": True, "recursive": False,
            "messages": [
                _lc("q1", NO_PARENT_LC, True, "How long to boil pasta?", 1,
                    files=[{"file_id": "f9", "filename": "box.jpg", "filepath": "/images/box.jpg",
                            "type": "image/jpeg"}]),
                _lc("r1", "q1", False, "About 10 minutes.", 2, content=[
                    {"type": "tool_call", "tool_call": {"id": "call_1", "name": "timer",
                                                        "args": "{\"m\": 10}", "output": "set"}},
                    {"type": "text", "text": "About 10 minutes."}]),
                _lc("q2", "r1", True, "Al dente?", 3),
                _lc("r3", "q2", False, "8 minutes.", 4),
                _lc("r2", "q1", False, "9 to 11 minutes.", 5),
            ]}


def librechat_tree() -> dict:
    flat = librechat_flat()
    by_id = {m["messageId"]: {**m, "children": []} for m in flat["messages"]}
    roots = []
    for m in flat["messages"]:
        node = by_id[m["messageId"]]
        parent = by_id.get(m["parentMessageId"])
        (parent["children"] if parent else roots).append(node)
    out = {k: v for k, v in flat.items() if k != "messages"}
    return {**out, "recursive": True, "messagesTree": roots}


def librechat_deep(depth: int) -> dict:
    """A chain `depth` messages long in the nested form: 2 JSON levels per message."""
    leaf: dict[str, Any] = {}
    top = leaf
    for i in range(depth):
        leaf.update(_lc(f"d{i}", "x", i % 2 == 0, f"message {i}", 0))
        if i < depth - 1:
            leaf["children"] = [{}]
            leaf = leaf["children"][0]
        else:
            leaf["children"] = []
    return {"conversationId": "lc-deep", "title": "Deep", "recursive": True,
            "messagesTree": [top]}


def deep_json(depth: int) -> bytes:
    """librechat_deep's bytes, built without recursion (json.dumps would hit its limit)."""
    import orjson
    pieces = []
    for i in range(depth):
        head = _lc(f"d{i}", "x", i % 2 == 0, f"message {i}", i % 60)
        pieces.append(orjson.dumps(head)[:-1] + b', "children": [')
    body = b"".join(pieces) + b"]}" * depth
    return b'{"conversationId": "lc-deep", "title": "Deep", "recursive": true, ' \
           b'"messagesTree": [' + body + b"]}"


def _pi(kind: str, eid: str, parent: str | None, t: int, **fields: Any) -> dict:
    return {"type": kind, "id": eid, "parentId": parent,
            "timestamp": f"2025-01-02T08:00:{t:02d}.000Z", **fields}


def pi_entries() -> list[dict]:
    """Model change first; a question, an answer calling a tool, its result, the
    answer; then the person went back (/tree) and asked again under the first answer...
    The file ends with a thinking level change, a label and the session name, all on the
    second branch: its last message (b2) is current."""
    user = {"role": "user", "content": "List the files", "timestamp": 1}
    call = {"role": "assistant", "content": [
        {"type": "thinking", "thinking": "Use ls."},
        {"type": "toolCall", "id": "call_ls", "name": "bash", "arguments": {"command": "ls"}}],
        "provider": "anthropic", "model": "claude-sonnet-4-5", "stopReason": "toolUse"}
    result = {"role": "toolResult", "toolCallId": "call_ls", "toolName": "bash",
              "content": [{"type": "text", "text": "a.py b.py"}], "isError": False}
    answer = {"role": "assistant", "content": [{"type": "text", "text": "Two files."}],
              "model": "claude-sonnet-4-5"}
    again = {"role": "user", "content": [{"type": "text", "text": "Only Python files?"},
                                         {"type": "image", "data": "AAAA",
                                          "mimeType": "image/png"}]}
    answer2 = {"role": "assistant", "content": [{"type": "text", "text": "Both are."}]}
    return [
        {"type": "session", "version": 3, "id": "pi-sess-1",
         "timestamp": "2025-01-02T08:00:00.000Z", "cwd": "/work"},
        _pi("model_change", "e0", None, 1, provider="anthropic", modelId="claude-sonnet-4-5"),
        _pi("message", "e1", "e0", 2, message=user),
        _pi("message", "e2", "e1", 3, message=call),
        _pi("message", "e3", "e2", 4, message=result),
        _pi("message", "e4", "e3", 5, message=answer),
        _pi("branch_summary", "bs", "e2", 6, fromId="e4", summary="Listed files"),
        _pi("message", "b1", "bs", 7, message=again),
        _pi("message", "b2", "b1", 8, message=answer2),
        _pi("thinking_level_change", "t1", "b2", 9, thinkingLevel="high"),
        _pi("label", "l1", "t1", 10, targetId="e1", label="start"),
        _pi("session_info", "s1", "l1", 11, name="List project files"),
    ]


def pi_jsonl(entries: list[dict] | None = None) -> bytes:
    import orjson
    return b"\n".join(orjson.dumps(e) for e in (entries or pi_entries())) + b"\n"


def clone(value: Any) -> Any:
    return copy.deepcopy(value)
