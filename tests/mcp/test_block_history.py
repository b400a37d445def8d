"""Block versions through MCP (issue 32): a memory tool call over MCP is recorded as
`mcp`'s write, and block_history reads the versions and one version's diff."""

from __future__ import annotations

import json
from typing import Any

import pytest

pytest.importorskip("mcp")  # the `mcp` extra (`make install` installs it)

from .clients import open_client, run, text_of  # noqa: E402
from .conftest import World  # noqa: E402


def test_writes_are_mcp_versions_and_block_history_reads_them(transport: str,
                                                               world: World) -> None:
    async def main() -> Any:
        async with open_client(transport, world, world.session_id) as client:
            for text in ("likes tea", "likes green tea"):
                await client.call_tool("set_context", {"label": "memory", "content": text})
            page = await client.call_tool("block_history", {"label": "memory", "limit": 1})
            one = await client.call_tool("block_history", {"label": "memory", "number": 2})
            missing = await client.call_tool("block_history", {"label": "memory", "number": 9})
            return page, one, missing

    page, one, missing = run(main)
    body = json.loads(text_of(page))
    assert [v["number"] for v in body["items"]] == [2] and body["next_cursor"] == 2
    newest = body["items"][0]
    assert newest["actor"] == "mcp" and newest["actor_id"] and newest["content"] == "likes green tea"
    version = json.loads(text_of(one))["version"]
    assert "-likes tea" in version["diff"] and "+likes green tea" in version["diff"]
    assert missing.is_error and "no version 9" in text_of(missing)
