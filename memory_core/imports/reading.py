"""From bytes to conversations: JSON of any depth, JSON Lines, and which format a file
is in when the caller does not say."""

from __future__ import annotations

import io
from collections.abc import Iterable, Iterator
from typing import Any

import ijson  # type: ignore[import-untyped]
import orjson

from . import chatgpt, claude, librechat, openwebui, pi
from .tree import BadExport, Conversation


class NotJson(BadExport):
    """A file that is not JSON (nor JSON Lines) at all."""

    code = "invalid_json"

FORMATS = ("chatgpt", "claude", "openwebui", "librechat", "pi")
_BY_ITEM = {"chatgpt": chatgpt.conversation, "claude": claude.conversation,
            "openwebui": openwebui.conversation, "librechat": librechat.conversation}


def loads(body: bytes | str) -> Any:
    """One JSON value of any nesting depth. orjson stops at 1024 levels, and LibreChat's
    tree form nests two levels per message: deeper files go through ijson's iterative
    builder, which keeps its stack on the heap."""
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        if not any(w in str(exc).lower() for w in ("depth", "recursion")):
            raise NotJson(f"the file is not JSON: {exc}", field="body") from None
    data = body.encode() if isinstance(body, str) else body
    try:
        return next(ijson.items(io.BytesIO(data), "", use_float=True))
    except (ijson.JSONError, StopIteration) as exc:
        raise NotJson(f"the file is not JSON: {exc}", field="body") from None


def lines(body: bytes | Iterable[bytes]) -> list[Any]:
    """JSON Lines: one value per non-blank line."""
    source = body.splitlines() if isinstance(body, bytes) else body
    out = []
    for n, line in enumerate(source, start=1):
        if line.strip():
            try:
                out.append(orjson.loads(line))
            except orjson.JSONDecodeError as exc:
                raise NotJson(f"line {n} is not JSON: {exc}", field=f"line {n}") from None
    return out


def detect(value: Any) -> str:
    """The format of a parsed file, by the fields only that format has: arbor,
    chatgpt, claude, openwebui, librechat or pi. Raises BadExport."""
    if isinstance(value, dict) and ("format" in value or "session" in value):
        return "arbor"
    first = value[0] if isinstance(value, list) and value else value
    if isinstance(first, dict):
        chat = first.get("chat")
        if "mapping" in first:
            return "chatgpt"
        if "chat_messages" in first:
            return "claude"
        if "history" in first or isinstance(chat, dict) and "history" in chat:
            return "openwebui"
        if "conversationId" in first and ("messages" in first or "messagesTree" in first):
            return "librechat"
        if first.get("type") == "session":
            return "pi"
    if isinstance(value, dict):
        return "arbor"  # Arbor's own document, whose checks name what is missing
    raise BadExport("could not tell the file's format: expected an export of ChatGPT "
                    "(conversations.json), Claude, Open WebUI, LibreChat, a Pi session "
                    "(.jsonl) or an Arbor session document; name it with format=",
                    field="format")


def read(body: bytes, fmt: str = "auto", *, ndjson: bool = False) -> tuple[str, Any]:
    """(format, parsed value) of a whole file; fmt "auto" detects it. For pi the value is
    the list of lines. Raises BadExport for a file that is not JSON (or JSON Lines)."""
    if fmt == "pi" or (ndjson and fmt == "auto"):
        return "pi", lines(body)
    try:
        value = loads(body)
    except NotJson:
        if fmt != "auto":
            raise
        if not body.lstrip().startswith(b"{"):
            raise
        return "pi", lines(body)  # JSON Lines: the only format that is not one JSON value
    found = detect(value) if fmt == "auto" else fmt
    return found, [value] if found == "pi" else value


def conversations(fmt: str, value: Any) -> Iterator[Conversation]:
    """Each conversation of a parsed file, in file order, checked as it is read."""
    if fmt == "pi":
        yield pi.conversation(value)
        return
    parse = _BY_ITEM[fmt]
    items = value if isinstance(value, list) else [value]
    for i, item in enumerate(items):
        yield parse(item, i)


def stream(file: Any, fmt: str = "auto") -> tuple[str, Iterator[Conversation]]:
    """(format, conversations) of a file object opened in binary mode, read as it goes:
    a top-level list (ChatGPT, Claude, Open WebUI exports run to hundreds of megabytes)
    one conversation at a time; one object or JSON Lines whole (a session, a chat)."""
    head = file.read(4096)
    file.seek(0)
    start = head.lstrip()[:1]
    if fmt == "pi" or (fmt == "auto" and start == b"{" and b"\n{" in head.strip()):
        return "pi", iter([pi.conversation(lines(file))])
    if start != b"[":
        found, value = read(file.read(), fmt)
        return found, conversations(found, value)
    items = ijson.items(file, "item", use_float=True)
    try:
        first = next(items)
    except StopIteration:
        return (fmt if fmt != "auto" else "chatgpt"), iter(())
    except ijson.JSONError as exc:
        raise NotJson(f"the file is not JSON: {exc}", field="body") from None
    found = detect([first]) if fmt == "auto" else fmt
    if found in ("arbor", "pi"):
        raise BadExport(f"a {found} file is not a list; import it through the API",
                        field="format")
    return found, _numbered(found, first, items)


def _numbered(fmt: str, first: Any, rest: Iterator[Any]) -> Iterator[Conversation]:
    parse = _BY_ITEM[fmt]
    yield parse(first, 0)
    try:
        for i, item in enumerate(rest, start=1):
            yield parse(item, i)
    except ijson.JSONError as exc:
        raise NotJson(f"the file is not JSON: {exc}", field="body") from None
