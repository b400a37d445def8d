"""The agent turn against fake OpenAI and Anthropic servers over loopback, and offline."""

from __future__ import annotations

import json

import pytest

from memory_core import SessionManager
from memory_core.llm import LLMError, OpenAICompatibleClient
from memory_core.llm.anthropic import AnthropicClient
from memory_core.llm.demo import DemoModel
from tests.llm.fakes import (
    DONE,
    FakeServer,
    Reply,
    anthropic_message,
    anthropic_stream,
    openai_chunk,
    openai_completion,
    openai_tool_call,
    openai_usage_chunk,
)
from tests.llm.schemas import check_anthropic_request, check_openai_request


@pytest.fixture
def server():
    with FakeServer() as fake:
        yield fake


def make_manager(agent, llm):
    return (SessionManager.for_agent(agent).with_llm(llm)
            .with_context("memory", description="Learned facts", max_tokens=200))


def openai(server):
    return OpenAICompatibleClient(server.url + "/v1", "sk-test", "gpt-4o-mini", backoff=0.001)


def test_plain_turn_stores_answer_with_usage(agent, server):
    server.script(Reply(body=openai_completion("Hello there", prompt_tokens=100,
                                               completion_tokens=20)))
    manager = make_manager(agent, openai(server))
    s = manager.get_session(manager.create("c").id)
    answer = s.chat("Hi!")
    assert answer.role == "assistant" and answer.text == "Hello there"
    assert answer.metadata["usage"]["input_tokens"] == 100
    assert [m.role for m in s.get_history()] == ["user", "assistant"]
    info = manager.get(s.id)
    assert (info.input_tokens, info.output_tokens) == (100, 20) and info.estimated_cost > 0
    body = server.last.body
    check_openai_request(body)
    assert body["messages"][0] == {"role": "system", "content": s.freeze_system_prompt()}
    assert {t["function"]["name"] for t in body["tools"]} == {"set_context", "session_search"}


def test_tool_loop_executes_tools_and_stores_every_step(agent, server):
    args = json.dumps({"label": "memory", "content": "- likes tea", "action": "append"})
    server.script(
        Reply(body=openai_completion(None, tool_calls=[openai_tool_call("call_1", "set_context", args)],
                                     finish_reason="tool_calls")),
        Reply(body=openai_completion("Saved that you like tea.")),
    )
    manager = make_manager(agent, openai(server))
    s = manager.get_session(manager.create("c").id)
    answer = s.chat("Remember that I like tea")
    assert answer.text == "Saved that you like tea."
    roles = [m.role for m in s.get_history()]
    assert roles == ["user", "assistant", "assistant"]
    # The call and its result: one AI SDK tool part on the assistant message.
    call = s.get_history()[1].parts[0]
    assert call.pop("output").startswith("Updated memory")
    assert call == {"type": "tool-set_context", "toolCallId": "call_1", "state": "output-available",
                    "input": {"label": "memory", "content": "- likes tea", "action": "append"}}
    assert s.get_context_block("memory").content == "- likes tea"
    second = server.requests[1].body
    check_openai_request(second)
    assert second["messages"][-1]["role"] == "tool" and second["messages"][-1]["tool_call_id"] == "call_1"
    assert manager.get(s.id).input_tokens == 22  # two calls of 11 prompt tokens


def test_malformed_tool_arguments_become_an_error_result(agent, server):
    server.script(
        Reply(body=openai_completion(None, tool_calls=[openai_tool_call("c", "set_context", "{oops")],
                                     finish_reason="tool_calls")),
        Reply(body=openai_completion("Sorry.")),
    )
    manager = make_manager(agent, openai(server))
    s = manager.get_session(manager.create("c").id)
    s.chat("remember x")
    result = s.get_history()[1].parts[0]
    assert result["state"] == "output-error" and result["errorText"].startswith("Error:")
    assert s.get_context_block("memory").content == ""


def test_regenerate_under_the_same_parent_makes_a_branch(agent, server):
    server.script(Reply(body=openai_completion("first")), Reply(body=openai_completion("second")))
    manager = make_manager(agent, openai(server))
    s = manager.get_session(manager.create("c").id)
    first = s.chat("Tell me a joke")
    question = s.get_history()[0]
    second = s.chat("Tell me a joke", parent_id=question.parent_id)
    assert first.id != second.id
    assert len(s.get_tree()) == 4 and s.get_latest_leaf().id == second.id


