"""The OpenAI Agents SDK's items as Arbor messages (AI SDK `UIMessage`s) and back.

An item becomes one message: its words as parts (text, reasoning, `tool-<name>` parts
with `state`, `input`, `output`) and the item itself in `metadata.openai_item`, so it
reads back exactly; an item holding values not every store keeps (NaN, integers past 64
bits, lone surrogates, NUL) is kept as JSON text in `metadata.openai_item_json` instead.
Messages other clients wrote (several parts, the split `tool-call` / `tool-result` form)
read as the items they hold.
"""

from __future__ import annotations

import json
import math
from typing import Any

ITEM_KEY = "openai_item"
ITEM_JSON_KEY = "openai_item_json"  # the item as JSON text, when it holds values JSON can't
_ROLES = {"user": "user", "assistant": "assistant", "system": "system", "developer": "system"}
_INT64 = 2**63


def _plain(item: Any) -> dict[str, Any]:
    if hasattr(item, "model_dump"):  # a pydantic item from the openai package
        item = item.model_dump(exclude_unset=True, mode="json")
    return dict(item)


def _texts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    if isinstance(content, list):
        return [str(p.get("text") or p.get("refusal") or "") for p in content
                if isinstance(p, dict) and (p.get("text") or p.get("refusal"))]
    return []


def _arguments(raw: Any) -> Any:
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except ValueError:
            return {"arguments": raw}
    return raw


def _portable(value: Any) -> bool:
    """Whether `value` is plain JSON every store keeps: no NaN/infinity, no integer past
    64 bits, no lone surrogate or NUL in a string."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, bool) or v is None:
            continue
        if isinstance(v, int):
            if not -_INT64 <= v < _INT64:
                return False
        elif isinstance(v, float):
            if not math.isfinite(v):
                return False
        elif isinstance(v, str):
            if "\x00" in v or not _encodable(v):
                return False
        elif isinstance(v, dict):
            stack.extend(v.keys())
            stack.extend(v.values())
        elif isinstance(v, (list, tuple)):
            stack.extend(v)
    return True


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _clean_text(text: str) -> str:
    """Text safe to store as a part: lone surrogates and NUL replaced by U+FFFD."""
    if _encodable(text) and "\x00" not in text:
        return text
    return text.encode("utf-8", "replace").decode("utf-8").replace("\x00", "\ufffd")


def _clean(value: Any) -> Any:
    """A JSON value safe for every store (used for parts; the item itself is kept exactly)."""
    if isinstance(value, str):
        return _clean_text(value)
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return value if -_INT64 <= value < _INT64 else str(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, dict):
        return {_clean_text(str(k)): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return _clean_text(str(value))


def _output_value(output: Any) -> Any:
    if isinstance(output, list):  # structured tool output: keep the texts
        texts = [str(p.get("text")) for p in output if isinstance(p, dict) and p.get("text")]
        return "\n".join(texts) if texts else output
    return output


def item_to_message(item: Any, tool_names: dict[str, str] | None = None,
                    tool_inputs: dict[str, Any] | None = None) -> dict[str, Any]:
    """An SDK input item as an Arbor message: an AI SDK `UIMessage` (roles user,
    assistant, system; tool calls as `tool-<name>` parts) with the item kept in metadata.

    `tool_names`/`tool_inputs` (by call id) let a `function_call_output` carry its call's
    name and input, as the AI SDK's tool part does."""
    item = _plain(item)
    kind = item.get("type", "message")
    parts: list[dict[str, Any]] = []
    role = "assistant"
    if kind == "function_call":
        call_id, name = str(item.get("call_id", "")), str(item.get("name") or "tool")
        parts.append({"type": f"tool-{name}", "toolCallId": call_id, "state": "input-available",
                      "input": _arguments(item.get("arguments"))})
    elif kind == "function_call_output":
        call_id = str(item.get("call_id", ""))
        name = (tool_names or {}).get(call_id)
        part: dict[str, Any] = {"type": f"tool-{name}" if name else "dynamic-tool",
                                "toolCallId": call_id, "state": "output-available",
                                "input": (tool_inputs or {}).get(call_id),
                                "output": _output_value(item.get("output"))}
        if not name:
            part["toolName"] = "tool"
        parts.append(part)
    elif kind == "reasoning":
        parts += [{"type": "reasoning", "text": t} for t in _texts(item.get("summary"))]
    elif "role" in item:
        role = _ROLES.get(str(item["role"]), "user")
        parts += [{"type": "text", "text": t} for t in _texts(item.get("content"))]
    if _portable(item):
        metadata: dict[str, Any] = {ITEM_KEY: item}
    else:  # kept exactly as JSON text; the parts carry a cleaned copy of its words
        metadata = {ITEM_JSON_KEY: json.dumps(item, ensure_ascii=True)}
    return {"role": role, "parts": _clean(parts), "metadata": metadata}


