"""The documented request shapes of OpenAI chat completions and Anthropic Messages, as
JSON Schemas, plus the ordering rules a schema cannot say (pairing, alternation)."""

from __future__ import annotations

import json
from typing import Any

from jsonschema import Draft202012Validator

NAME = {"type": "string", "pattern": "^[a-zA-Z0-9_-]{1,64}$"}
NON_BLANK = {"type": "string", "pattern": r"\S"}

OPENAI_MESSAGES = {
    "type": "array",
    "items": {"oneOf": [
        {"type": "object", "required": ["role", "content"], "additionalProperties": False,
         "properties": {"role": {"const": "system"}, "content": NON_BLANK,
                        "name": {"type": "string"}}},
        {"type": "object", "required": ["role", "content"], "additionalProperties": False,
         "properties": {"role": {"const": "user"}, "content": NON_BLANK,
                        "name": {"type": "string"}}},
        {"type": "object", "required": ["role"], "additionalProperties": False,
         "properties": {
             "role": {"const": "assistant"},
             "content": {"oneOf": [NON_BLANK, {"type": "null"}]},
             "tool_calls": {"type": "array", "minItems": 1, "items": {
                 "type": "object", "required": ["id", "type", "function"],
                 "additionalProperties": False,
                 "properties": {
                     "id": {"type": "string", "minLength": 1, "maxLength": 40},
                     "type": {"const": "function"},
                     "function": {"type": "object", "required": ["name", "arguments"],
                                  "additionalProperties": False,
                                  "properties": {"name": NAME,
                                                 "arguments": {"type": "string"}}}}}}},
         "anyOf": [{"required": ["tool_calls"]},
                   {"required": ["content"], "properties": {"content": NON_BLANK}}]},
        {"type": "object", "required": ["role", "tool_call_id", "content"],
         "additionalProperties": False,
         "properties": {"role": {"const": "tool"}, "tool_call_id": {"type": "string"},
                        "content": NON_BLANK}},
    ]},
}

OPENAI_REQUEST = {
    "type": "object", "required": ["model", "messages"],
    "properties": {
        "model": {"type": "string", "minLength": 1},
        "messages": {**OPENAI_MESSAGES, "minItems": 1},
        "tools": {"type": "array", "items": {
            "type": "object", "required": ["type", "function"],
            "properties": {"type": {"const": "function"}, "function": {
                "type": "object", "required": ["name", "parameters"],
                "properties": {"name": NAME, "description": {"type": "string"},
                               "parameters": {"type": "object",
                                              "properties": {"type": {"const": "object"}}}}}}}},
        "stream": {"type": "boolean"},
        "stream_options": {"type": "object",
                           "properties": {"include_usage": {"type": "boolean"}}},
    },
}

_BLOCK = {"oneOf": [
    {"type": "object", "required": ["type", "text"], "additionalProperties": False,
     "properties": {"type": {"const": "text"}, "text": NON_BLANK}},
    {"type": "object", "required": ["type", "id", "name", "input"],
     "additionalProperties": False,
     "properties": {"type": {"const": "tool_use"},
                    "id": {"type": "string", "pattern": "^[a-zA-Z0-9_-]+$"},
                    "name": NAME, "input": {"type": "object"}}},
    {"type": "object", "required": ["type", "tool_use_id"], "additionalProperties": False,
     "properties": {"type": {"const": "tool_result"},
                    "tool_use_id": {"type": "string", "pattern": "^[a-zA-Z0-9_-]+$"},
                    "content": {"oneOf": [NON_BLANK, {"type": "array"}]},
                    "is_error": {"type": "boolean"}}},
]}

ANTHROPIC_MESSAGES = {
    "type": "array",
    "items": {"type": "object", "required": ["role", "content"], "additionalProperties": False,
              "properties": {"role": {"enum": ["user", "assistant"]},
                             "content": {"oneOf": [NON_BLANK, {"type": "array", "minItems": 1,
                                                               "items": _BLOCK}]}}},
}

