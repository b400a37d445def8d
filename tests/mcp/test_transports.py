"""Both transports with the real `mcp` client against a real server process: tools and
their schemas, writes through the engine (stored, announced), reads with dates and ids,
resources."""

from __future__ import annotations

import json
import os
from typing import Any

import jsonschema
import pytest

pytest.importorskip("mcp")  # the `mcp` extra (`make install` installs it)

from mcp.shared.exceptions import MCPError  # noqa: E402

from sessions_app import models  # noqa: E402

from .clients import http_client, open_client, run, text_of  # noqa: E402
from .conftest import World  # noqa: E402

MEMORY_TOOLS = {"set_context", "search_context", "session_search"}
AGENT_TOOLS = {"list_sessions", "read_history", "append_message", "search", "fork_session",
               "block_history"}


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
    events = models.SessionEvent.objects.filter(session__id=world.session_id,
                                                type="context.updated")
    assert [e.data["label"] for e in events] == ["memory"]


def test_agent_tools_append_read_page_list_search_fork(transport: str, world: World) -> None:
    async def main() -> dict[str, Any]:
        out: dict[str, Any] = {}
        async with open_client(transport, world, world.session_id) as client:
            async def call(tool: str, **args: Any) -> Any:
                result = await client.call_tool(tool, args)
                assert not result.is_error, (tool, text_of(result))
                return json.loads(text_of(result))

            out["appended"] = [await call("append_message", role="user",
                                          content=f"note {i} about the zebra migration")
                               for i in range(3)]
            out["page1"] = await call("read_history", limit=2)
            out["page2"] = await call("read_history", limit=2,
                                      before_id=out["page1"]["next_before_id"])
            out["sessions"] = await call("list_sessions", limit=1)
            out["sessions2"] = await call("list_sessions", cursor=out["sessions"]["next_cursor"])
            out["search"] = await call("search", query="zebra migration")
            out["fork"] = await call("fork_session", message_id=world.first_id, name="copy")
            out["other"] = await call("read_history", session_id=world.other_session_id)
        return out

    out = run(main)
    ids = [a["message"]["id"] for a in out["appended"]]
    first = out["appended"][0]["message"]
    assert first["role"] == "user" and first["created_at"] and first["parent_id"]
    assert [m["id"] for m in out["page1"]["messages"]] == ids[1:]
    assert out["page1"]["has_more"] and out["page1"]["session_id"] == world.session_id
    assert [m["id"] for m in out["page2"]["messages"]][-1] == ids[0]
    assert out["sessions"]["next_cursor"] and len(out["sessions"]["items"]) == 1
    listed = out["sessions"]["items"] + out["sessions2"]["items"]
    assert {s["id"] for s in listed} == {world.session_id, world.other_session_id}
    assert all(s["created_at"] and s["updated_at"] for s in listed)
    hits = out["search"]["items"]
    assert {h["id"] for h in hits} == set(ids) and all(h["created_at"] for h in hits)
    assert "<mark>" not in hits[0]["snippet"]
    fork = out["fork"]["session"]
    assert fork["parent_session_id"] == world.session_id and fork["name"] == "copy"
    assert [m.id for m in world.manager().get_history(fork["id"])] == [world.first_id]
    assert out["other"]["messages"] == [] and out["other"]["has_more"] is False
    # stored through the engine: announced like every append (two seeded, three here)
    assert models.SessionEvent.objects.filter(session__id=world.session_id,
                                              type="message.appended").count() == 5