class _Source:
    """Which parts of a stored message an item came from, to take just that item back."""

    def __init__(self, parts: list[int], output_of: int | None = None) -> None:
        self.parts = parts
        self.output_of = output_of  # the output half of one AI SDK tool part


def _stored_item(metadata: dict[str, Any]) -> dict[str, Any] | None:
    stored = metadata.get(ITEM_KEY)
    if isinstance(stored, dict):
        return stored
    text = metadata.get(ITEM_JSON_KEY)
    if isinstance(text, str):
        try:
            value = json.loads(text)
        except ValueError:
            return None
        return value if isinstance(value, dict) else None
    return None


def _message_items(message: dict[str, Any], seen_calls: set[str] | None = None
                   ) -> list[tuple[dict[str, Any], _Source]]:
    metadata = message.get("metadata") or {}
    parts = message.get("parts") or []
    stored = _stored_item(metadata)
    if stored is not None:
        if stored.get("type") == "function_call" and seen_calls is not None:
            seen_calls.add(str(stored.get("call_id")))
        return [(stored, _Source(list(range(len(parts)))))]
    seen = seen_calls if seen_calls is not None else set()
    role = message.get("role")
    out: list[tuple[dict[str, Any], _Source]] = []
    texts: list[str] = []
    text_parts: list[int] = []
    for i, part in enumerate(parts):
        kind = str(part.get("type", ""))
        if kind == "text" and isinstance(part.get("text"), str):
            texts.append(part["text"])
            text_parts.append(i)
        elif kind == "tool-call":
            seen.add(str(part.get("toolCallId")))
            out.append(({"type": "function_call", "call_id": str(part.get("toolCallId")),
                         "name": str(part.get("toolName")),
                         "arguments": json.dumps(part.get("input") or {})}, _Source([i])))
        elif kind == "tool-result":
            out.append(({"type": "function_call_output", "call_id": str(part.get("toolCallId")),
                         "output": _as_text(part.get("output"))}, _Source([i])))
        elif kind == "dynamic-tool" or (kind.startswith("tool-") and part.get("toolCallId")):
            call_id = str(part.get("toolCallId"))
            name = str(part.get("toolName") or "tool") if kind == "dynamic-tool" else kind[5:]
            state = part.get("state")
            if call_id not in seen:
                seen.add(call_id)
                out.append(({"type": "function_call", "call_id": call_id, "name": name,
                             "arguments": json.dumps(part.get("input") or {})}, _Source([i])))
            if state == "output-available" or (state is None and "output" in part):
                output = _as_text(part.get("output"))
            elif state == "output-error":
                output = str(part.get("errorText") or "Error")
            else:
                continue
            out.append(({"type": "function_call_output", "call_id": call_id, "output": output},
                        _Source([i], output_of=i)))
    if texts and role in ("user", "assistant", "system"):
        out.insert(0, ({"role": role, "content": "\n".join(texts)}, _Source(text_parts)))
    return out


def _as_text(output: Any) -> str:
    return output if isinstance(output, str) else json.dumps(output)


def message_to_items(message: dict[str, Any]) -> list[dict[str, Any]]:
    """An Arbor message as SDK input items (one, unless another client wrote it)."""
    return [item for item, _ in _message_items(message)]


def path_items(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    seen: set[str] = set()
    return [item for m in messages for item, _ in _message_items(m, seen)]


def _is_user_turn(message: dict[str, Any]) -> bool:
    item = _stored_item(message.get("metadata") or {})
    if item is not None:
        return item.get("role") == "user" and item.get("type", "message") == "message"
    return message.get("role") == "user" and not (message.get("metadata") or {}).get(
        "compaction")


def _message_text(message: dict[str, Any]) -> str:
    item = _stored_item(message.get("metadata") or {})
    if item is not None and "content" in item:
        content = item["content"]
        return content if isinstance(content, str) else "\n".join(_texts(content))
    return "\n".join(p["text"] for p in message.get("parts") or []
                     if p.get("type") == "text" and isinstance(p.get("text"), str))


def _call_id(item: dict[str, Any]) -> str:
    return str(item.get("call_id")) if item.get("type") == "function_call" else ""


def _without(message: dict[str, Any], source: _Source) -> dict[str, Any]:
    """The message with one item's parts taken out (an answered tool part goes back to
    waiting for its output)."""
    parts = []
    for i, part in enumerate(message.get("parts") or []):
        if i == source.output_of:
            part = {k: v for k, v in part.items() if k not in ("output", "errorText")}
            part["state"] = "input-available"
        elif i in source.parts:
            continue
        parts.append(part)
    return {"role": message["role"], "parts": parts, "metadata": message.get("metadata") or {}}