ANTHROPIC_REQUEST = {
    "type": "object", "required": ["model", "max_tokens", "messages"],
    "properties": {
        "model": {"type": "string", "minLength": 1},
        "max_tokens": {"type": "integer", "minimum": 1},
        "system": {"type": "string"},
        "messages": {**ANTHROPIC_MESSAGES, "minItems": 1},
        "tools": {"type": "array", "items": {
            "type": "object", "required": ["name", "input_schema"],
            "properties": {"name": NAME, "description": {"type": "string"},
                           "input_schema": {"type": "object", "required": ["type"],
                                            "properties": {"type": {"const": "object"}}}}}},
        "stream": {"type": "boolean"},
    },
}


def _validate(schema: dict[str, Any], value: Any) -> None:
    errors = sorted(Draft202012Validator(schema).iter_errors(value), key=str)
    assert not errors, "\n".join(f"{list(e.absolute_path)}: {e.message}" for e in errors[:5])


def check_openai_messages(messages: list[dict[str, Any]]) -> None:
    """Schema, then: each assistant tool_calls group is answered right after it, once per
    call, and no tool message stands anywhere else."""
    _validate(OPENAI_MESSAGES, messages)
    i, seen = 0, set()
    while i < len(messages):
        message = messages[i]
        assert message["role"] != "tool", f"tool message {i} answers no preceding call"
        i += 1
        calls = [c["id"] for c in message.get("tool_calls", [])]
        if not calls:
            continue
        assert not seen & set(calls) and len(set(calls)) == len(calls), "repeated call id"
        seen |= set(calls)
        for call in message["tool_calls"]:
            assert isinstance(json.loads(call["function"]["arguments"]), dict)
        answered = []
        while i < len(messages) and messages[i]["role"] == "tool":
            answered.append(messages[i]["tool_call_id"])
            i += 1
        assert sorted(answered) == sorted(calls), f"calls {calls} answered by {answered}"


def check_anthropic_messages(messages: list[dict[str, Any]]) -> None:
    """Schema, then: starts with user, alternates, every tool_use answered in the next
    user turn (results first), and tool_result only there."""
    _validate(ANTHROPIC_MESSAGES, messages)
    if not messages:
        return
    assert messages[0]["role"] == "user", "first message must be a user turn"
    seen: set[str] = set()
    for k, message in enumerate(messages):
        if k:
            assert message["role"] != messages[k - 1]["role"], f"turns {k - 1},{k} same role"
        blocks = message["content"] if isinstance(message["content"], list) else []
        types = [b["type"] for b in blocks]
        uses = [b["id"] for b in blocks if b["type"] == "tool_use"]
        if message["role"] == "assistant":
            assert "tool_result" not in types
            assert not seen & set(uses) and len(set(uses)) == len(uses), "repeated tool id"
            seen |= set(uses)
        else:
            assert "tool_use" not in types
            assert types == sorted(types, key=lambda t: t != "tool_result"), \
                "tool_result blocks must come first"
        previous = messages[k - 1]["content"] if k else []
        expected = [b["id"] for b in previous if isinstance(b, dict)
                    and b["type"] == "tool_use"] if message["role"] == "user" else []
        results = [b["tool_use_id"] for b in blocks if b["type"] == "tool_result"]
        assert sorted(results) == sorted(expected), f"turn {k}: {results} vs {expected}"
    last = messages[-1]
    if last["role"] == "assistant":
        assert not any(b["type"] == "tool_use" for b in last["content"]), "unanswered tool_use"


def check_openai_request(body: dict[str, Any]) -> None:
    _validate(OPENAI_REQUEST, body)
    check_openai_messages(body["messages"])


def check_anthropic_request(body: dict[str, Any]) -> None:
    _validate(ANTHROPIC_REQUEST, body)
    check_anthropic_messages(body["messages"])
