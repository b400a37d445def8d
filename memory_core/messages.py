"""Messages and sessions as values; turning caller input into a storable message."""

from __future__ import annotations

import os
import re
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any, NamedTuple

import orjson

from .errors import InvalidInput
from .limits import NUL
from .message_rules import CheckedMessage, check_message


class Message(NamedTuple):
    """A stored message. A tuple, so reading a 10,000-message path stays cheap."""

    id: str
    parent_id: str | None
    role: str
    parts: list[dict[str, Any]]
    metadata: dict[str, Any]
    created_at: datetime

    @property
    def text(self) -> str:
        """The plain-text projection of the parts (search, previews, token estimates):
        derived when asked, not stored, so a long read builds no strings it may not use."""
        return project_text(self.parts)

    def __getitem__(self, key: Any) -> Any:
        # m["id"] reads like the JSON shape; m[0] still works as for any tuple.
        if isinstance(key, str):
            try:
                return getattr(self, key)
            except AttributeError:
                raise KeyError(key) from None
        return tuple.__getitem__(self, key)

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape of SPEC §9."""
        return {
            "id": self.id,
            "parent_id": self.parent_id,
            "role": self.role,
            "parts": self.parts,
            "metadata": self.metadata,
            "created_at": iso(self.created_at),
        }


def iso(at: datetime) -> str:
    """at.isoformat(): for a UTC time (what Arbor keeps), orjson's spelling, the same text
    in a third of the time (a bulk write's events spell one a message)."""
    return orjson.dumps(at).decode()[1:-1] if at.tzinfo is UTC else at.isoformat()


class Mappable:
    """Lets frozen values be read as `value["field"]` too, like the JSON they mirror."""

    __slots__ = ()

    def __getitem__(self, key: str) -> Any:
        if key.startswith("_") or key not in self.__dataclass_fields__:  # type: ignore[attr-defined]
            raise KeyError(key)
        return getattr(self, key)


@dataclass(frozen=True, slots=True)
class SessionInfo(Mappable):
    """A session's registry row."""

    id: str
    agent_id: str
    name: str
    parent_session_id: str | None
    model: str | None
    source: str | None
    input_tokens: int
    output_tokens: int
    estimated_cost: float
    end_reason: str | None
    message_count: int
    created_at: datetime
    updated_at: datetime
    status: str = "idle"
    pinned: bool = False  # never removed by a retention policy

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["created_at"] = self.created_at.isoformat()
        data["updated_at"] = self.updated_at.isoformat()
        return data


class NewMessage(NamedTuple):
    """A validated message ready for storage; everything derived is computed once here.
    A tuple, as Message and CheckedMessage: one is made for every message of a bulk
    write."""

    id: str
    role: str
    parts: list[dict[str, Any]]
    metadata: dict[str, Any]
    parts_json: str
    metadata_json: str
    text: str
    created_at: datetime
    id_given: bool

    def same_content(self, stored: Message) -> bool:
        return (
            stored.role == self.role
            and stored.parts == self.parts
            and stored.metadata == self.metadata
        )

    def tool_result_ids(self) -> list[str]:
        """toolCallIds of split-form results whose call must be looked up for indexing."""
        return [
            str(p["toolCallId"])
            for p in self.parts
            if p.get("type") == "tool-result" and p.get("toolCallId") is not None
        ]

    def to_message(self, parent_id: str | None) -> Message:
        return Message(self.id, parent_id, self.role, self.parts, self.metadata, self.created_at)


# Ids made ahead, 256 at a time: one os.urandom call (a system call, ~10 µs on a busy
# machine) for many ids, where a bulk write makes one per message. A forked child starts
# with none, so no two processes hand out the same id.
_IDS: deque[str] = deque()
os.register_at_fork(after_in_child=_IDS.clear)


def _more_ids(n: int = 256) -> list[str]:
    raw = bytearray(os.urandom(16 * n))
    raw[6::16] = bytes(b & 0x0F | 0x40 for b in raw[6::16])  # version 4
    raw[8::16] = bytes(b & 0x3F | 0x80 for b in raw[8::16])  # RFC 4122 variant
    text = raw.hex()
    return [text[i:i + 32] for i in range(0, len(text), 32)]


def new_id() -> str:
    """A random (version 4) UUID's 32 hex digits, as uuid.uuid4().hex spells them."""
    try:
        return _IDS.popleft()  # (atomic: threads never get the same one)
    except IndexError:
        ids = _more_ids()
        _IDS.extend(ids[1:])
        return ids[0]


def now() -> datetime:
    return datetime.now(UTC)


def dumps(value: Any, what: str) -> str:
    """JSON text for storage. Rejects what JSON or the databases cannot hold."""
    try:
        return orjson.dumps(value).decode()
    except (orjson.JSONEncodeError, TypeError) as exc:
        raise InvalidInput(f"{what} cannot be stored as JSON: {exc}") from exc


MAX_TOOL_OUTPUT_CHARS = 100_000
TOOL_OUTPUT_PREVIEW_CHARS = 2_000


def _shrink_tool_outputs(parts: list[dict[str, Any]], limit: int) -> list[dict[str, Any]]:
    """Store an oversized tool output as a preview plus a note to re-run the tool."""
    out = []
    for part in parts:
        if "output" in part and part.get("type") != "text":
            output = part["output"]
            text = output if isinstance(output, str) else dumps(output, "tool output")
            if len(text) > limit:
                part = {**part, "output": _preview(text, limit)}
        out.append(part)
    return out


def _preview(text: str, limit: int) -> str:
    """At most `limit` characters: the start of the output plus a note that it was cut.

    Under tiny limits the long note gives way to a short one, and below that to a bare
    cut: the stored form never exceeds the limit.
    """
    notes = (f"\n[tool output truncated: {len(text)} characters, over the "
             f"{limit}-character limit; re-run the tool to see all of it]", "\n[truncated]")
    for note in notes:
        room = limit - len(note)
        if room > 0:
            return text[:min(room, TOOL_OUTPUT_PREVIEW_CHARS)] + note
    return text[:limit]


def prepare(
    message: Message | Mapping[str, Any] | CheckedMessage, *, keep_created_at: bool = False,
    max_tool_output: int = MAX_TOOL_OUTPUT_CHARS,
) -> NewMessage:
    """Caller input (a Message, a dict of its shape, or a CheckedMessage) as a NewMessage.

    Raises InvalidInput for a wrong shape (see check_message; a CheckedMessage has passed
    it already). A dict may give `content` (a string) instead of `parts`.
    """
    checked = message if isinstance(message, CheckedMessage) else check_message(message)
    message_id, id_given = (checked.id, True) if checked.id is not None else (new_id(), False)
    created_at = (checked.created_at if keep_created_at and checked.created_at is not None
                  else now())

    parts = _shrink_tool_outputs(checked.parts, max_tool_output)
    parts_json = dumps(parts, "parts")
    metadata_json = dumps(checked.metadata, "metadata")
    metadata = checked.metadata
    if not checked.from_json:
        # Round-trip so what we compare and return is exactly what a read returns (a
        # request body's values already are: decoded from JSON, they need no second pass).
        parts = orjson.loads(parts_json)
        metadata = orjson.loads(metadata_json)
    return NewMessage(
        id=message_id,
        role=checked.role,
        parts=parts,
        metadata=metadata,
        parts_json=parts_json,
        metadata_json=metadata_json,
        text=project_text(parts),
        created_at=created_at,
        id_given=id_given,
    )


def tool_name(part: Mapping[str, Any]) -> str | None:
    kind = part.get("type", "")
    if kind == "dynamic-tool" or kind in ("tool-call", "tool-result"):
        name = part.get("toolName")
        return str(name) if name else None
    if isinstance(kind, str) and kind.startswith("tool-"):
        return kind[5:]
    return None


def flatten(value: Any) -> str:
    """The words inside a JSON value: strings and numbers, keys left out."""
    out: list[str] = []
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            out.append(item)
        elif isinstance(item, bool) or item is None:
            continue
        elif isinstance(item, int | float):
            out.append(str(item))
        elif isinstance(item, dict):
            stack.extend(reversed(list(item.values())))
        elif isinstance(item, list):
            stack.extend(reversed(item))
    return " ".join(out)


LABELLED_DEPTH = 16  # nesting read with keys; deeper values are read as flatten() does


def labelled(value: Any, depth: int = 0) -> str:
    """A JSON value as words with their keys ("unhealthy hosts chk-node-7"): what a tool's
    input or output says, for a model that reads meaning (keys in snake or camel case
    read as words)."""
    if depth >= LABELLED_DEPTH:
        return flatten(value)
    if isinstance(value, dict):
        return ", ".join(f"{_key_words(k)} {labelled(v, depth + 1)}".strip()
                         for k, v in value.items() if v not in (None, "", [], {}))
    if isinstance(value, list):
        return ", ".join(labelled(v, depth + 1) for v in value)
    if isinstance(value, bool):
        return "yes" if value else "no"
    return "" if value is None else str(value)


def _key_words(key: Any) -> str:
    return re.sub(r"(?<=[a-z])(?=[A-Z])", " ", str(key)).replace("_", " ").replace("-", " ")


def project_text(parts: Iterable[Mapping[str, Any]], *, keys: bool = False) -> str:
    """Plain text of a message, for search, previews and token estimates; with `keys`,
    tool inputs and outputs keep their keys (labelled(): the text embedded for search by
    meaning)."""
    values = labelled if keys else flatten
    chunks: list[str] = []
    for part in parts:
        if not isinstance(part, Mapping):
            continue
        kind = part.get("type")
        if kind in ("text", "reasoning"):
            text = part.get("text")
            if isinstance(text, str):
                chunks.append(text)
            continue
        name = tool_name(part)
        if name is None and kind != "tool-result":
            continue
        pieces = [name or ""]
        if "input" in part:
            pieces.append(values(part["input"]))
        if "output" in part:
            pieces.append(values(part["output"]))
        if part.get("errorText"):
            pieces.append(str(part["errorText"]))
        chunks.append(" ".join(p for p in pieces if p))
    # Postgres text columns cannot hold NUL; a space keeps the words apart.
    return "\n".join(chunks).replace(NUL, " ")


FINISHED_STATES = ("output-available", "output-error", "output-denied")


def tool_part_finished(part: Mapping[str, Any]) -> bool:
    """An AI SDK tool part that holds its call's outcome: an output, an error or a denial
    (compaction and the model-input converter agree on this)."""
    return (part.get("state") in FINISHED_STATES or "output" in part
            or bool(part.get("errorText")))


def tool_calls_in(parts: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """toolCallId -> 'name input words' for every call in these parts."""
    calls: dict[str, str] = {}
    for part in parts:
        if part.get("type") == "tool-result":
            continue
        name = tool_name(part)
        call_id = part.get("toolCallId")
        if name is None or call_id is None:
            continue
        calls[str(call_id)] = f"{name} {flatten(part.get('input'))}".strip()
    return calls
