"""Open WebUI's tool calls inside an assistant message's text, as AI SDK tool parts.

Open WebUI keeps a native tool call in the assistant's `content` as an HTML block:

    <details type="tool_calls" done="true" id="call_1" name="get_weather"
      arguments="&quot;{\\&quot;city\\&quot;: \\&quot;Lisbon\\&quot;}&quot;"
      result="&quot;18 \\u00b0C, clear&quot;" files="" embeds="&quot;&quot;">
    <summary>Tool Executed</summary>
    </details>

Attribute values are HTML-escaped JSON: `arguments` the JSON text of the call's arguments
(the model's own string, encoded once more), `result` the tool's output. A call still
running when the chat was saved has done="false" and no result. Some tools write the
result as the block's (escaped) text instead of the attribute.

Each block becomes a `dynamic-tool` part (the AI SDK's form for a tool known only at run
time: call and result in one part, state "output-available", or "input-available" with no
result), in its place among the text parts around it. A block that is not a tool call
(reasoning, code interpreter), lacks a name, or holds an attribute that is not the JSON it
should be stays text, as it was.
"""

from __future__ import annotations

import html
import re
from typing import Any

import orjson

# A details block with nothing nested: its opening tag's attributes, its summary, its text.
_BLOCK = re.compile(r"<details(\s[^<>]*)>\s*<summary>[^<]*</summary>([^<]*)</details>")
_ATTRIBUTE = re.compile(r'\s([A-Za-z_][\w-]*)="([^"]*)"')


def content_parts(content: str, message_id: str) -> list[dict[str, Any]]:
    """The parts of an assistant message's text: text, and a tool part for each tool-call
    block; one text part, unchanged, when it holds none."""
    parts: list[dict[str, Any]] = []
    at = 0
    for n, block in enumerate(_BLOCK.finditer(content), start=1):
        tool = _tool_part(block, f"{message_id}-call-{n}")
        if tool is None:
            continue
        _text(parts, content[at:block.start()])
        parts.append(tool)
        at = block.end()
    if not parts:
        return [{"type": "text", "text": content}]
    _text(parts, content[at:])
    return parts


def _text(parts: list[dict[str, Any]], text: str) -> None:
    text = text.strip()
    if text:
        parts.append({"type": "text", "text": text})


def _tool_part(block: re.Match[str], default_id: str) -> dict[str, Any] | None:
    attributes = dict(_ATTRIBUTE.findall(block.group(1)))
    name = html.unescape(attributes.get("name", "")).strip()
    if attributes.get("type") != "tool_calls" or not name:
        return None
    arguments = _json(attributes.get("arguments", '""'))
    if arguments is _BAD:
        return None
    if isinstance(arguments, str):  # the model's arguments: JSON text, usually an object
        parsed = _json(arguments, escaped=False) if arguments.strip() else {}
        arguments = arguments if parsed is _BAD else parsed  # not JSON: kept as written
    part: dict[str, Any] = {
        "type": "dynamic-tool",
        "toolCallId": html.unescape(attributes.get("id", "")).strip() or default_id,
        "toolName": name, "input": arguments}
    if attributes.get("done") == "false":
        return part | {"state": "input-available"}
    if "result" in attributes:
        output = _json(attributes["result"])
        if output is _BAD:
            return None
    else:
        output = html.unescape(block.group(2)).strip()
    return part | {"state": "output-available", "output": output}


_BAD = object()  # not the JSON an attribute should hold


def _json(value: str, *, escaped: bool = True) -> Any:
    try:
        return orjson.loads(html.unescape(value) if escaped else value)
    except orjson.JSONDecodeError:
        return _BAD
