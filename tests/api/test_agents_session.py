"""ArborSession under the real OpenAI Agents SDK: Runner.run keeps its memory in Arbor.

The model is the SDK's Model interface implemented here (scripted, no network); the
session talks to a real Arbor server on loopback.
"""

from __future__ import annotations

import json
import os

import pytest

agents = pytest.importorskip("agents")  # the `test` extra installs openai-agents

from agents import Agent, ModelSettings, Runner, function_tool  # noqa: E402
from agents.models.interface import Model  # noqa: E402
from agents.usage import Usage  # noqa: E402
from openai.types.responses import (  # noqa: E402
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

from arbor_client import AsyncArborClient  # noqa: E402
from arbor_client.agents_session import ArborSession, item_to_message, message_to_items  # noqa: E402
from sessions_app.auth import create_key  # noqa: E402
from tests.conftest import make_agent  # noqa: E402

os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")
agents.set_tracing_disabled(True)


def _text(item):
    content = item.get("content")
    if isinstance(content, str):
        return content
    return "".join(p.get("text", "") for p in content or [])


class ScriptedModel(Model):
    """Answers with how many user turns it can see; "add a b" calls the add tool."""

    def __init__(self):
        self.inputs: list[list[dict]] = []

    async def get_response(self, system_instructions, input, model_settings, tools,
                           output_schema, handoffs, tracing, **kwargs):
        items = [input] if isinstance(input, str) else list(input)
        items = [{"role": "user", "content": i} if isinstance(i, str) else dict(i) for i in items]
        self.inputs.append(items)
        last = items[-1]
        n = len(self.inputs)
        if last.get("type") == "function_call_output":
            output = [_message(f"The sum is {last['output']}", n)]
        elif _text(last).startswith("add "):
            a, b = _text(last).split()[1:3]
            output = [ResponseFunctionToolCall(
                id=f"fc_{n}", call_id=f"call_{n}", type="function_call", name="add",
                arguments=json.dumps({"a": int(a), "b": int(b)}), status="completed")]
        else:
            users = [_text(i) for i in items if i.get("role") == "user"]
            output = [_message(f"I remember {len(users)} user turns: {' | '.join(users)}", n)]
        return agents.ModelResponse(output=output, usage=Usage(), response_id=None)

    def stream_response(self, *args, **kwargs):
        raise NotImplementedError


def _message(text, n):
    return ResponseOutputMessage(
        id=f"msg_{n}", type="message", role="assistant", status="completed",
        content=[ResponseOutputText(type="output_text", text=text, annotations=[])])


@function_tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@pytest.fixture
def arbor(live_server, transactional_db):
    agent = make_agent("alice", "sdk agent")
    return {"url": live_server.url, "key": create_key(agent.owner)[1], "agent_id": agent.id}


def _agent(model):
    return Agent(name="helper", instructions="Be brief.", model=model, tools=[add],
                 model_settings=ModelSettings())


async def test_runner_keeps_memory_in_arbor(arbor):
    model = ScriptedModel()
    client = AsyncArborClient(arbor["url"], arbor["key"])
    session = await ArborSession.create(arbor["agent_id"], name="sdk chat", client=client)
    first = await Runner.run(_agent(model), "My name is Ada", session=session)
    assert first.final_output == "I remember 1 user turns: My name is Ada"
    second = await Runner.run(_agent(model), "What is my name?", session=session)
    assert second.final_output == "I remember 2 user turns: My name is Ada | What is my name?"
    # A new ArborSession object over the same id (another process, say) sees it all.
    again = ArborSession(session.session_id, base_url=arbor["url"], api_key=arbor["key"])
    items = await again.get_items()
    assert [i.get("role") for i in items] == ["user", "assistant", "user", "assistant"]
    assert len(await again.get_items(limit=1)) == 1
    # ...and so does Arbor itself: a normal conversation, searchable.
    hits = (await client.search_agent(arbor["agent_id"], "Ada"))["items"]
    assert hits and hits[0]["session_id"] == session.session_id
    await client.aclose()
    again.close()
    session.close()


async def test_tool_calls_round_trip_through_arbor(arbor):
    model = ScriptedModel()
    session = await ArborSession.create(arbor["agent_id"], base_url=arbor["url"],
                                        api_key=arbor["key"])
    result = await Runner.run(_agent(model), "add 2 3", session=session)
    assert result.final_output == "The sum is 5"
    items = await session.get_items()
    assert [i.get("type", "message") for i in items] == [
        "message", "function_call", "function_call_output", "message"]
    async with AsyncArborClient(arbor["url"], arbor["key"]) as client:
        history = await client.history(session.session_id)
    # Stored as AI SDK UIMessages: the call and its output are `tool-add` parts.
    roles = [m["role"] for m in history["messages"]]
    assert roles == ["user", "assistant", "assistant", "assistant"]
    call, output = (history["messages"][i]["parts"][0] for i in (1, 2))
    assert call == {"type": "tool-add", "toolCallId": "call_1", "state": "input-available",
                    "input": {"a": 2, "b": 3}}
    assert output == {"type": "tool-add", "toolCallId": "call_1", "state": "output-available",
                      "input": {"a": 2, "b": 3}, "output": "5"}
    # The next run sends the stored call and its output back to the model unchanged.
    await Runner.run(_agent(model), "thanks", session=session)
    assert model.inputs[-1][:4] == items


async def test_pop_and_clear(arbor):
    session = await ArborSession.create(arbor["agent_id"], base_url=arbor["url"],
                                        api_key=arbor["key"])
    assert await session.pop_item() is None
    await session.add_items([{"role": "user", "content": "one"},
                             {"role": "assistant", "content": "two"}])
    assert await session.pop_item() == {"role": "assistant", "content": "two"}
    assert await session.get_items() == [{"role": "user", "content": "one"}]
    await session.clear_session()
    assert await session.get_items() == []


def test_items_written_by_other_clients_read_as_items():
    message = {"role": "assistant", "metadata": {}, "parts": [
        {"type": "text", "text": "Checking"},
        {"type": "tool-call", "toolCallId": "c1", "toolName": "lookup", "input": {"q": 1}}]}
    assert message_to_items(message) == [
        {"role": "assistant", "content": "Checking"},
        {"type": "function_call", "call_id": "c1", "name": "lookup", "arguments": '{"q": 1}'}]
    ui = {"role": "assistant", "metadata": {}, "parts": [
        {"type": "tool-lookup", "toolCallId": "c2", "state": "output-available",
         "input": {"q": 2}, "output": {"n": 1}}]}
    assert message_to_items(ui) == [
        {"type": "function_call", "call_id": "c2", "name": "lookup", "arguments": '{"q": 2}'},
        {"type": "function_call_output", "call_id": "c2", "output": '{"n": 1}'}]
    summary = {"role": "system", "metadata": {"compaction": {}}, "parts": [
        {"type": "text", "text": "[Summary of earlier conversation]\nx"}]}
    assert message_to_items(summary)[0]["role"] == "system"
    stored = item_to_message({"role": "developer", "content": [
        {"type": "input_text", "text": "rules"}]})
    assert stored["role"] == "system" and stored["parts"] == [{"type": "text", "text": "rules"}]
