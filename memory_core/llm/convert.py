"""Arbor histories as request bodies for OpenAI chat completions and Anthropic Messages.

Stored histories may hold interrupted turns, results whose call was deleted, tool parts in
both AI SDK forms (a `tool-<name>` part holding call and outcome, which Arbor writes; the
older split `tool-call` / `tool-result` form, read as ever), and summaries. The conversion makes every one of them a valid request:
each call is answered right after it (by its result, found anywhere later on the path, or
by a stub), orphaned results are left out, and nothing stored is changed.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..messages import Message, tool_name, tool_part_finished

STUB_RESULT = "[no result: the call was interrupted]"
DENIED_RESULT = "[no result: the call was denied]"
EMPTY_RESULT = "(empty result)"
CONTINUE_TEXT = "(The conversation continues.)"
SYSTEM_NOTE = "[System note] "
_UNWRAP_TEXT = ("text", "error-text")
_UNWRAP_JSON = ("json", "error-json")
_SAFE = re.compile(r"[^a-zA-Z0-9_-]")
MAX_ID = 40  # OpenAI rejects longer tool_call ids


@dataclass(frozen=True, slots=True)
class ToolExchange:
    """One tool call and its result (None while it has none)."""

    id: str
    name: str
    input: Any
    output: str | None
    is_error: bool = False


@dataclass(slots=True)
class _Item:
    role: str  # user, assistant, system, summary, results
    text: str = ""
    calls: list[ToolExchange] = field(default_factory=list)


def result_text(output: Any) -> str:
    """A tool output as the text a model reads: strings as they are, AI SDK wrappers
    ({type: "text"|"json", value}) unwrapped, anything else JSON-encoded."""
    if isinstance(output, Mapping) and set(output) <= {"type", "value", "providerOptions"}:
        kind, value = output.get("type"), output.get("value")
        if kind in _UNWRAP_TEXT and isinstance(value, str):
            return value
        if kind in _UNWRAP_JSON:
            output = value
        elif kind == "content" and isinstance(value, list):
            return "\n".join(str(v.get("text", "")) for v in value
                             if isinstance(v, Mapping) and v.get("type") == "text")
    if isinstance(output, str):
        return output
    return json.dumps(output, ensure_ascii=False, default=str)


def _is_error_output(part: Mapping[str, Any]) -> bool:
    output = part.get("output")
    kind = output.get("type") if isinstance(output, Mapping) else None
    return bool(part.get("isError")) or kind in ("error-text", "error-json")


def _text(part: Mapping[str, Any]) -> str | None:
    text = part.get("text")
    # Providers reject empty or whitespace-only text blocks.
    return text if part.get("type") == "text" and isinstance(text, str) and text.strip() else None


def _inline_result(part: Mapping[str, Any]) -> tuple[str, bool] | None:
    """The result held by an AI SDK tool part, if its call finished."""
    if not tool_part_finished(part):
        return None
    state = part.get("state")
    if state == "output-error" or (part.get("errorText") and "output" not in part):
        return str(part.get("errorText") or "Error"), True
    if state == "output-denied":
        return DENIED_RESULT, True
    if "output" in part and state in (None, "output-available"):
        return result_text(part["output"]), False
    return None


class _Planner:
    """Walks a path once, pairing each call with the first result after it."""

    def __init__(self, history: Sequence[Message]) -> None:
        self.history = history
        # toolCallId -> positions (message index, part index) of results: split-form
        # `tool-result` parts, and finished AI SDK tool parts that repeat an earlier
        # call's id (a writer that stores a call and, later, its output as two messages)
        self.results: dict[str, list[tuple[int, int]]] = {}
        for i, message in enumerate(history):
            for j, part in enumerate(message.parts):
                if part.get("toolCallId") is None:
                    continue
                kind = part.get("type")
                if kind == "tool-result" or (kind != "tool-call" and tool_name(part) is not None
                                             and _inline_result(part) is not None):
                    self.results.setdefault(str(part["toolCallId"]), []).append((i, j))
        self.used: set[tuple[int, int]] = set()
        self.seen_calls: set[str] = set()
        self.items: list[_Item] = []

    def plan(self) -> list[_Item]:
        for i, message in enumerate(self.history):
            if message.role == "assistant":
                self._assistant(i, message)
            elif message.role == "system":
                text = "\n".join(t for p in message.parts if (t := _text(p)))
                summary = isinstance(message.metadata.get("compaction"), Mapping)
                if text:
                    self.items.append(_Item("summary" if summary else "system", text))
            else:  # user, tool: results were pulled up to their call; the rest is orphaned
                text = "\n".join(t for p in message.parts if (t := _text(p)))
                if text:
                    self.items.append(_Item("user", text))
        return self.items

    def _assistant(self, i: int, message: Message) -> None:
        item = _Item("assistant")
        texts: list[str] = []
        for j, part in enumerate(message.parts):
            kind = part.get("type")
            text = _text(part)
            if text is not None or (kind == "step-start" and (texts or item.calls)):
                if item.calls:  # text after a call belongs to the next step
                    self._flush(item, texts)
                    item, texts = _Item("assistant"), []
                if text is not None:
                    texts.append(text)
                continue
            if kind == "tool-result" or tool_name(part) is None:
                continue
            call = self._call(i, j, part)
            if call is not None:
                item.calls.append(call)
        self._flush(item, texts)

    def _call(self, i: int, j: int, part: Mapping[str, Any]) -> ToolExchange | None:
        raw_id = part.get("toolCallId")
        if raw_id is None or str(raw_id) in self.seen_calls:
            return None  # a repeated id would make the request ambiguous
        call_id = str(raw_id)
        self.seen_calls.add(call_id)
        inline = None if part.get("type") == "tool-call" else _inline_result(part)
        if inline is None:
            inline = self._later_result(call_id, (i, j))
        output, is_error = inline if inline else (None, False)
        return ToolExchange(call_id, tool_name(part) or "tool", part.get("input"), output,
                            is_error)

    def _later_result(self, call_id: str, after: tuple[int, int]) -> tuple[str, bool] | None:
        for pos in self.results.get(call_id, ()):
            if pos > after and pos not in self.used:
                self.used.add(pos)
                part = self.history[pos[0]].parts[pos[1]]
                if part.get("type") != "tool-result":
                    return _inline_result(part)
                return result_text(part.get("output")), _is_error_output(part)
        return None

    def _flush(self, item: _Item, texts: list[str]) -> None:
        item.text = "\n".join(texts)
        if item.text or item.calls:
            self.items.append(item)
        if item.calls:
            self.items.append(_Item("results", calls=item.calls))


def tool_exchanges(history: Sequence[Message]) -> list[ToolExchange]:
    """Every tool call on the path with its result (output None when it has none yet)."""
    out: list[ToolExchange] = []
    for item in _Planner(history).plan():
        if item.role == "assistant":
            out.extend(item.calls)
    return out


class _Ids:
    """Provider-safe tool ids and names: [a-zA-Z0-9_-], bounded, distinct ids kept distinct."""

    def __init__(self) -> None:
        self.ids: dict[str, str] = {}

    def __call__(self, raw: str) -> str:
        if raw not in self.ids:
            safe = _SAFE.sub("_", raw) or "call"
            if len(safe) > MAX_ID or safe != raw or safe in self.ids.values():
                digest = hashlib.sha1(raw.encode()).hexdigest()[:10]
                safe = f"{safe[:MAX_ID - 11]}_{digest}"
            self.ids[raw] = safe
        return self.ids[raw]


def safe_tool_name(name: str) -> str:
    return (_SAFE.sub("_", name) or "tool")[:64]


def _arguments(value: Any) -> dict[str, Any]:
    if value is None:
        return {}
    return dict(value) if isinstance(value, Mapping) else {"value": value}


def _result(call: ToolExchange) -> tuple[str, bool]:
    """The text a provider gets for a call: its result, or a stub for an interrupted call."""
    if call.output is None:
        return STUB_RESULT, True
    # Whitespace-only results are refused by providers like empty ones.
    return (call.output if call.output.strip() else EMPTY_RESULT), call.is_error


def to_openai_messages(history: Sequence[Message], system: str | None = None
                       ) -> list[dict[str, Any]]:
    """An OpenAI chat-completions `messages` array: system prompt first when given,
    summaries and other system messages as system messages, tool pairs adjacent."""
    ids = _Ids()
    out: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
    for item in _Planner(history).plan():
        if item.role in ("system", "summary"):
            out.append({"role": "system", "content": item.text})
        elif item.role == "user":
            out.append({"role": "user", "content": item.text})
        elif item.role == "assistant":
            message: dict[str, Any] = {"role": "assistant", "content": item.text or None}
            if item.calls:
                message["tool_calls"] = [{
                    "id": ids(c.id), "type": "function",
                    "function": {"name": safe_tool_name(c.name),
                                 "arguments": json.dumps(_arguments(c.input),
                                                         ensure_ascii=False, default=str)},
                } for c in item.calls]
            out.append(message)
        else:
            out.extend({"role": "tool", "tool_call_id": ids(c.id), "content": _result(c)[0]}
                       for c in item.calls)
    return out


def to_anthropic_messages(history: Sequence[Message], system: str | None = None
                          ) -> tuple[str, list[dict[str, Any]]]:
    """(system, messages) for Anthropic's Messages API.

    `system` (the frozen prompt) comes first in the system text, then system messages
    that open the history. Later system messages and all summaries become user turns, so
    the prompt stays a stable cache prefix. Turns alternate, the first is a user turn, and
    every tool_use is answered by a tool_result in the next user turn.
    """
    ids = _Ids()
    items = _Planner(history).plan()
    system_parts = [system] if system else []
    while items and items[0].role == "system":
        system_parts.append(items.pop(0).text)
    turns: list[dict[str, Any]] = []
    for item in items:
        blocks: list[dict[str, Any]]
        if item.role == "assistant":
            role = "assistant"
            blocks = [{"type": "text", "text": item.text}] if item.text else []
            blocks += [{"type": "tool_use", "id": ids(c.id), "name": safe_tool_name(c.name),
                        "input": _arguments(c.input)} for c in item.calls]
        elif item.role == "results":
            role = "user"
            blocks = []
            for c in item.calls:
                content, is_error = _result(c)
                block = {"type": "tool_result", "tool_use_id": ids(c.id), "content": content}
                blocks.append({**block, "is_error": True} if is_error else block)
        else:
            role = "user"
            prefix = SYSTEM_NOTE if item.role == "system" else ""
            blocks = [{"type": "text", "text": prefix + item.text}]
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})
    for turn in turns:  # Anthropic wants tool results before any text in a user turn
        turn["content"].sort(key=lambda b: b["type"] != "tool_result")
    last = turns[-1]["content"] if turns and turns[-1]["role"] == "assistant" else []
    if last and last[-1]["type"] == "text":  # a final assistant turn may not end in spaces
        last[-1]["text"] = last[-1]["text"].rstrip()
    if turns and turns[0]["role"] == "assistant":
        turns.insert(0, {"role": "user", "content": [{"type": "text", "text": CONTINUE_TEXT}]})
    return "\n\n".join(system_parts), turns
