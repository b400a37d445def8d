"""The rules a message must meet, each checked once: role, parts or content, the fields
of known part types, metadata and id. The API schema checks JSON types only and hands
the engine what check_message returns, so no rule runs twice on the way to the row."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from itertools import chain
from typing import Any, NamedTuple

from .errors import InvalidInput
from .limits import MAX_ID_LENGTH, ROLES, is_id


class CheckedMessage(NamedTuple):
    """Caller input that met every message rule; prepare() derives the rest from it. A
    tuple, as Message: one is made for every message of a bulk write, where a frozen
    dataclass's __init__ cost 1.2 µs."""

    role: str
    parts: list[dict[str, Any]]
    metadata: dict[str, Any]
    id: str | None  # None: Arbor makes one
    created_at: datetime | None = None
    from_json: bool = False  # values as decoded from JSON text (check_message)

    def with_id(self, raw_id: Any) -> CheckedMessage:
        """The same message under another id (e.g. the one in a URL)."""
        return self._replace(id=_message_id(raw_id))


def check_message(message: Any, *, from_json: bool = False) -> CheckedMessage:
    """Raise InvalidInput (with `field` naming the field, when one is at fault) unless the
    message (a Message or a dict of its shape) meets every rule. from_json: its values
    are just decoded from JSON text (a request body), so storing them needs no round
    trip through JSON to become what a read returns."""
    # (a dict first: hasattr() on one raises and catches inside, 0.3 µs a message)
    data = message if type(message) is dict else (
        message._asdict() if hasattr(message, "_asdict") else message)
    if not isinstance(data, dict) and not isinstance(data, Mapping):
        raise InvalidInput("message must be an object with role and parts")
    role = data.get("role")
    if not isinstance(role, str) or role not in ROLES:
        raise InvalidInput(f"role must be one of {', '.join(ROLES)} (got {role!r})", field="role")
    parts = _parts_of(data)
    check_parts(parts)
    metadata = data.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        raise InvalidInput("metadata must be an object", field="metadata")
    created_at = data.get("created_at")
    return CheckedMessage(role=role, parts=parts, metadata=metadata or {},
                          id=_message_id(data.get("id")),
                          created_at=created_at if isinstance(created_at, datetime) else None,
                          from_json=from_json)


def _message_id(raw_id: Any) -> str | None:
    if raw_id is None or raw_id == "":
        return None
    if is_id(raw_id) and raw_id.strip() == raw_id:
        return raw_id
    raise InvalidInput(f"id must be a string of 1 to {MAX_ID_LENGTH} characters without "
                       "surrounding spaces", field="id")


def _parts_of(data: Mapping[str, Any]) -> Any:
    """The parts given, or one text part made from the `content` shorthand."""
    if data.get("content") is None:
        if data.get("parts") is None:
            raise InvalidInput("give parts (a list) or content (a string)")
        return data.get("parts")
    if data.get("parts") is not None:
        raise InvalidInput("give parts or content, not both")
    if not isinstance(data["content"], str):
        raise InvalidInput("content must be a string (the text of one text part)",
                           field="content")
    return [{"type": "text", "text": data["content"]}]


# Fields whose type is unambiguous, per known part type (AI SDK UIMessage parts and
# SPEC §1's split tool form): (required, optional) field -> the JSON type it must have.
_STR = (str, "a string")
_OBJ = (dict, "an object")
_BOOL = (bool, "a boolean")
FieldRules = tuple[dict[str, tuple[type, str]], dict[str, tuple[type, str]]]
_TOOL_OPTIONAL = {"state": _STR, "errorText": _STR, "providerExecuted": _BOOL,
                  "callProviderMetadata": _OBJ}
PART_FIELDS: dict[str, FieldRules] = {
    "text": ({"text": _STR}, {"state": _STR, "providerMetadata": _OBJ}),
    "reasoning": ({"text": _STR}, {"state": _STR, "providerMetadata": _OBJ}),
    "tool-call": ({"toolCallId": _STR, "toolName": _STR}, {}),
    "tool-result": ({"toolCallId": _STR}, {"toolName": _STR, "isError": _BOOL}),
    "dynamic-tool": ({"toolCallId": _STR, "toolName": _STR}, _TOOL_OPTIONAL),
    "source-url": ({"sourceId": _STR, "url": _STR}, {"title": _STR, "providerMetadata": _OBJ}),
    "source-document": ({"sourceId": _STR, "mediaType": _STR, "title": _STR},
                        {"filename": _STR, "providerMetadata": _OBJ}),
    "file": ({"mediaType": _STR, "url": _STR}, {"filename": _STR, "providerMetadata": _OBJ}),
    "step-start": ({}, {}),
}
_NAMED_TOOL: FieldRules = ({"toolCallId": _STR}, _TOOL_OPTIONAL)  # tool-<name>
_DATA: FieldRules = ({}, {"id": _STR})  # data-<name>


def _rules_for(kind: str) -> FieldRules | None:
    if kind in PART_FIELDS:
        return PART_FIELDS[kind]
    if kind.startswith("tool-") and len(kind) > 5:
        return _NAMED_TOOL
    if kind.startswith("data-") and len(kind) > 5:
        return _DATA
    return None  # unknown types are stored unchanged


def check_parts(parts: Any) -> None:
    """Raise InvalidInput, naming the part and field, unless every known part is well typed."""
    if not isinstance(parts, list):
        raise InvalidInput("parts must be a list of objects", field="parts")
    for i, part in enumerate(parts):
        if not isinstance(part, dict) or not isinstance(part.get("type"), str):
            raise InvalidInput(f"parts[{i}] must be an object with a string 'type'", field="parts")
        rules = _rules_for(part["type"])
        if rules is not None:
            _check_fields(i, part, rules)


def _check_fields(i: int, part: dict[str, Any], rules: FieldRules) -> None:
    required, optional = rules
    for field, (_kind, name) in required.items():
        if field not in part:
            raise InvalidInput(f"parts[{i}] ({part['type']}) needs '{field}', {name}",
                               field="parts")
    for field, (kind, name) in chain(required.items(), optional.items()):  # (no merged copy)
        value = part.get(field)
        if field in part and not isinstance(value, kind) and not (field in optional and value is None):
            raise InvalidInput(f"parts[{i}].{field} must be {name} "
                               f"(got {type(value).__name__})", field="parts")


