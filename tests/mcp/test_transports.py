"""Both transports with the real `mcp` client against a real server process: tools and
their schemas, writes through the engine (stored, announced), reads with dates and ids,
resources."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest
from mcp.shared.exceptions import MCPError

from sessions_app import models

from .conftest import World, open_client, run, text_of

MEMORY_TOOLS = {"set_context", "search_context", "session_search"}
AGENT_TOOLS = {"list_sessions", "read_history", "append_message", "search", "fork_session"}


def test_tools_are_listed_with_schemas_that_validate(transport: str, world: World) -> None:
    async def steps(client: Any) -> Any:
        with_session = (await client.list_tools()).tools
        return with_session

    async def main() -> Any:
        async with open_client(transport, world, world.session_id) as client:
            return await steps(client)

    tools = run(main)
    assert {t.name for t in tools} == MEMORY_TOOLS | AGENT_TOOLS
    for tool in tools:
        jsonschema.Draft202012Validator.check_schema(tool.input_schema)
        assert tool.input_schema["type"] == "object" and tool.description
    set_context = next(t for t in tools if t.name == "set_context")
    # the label enum follows the session's blocks: the read-only one is not writable
    assert set_context.input_schema["properties"]["label"]["enum"] == ["memory", "kb"]


def test_without_a_session_in_scope_only_agent_tools(transport: str, world: World) -> None:
    async def main() -> Any:
        async with open_client(transport, world) as client:
            return (await client.list_tools()).tools

    assert {t.name for t in run(main)} == AGENT_TOOLS


def test_set_context_writes_through_the_engine(transport: str, world: World) -> None:
    async def main() -> Any:
        async with open_client(transport, world, world.session_id) as client:
            return await client.call_tool("set_context", {"label": "memory",
                                                          "content": "likes green tea"})

    result = run(main)
    assert not result.is_error, text_of(result)
    assert "Updated memory" in text_of(result)
    block = world.manager().get_session(world.session_id).get_context_block("memory")
    assert block.content == "likes green tea"
    # announced like every write: a numbered event in the session's outbox
    events = models.SessionEvent.objects.filter(session_id=world.session_id,
                                                type="context.updated")
    assert [e.data["label"] for e in events] == ["memory"]