def test_resources_prompt_and_blocks(transport: str, world: World) -> None:
    async def main() -> dict[str, Any]:
        async with open_client(transport, world, world.session_id) as client:
            listed = (await client.list_resources()).resources
            templates = (await client.list_resource_templates()).resource_templates
            prompt = await client.read_resource(f"arbor://sessions/{world.session_id}/prompt")
            persona = await client.read_resource(
                f"arbor://sessions/{world.session_id}/blocks/persona")
            errors = []
            for uri in (f"arbor://sessions/{world.mallory_session_id}/prompt",
                        f"arbor://sessions/{world.session_id}/blocks/ghost",
                        "arbor://elsewhere"):
                with pytest.raises(MCPError) as caught:
                    await client.read_resource(uri)
                errors.append(caught.value.message)
        return {"listed": listed, "templates": templates, "prompt": prompt,
                "persona": persona, "errors": errors}

    out = run(main)
    uris = {str(r.uri) for r in out["listed"]}
    assert uris == {f"arbor://sessions/{world.session_id}/{tail}"
                    for tail in ("prompt", "blocks/memory", "blocks/persona", "blocks/kb")}
    assert {t.uri_template for t in out["templates"]} == {
        "arbor://sessions/{session_id}/prompt", "arbor://sessions/{session_id}/blocks/{label}"}
    prompt = out["prompt"].contents[0]
    frozen = world.manager().get_session(world.session_id).freeze_system_prompt()
    assert prompt.text == frozen and "You are a careful assistant." in prompt.text
    assert prompt.meta["frozen_at"]
    persona = out["persona"].contents[0]
    assert persona.text == "You are a careful assistant." and persona.meta["writable"] is False
    # another tenant's session answers exactly as a missing one
    assert out["errors"][0] == f"session {world.mallory_session_id} not found"
    assert "ghost" in out["errors"][1] and "arbor://sessions/" in out["errors"][2]


def test_a_write_over_http_reaches_live_subscribers(world: World, daphne_base: str) -> None:
    """The daphne that serves /mcp/ publishes the write's events to the session's
    WebSocket subscribers, as a JSON API write does."""
    import asyncio

    from websockets.asyncio.client import connect as ws_connect

    world.base = daphne_base
    ws_url = daphne_base.replace("http://", "ws://") + f"/ws/sessions/{world.session_id}/"

    async def main() -> list[dict[str, Any]]:
        async with ws_connect(ws_url, additional_headers={
                "Authorization": f"Bearer {world.key}"}) as ws:
            hello = json.loads(await asyncio.wait_for(ws.recv(), 5))
            assert hello["type"] == "subscribed", hello
            async with http_client(daphne_base, world.key, f"?session={world.session_id}"
                                   ) as client:
                await client.call_tool("set_context", {"label": "memory", "content": "tea"})
                await client.call_tool("append_message", {"role": "user", "content": "hi"})
            frames: list[dict[str, Any]] = []
            while len([f for f in frames if "seq" in f]) < 2:
                frames.append(json.loads(await asyncio.wait_for(ws.recv(), 10)))
            return [f for f in frames if "seq" in f]

    frames = run(main)
    assert [f["type"] for f in frames] == ["context.updated", "message.appended"]
    assert frames[0]["data"]["label"] == "memory"
    assert frames[1]["seq"] == frames[0]["seq"] + 1


def test_a_stdio_write_reaches_subscribers_of_a_server_through_redis(
        world: World, tmp_path: Any) -> None:
    """A stdio server is its own process: with the servers' REDIS_URL its events reach a
    daphne's live subscribers (skipped without Redis, except in CI)."""
    import asyncio

    from mcp.client.session import ClientSession
    from mcp.client.stdio import stdio_client
    from websockets.asyncio.client import connect as ws_connect

    from tests.api.test_websocket_workers import REDIS_URL, redis_reachable
    from tests.live_server import running_daphne

    from .clients import stdio_params

    if not redis_reachable():
        if os.environ.get("CI"):
            pytest.fail(f"Redis is not reachable at {REDIS_URL} (required in CI)")
        pytest.skip(f"Redis is not reachable at {REDIS_URL}")
    params = stdio_params(world.agent_id, world.session_id)
    params.env = {**(params.env or {}), "REDIS_URL": REDIS_URL}

    with running_daphne(tmp_path, env={"REDIS_URL": REDIS_URL}) as base:
        ws_url = base.replace("http://", "ws://") + f"/ws/sessions/{world.session_id}/"

        async def main() -> dict[str, Any]:
            async with ws_connect(ws_url, additional_headers={
                    "Authorization": f"Bearer {world.key}"}) as ws:
                hello = json.loads(await asyncio.wait_for(ws.recv(), 5))
                assert hello["type"] == "subscribed", hello
                async with stdio_client(params) as (read, write), \
                        ClientSession(read, write) as client:
                    await client.initialize()
                    await client.call_tool("set_context", {"label": "memory",
                                                           "content": "from stdio"})
                    while True:
                        frame = json.loads(await asyncio.wait_for(ws.recv(), 10))
                        if "seq" in frame:
                            return dict(frame)

        frame = run(main)
    assert frame["type"] == "context.updated" and frame["data"]["label"] == "memory"