def test_streaming_yields_deltas_and_upserts_the_growing_message(agent, server, monkeypatch):
    import memory_core.chat as chat_module

    monkeypatch.setattr(chat_module, "UPSERT_EVERY_SECONDS", 0.0)
    server.script(Reply(events=[openai_chunk({"role": "assistant", "content": "Hel"}),
                                openai_chunk({"content": "lo "}), openai_chunk({"content": "world"}),
                                openai_chunk({}, finish_reason="stop"),
                                openai_usage_chunk(30, 3), DONE]))
    manager = make_manager(agent, openai(server))
    s = manager.get_session(manager.create("c").id)
    seen_texts = []
    original = s.upsert_message

    def spy(message, parent_id=None):
        seen_texts.append(message["parts"][0]["text"] if message["parts"] else "")
        return original(message, parent_id)

    monkeypatch.setattr(s, "upsert_message", spy)
    events = list(s.chat("Hi", stream=True))
    assert [e["text"] for e in events if e["type"] == "text_delta"] == ["Hel", "lo ", "world"]
    done = events[-1]
    assert done["type"] == "done" and done["message"].text == "Hello world"
    assert seen_texts[:3] == ["Hel", "Hello ", "Hello world"]  # grows in storage
    assert len([m for m in s.get_history() if m.role == "assistant"]) == 1
    assert server.last.body["stream"] is True


def test_failed_model_call_keeps_the_user_message(agent, server):
    server.script(*[Reply(status=500, body={"error": {"message": "overloaded"}})] * 4)
    manager = make_manager(agent, openai(server))
    s = manager.get_session(manager.create("c").id)
    with pytest.raises(LLMError) as err:
        s.chat("Are you there?")
    assert err.value.status == 500
    assert [m.text for m in s.get_history()] == ["Are you there?"]


def test_interrupted_turn_is_sent_with_a_stub_result(agent, server):
    server.script(Reply(body=openai_completion("recovered")))
    manager = make_manager(agent, openai(server))
    s = manager.get_session(manager.create("c").id)
    s.append_message({"role": "user", "content": "look it up"})
    s.append_message({"role": "assistant", "parts": [{"type": "tool-call", "toolCallId": "dangling",
                                                      "toolName": "session_search", "input": {"query": "x"}}]})
    s.chat("hello?")
    body = server.last.body
    check_openai_request(body)
    tool_messages = [m for m in body["messages"] if m["role"] == "tool"]
    assert tool_messages and tool_messages[0]["tool_call_id"] == "dangling"


def test_anthropic_tool_loop_and_streaming(agent, server):
    args = {"label": "memory", "content": "- vegetarian", "action": "append"}
    server.script(
        Reply(body=anthropic_message([{"type": "tool_use", "id": "tu_1", "name": "set_context",
                                       "input": args}], stop_reason="tool_use")),
        Reply(body=anthropic_message([{"type": "text", "text": "Saved."}])),
        Reply(events=anthropic_stream([{"type": "text", "text": "Noted: vegetarian."}])),
    )
    llm = AnthropicClient("ak-test", "claude-haiku-4-5", base_url=server.url, backoff=0.001)
    manager = make_manager(agent, llm)
    s = manager.get_session(manager.create("c").id)
    s.chat("I am vegetarian, remember it")
    assert s.get_context_block("memory").content == "- vegetarian"
    events = list(s.chat("thanks", stream=True))
    assert events[-1]["message"].text == "Noted: vegetarian."
    for request in server.requests:
        check_anthropic_request(request.body)
    assert server.requests[0].headers["x-api-key"] == "ak-test"


def test_offline_demo_model_remembers_and_recalls(agent):
    manager = make_manager(agent, DemoModel())
    s = manager.get_session(manager.create("c").id)
    s.chat("Remember that my cat is called Miso")
    assert "Miso" in s.get_context_block("memory").content
    answer = s.chat("What do you remember?")
    assert "Miso" in answer.text
    assert any(p.get("type") == "tool-set_context" and p["state"] == "output-available"
               for m in s.get_history() for p in m.parts)


def test_chat_rejects_empty_content(agent):
    from memory_core import InvalidInput
    manager = make_manager(agent, DemoModel())
    s = manager.get_session(manager.create("c").id)
    with pytest.raises(InvalidInput):
        s.chat("   ")
    assert s.get_history() == []


@pytest.mark.django_db(transaction=True)
async def test_async_chat_and_stream(agent):
    manager = make_manager(agent, DemoModel())
    info = await manager.acreate("async")
    s = await manager.aget_session(info.id)
    answer = await s.achat("Remember that I live in Porto")
    assert answer.role == "assistant"
    events = [e async for e in await s.achat("What do you remember?", stream=True)]
    assert events[-1]["type"] == "done" and "Porto" in events[-1]["message"].text
    # The shared sync thread keeps its own connection; close it so teardown can drop the DB.
    from asgiref.sync import sync_to_async
    from django.db import connection

    await sync_to_async(lambda: connection.close())()
