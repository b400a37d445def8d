"""Fixtures for the LLM layer: messages built in memory, tools, fake servers. No database."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from memory_core.messages import Message
from memory_core.tools import Tool, session_search_tool

from .fakes import FakeServer

_ids = itertools.count()
_START = datetime(2025, 1, 1, tzinfo=UTC)


def msg(role: str, *parts: dict[str, Any] | str, **metadata: Any) -> Message:
    """A stored-looking Message; plain strings become text parts."""
    full = [{"type": "text", "text": p} if isinstance(p, str) else p for p in parts]
    n = next(_ids)
    return Message(f"m{n}", None, role, full, metadata, _START + timedelta(seconds=n))


def memory_tool(saved: list[str] | None = None) -> Tool:
    """A set_context tool over a 'memory' block, as a session with one would offer."""
    store = saved if saved is not None else []

    def run(args: Any) -> str:
        store.append(args["content"])
        return "Updated memory: 12/1100 tokens (1%) used."

    return Tool("set_context", "Write to a context block.", {
        "type": "object",
        "properties": {
            "label": {"type": "string", "enum": ["memory", "todos"]},
            "content": {"type": "string"},
            "action": {"type": "string", "enum": ["replace", "append"]},
        },
        "required": ["label", "content"], "additionalProperties": False,
    }, run)


def search_tool() -> Tool:
    return session_search_tool(lambda query, limit, scope: [])


@pytest.fixture
def tools() -> list[Tool]:
    return [memory_tool(), search_tool()]


@pytest.fixture
def openai_server() -> Iterator[FakeServer]:
    with FakeServer() as server:
        yield server


@pytest.fixture
def anthropic_server() -> Iterator[FakeServer]:
    with FakeServer() as server:
        yield server
