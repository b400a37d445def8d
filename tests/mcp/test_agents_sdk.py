"""The OpenAI Agents SDK's own MCP clients (MCPServerStdio, MCPServerStreamableHttp) on
Arbor, with a scripted model speaking the real OpenAI protocol over loopback: the model
calls set_context, the block changes, and the next run's prompt (read from the
arbor://sessions/{id}/prompt resource after the host's refresh) carries it."""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest

pytest.importorskip("agents")  # the `test` extra installs openai-agents
pytest.importorskip("mcp")  # the `mcp` extra (`make install` installs it)

from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner  # noqa: E402
from agents.mcp import MCPServerStdio, MCPServerStreamableHttp  # noqa: E402
from openai import AsyncOpenAI  # noqa: E402

from tests.live_server import ROOT, server_env  # noqa: E402
from tests.llm.fakes import FakeServer, Reply, openai_completion, openai_tool_call  # noqa: E402

from .clients import run  # noqa: E402
from .conftest import World  # noqa: E402


def mcp_server(transport: str, world: World) -> Any:
    if transport == "stdio":
        return MCPServerStdio(params={
            "command": sys.executable, "cwd": str(ROOT), "env": server_env(),
            "args": ["manage.py", "arbor_mcp", "--agent", world.agent_id,
                     "--session", world.session_id]},
            client_session_timeout_seconds=60)
    return MCPServerStreamableHttp(params={
        "url": f"{world.base}/mcp/?session={world.session_id}",
        "headers": {"Authorization": f"Bearer {world.key}"}},
        client_session_timeout_seconds=60)


def one_run(transport: str, world: World, fake: FakeServer, text: str) -> str:
    async def main() -> str:
        async with mcp_server(transport, world) as server:
            async def instructions(ctx: Any, agent: Any) -> str:
                prompt = await server.read_resource(
                    f"arbor://sessions/{world.session_id}/prompt")
                return str(prompt.contents[0].text)

            model = OpenAIChatCompletionsModel(
                model="gpt-4o-mini",
                openai_client=AsyncOpenAI(base_url=f"{fake.url}/v1", api_key="test"))
            agent = Agent(name="assistant", instructions=instructions, model=model,
                          mcp_servers=[server])
            result = await Runner.run(agent, text,
                                      run_config=RunConfig(tracing_disabled=True))
            return str(result.final_output)

    return run(main)


def system_text(body: dict[str, Any]) -> str:
    return next(m["content"] for m in body["messages"] if m["role"] in ("system", "developer"))


def test_the_model_writes_memory_and_the_next_run_sees_it(transport: str,
                                                          world: World) -> None:
    call = openai_tool_call("call_1", "set_context", json.dumps(
        {"label": "memory", "content": "The user likes green tea."}))
    with FakeServer() as fake:
        fake.script(Reply(body=openai_completion(None, tool_calls=[call],
                                                 finish_reason="tool_calls")),
                    Reply(body=openai_completion("Noted.")))
        assert one_run(transport, world, fake, "I like green tea") == "Noted."
        first, answered = (r.body for r in fake.requests)
        offered = {t["function"]["name"] for t in first["tools"]}
        assert {"set_context", "session_search", "read_history"} <= offered
        assert "green tea" not in system_text(first)
        tool_reply = next(m for m in answered["messages"] if m["role"] == "tool")
        assert "Updated memory" in str(tool_reply["content"])

        session = world.manager().get_session(world.session_id)
        assert session.get_context_block("memory").content == "The user likes green tea."
        session.refresh_system_prompt()  # the host's refresh before the next conversation

        fake.script(Reply(body=openai_completion("You like green tea.")))
        assert one_run(transport, world, fake, "What do I like?") == "You like green tea."
        assert "The user likes green tea." in system_text(fake.last.body)
