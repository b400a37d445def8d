"""AnthropicClient against a fake Messages API server over loopback."""

from __future__ import annotations

import pytest

from memory_core.llm import LLMError, ToolCall
from memory_core.llm.anthropic import ANTHROPIC_VERSION, AnthropicClient

from .conftest import msg
from .fakes import FakeServer, Reply, anthropic_message, anthropic_stream
from .schemas import check_anthropic_request

KEY = "sk-ant-secret-456"
SUMMARY = "[Summary of earlier conversation]\n- the user likes tea"


def client(server: FakeServer, **options) -> AnthropicClient:
    options = {"backoff": 0.001, **options}
    return AnthropicClient(KEY, "claude-haiku-4-5", base_url=server.url, **options)


def history():
    """A summary, a finished split-form tool pair, an interrupted call, then the question."""
    return [
        msg("system", SUMMARY, compaction={"id": "c1"}),
        msg("user", "find the deploy day"),
        msg("assistant", {"type": "tool-call", "toolCallId": "toolu_1",
                          "toolName": "session_search", "input": {"query": "deploy"}}),
        msg("tool", {"type": "tool-result", "toolCallId": "toolu_1", "output": "- Friday"}),
        msg("assistant", "Friday.", {"type": "tool-set_context", "toolCallId": "toolu_2",
                                     "state": "input-available", "input": {"label": "memory"}}),
        msg("user", "thanks, and remember it"),
    ]


def test_answer_with_tool_use_and_a_valid_request(anthropic_server, tools):
    anthropic_server.script(Reply(body=anthropic_message([
        {"type": "text", "text": "Saving that."},
        {"type": "tool_use", "id": "toolu_3", "name": "set_context",
         "input": {"label": "memory", "content": "- deploy on Friday", "action": "append"}}],
        stop_reason="tool_use", input_tokens=1000, output_tokens=100)))
    response = client(anthropic_server).complete(system="PROMPT", history=history(),
                                                 tools=tools)
    assert response.text == "Saving that."
    assert response.tool_calls == [ToolCall("toolu_3", "set_context", {
        "label": "memory", "content": "- deploy on Friday", "action": "append"})]
    assert response.finish_reason == "tool_use"
    assert (response.usage.input_tokens, response.usage.output_tokens) == (1000, 100)
    assert response.usage.cost == pytest.approx((1000 * 1.0 + 100 * 5.0) / 1e6)
    request = anthropic_server.last
    assert request.path == "/v1/messages"
    assert request.headers["x-api-key"] == KEY
    assert request.headers["anthropic-version"] == ANTHROPIC_VERSION
    assert "authorization" not in request.headers
    check_anthropic_request(request.body)
    body = request.body
    assert body["model"] == "claude-haiku-4-5" and body["max_tokens"] == 1024
    assert body["system"] == "PROMPT"
    assert body["tools"] == [t.to_format("anthropic") for t in tools]
    assert body["messages"][0]["content"][0]["text"] == SUMMARY


def test_streaming_text_and_tool_use(anthropic_server, tools):
    anthropic_server.script(Reply(events=anthropic_stream([
        {"type": "text", "text": "Let me look that up."},
        {"type": "tool_use", "id": "toolu_9", "name": "session_search",
         "input": {"query": "deploy day", "limit": 5}}],
        stop_reason="tool_use", input_tokens=321, output_tokens=45)))
    events = list(client(anthropic_server).stream(system="PROMPT", history=history(),
                                                  tools=tools))
    deltas = [e.text for e in events if e.type == "text_delta"]
    assert len(deltas) > 1 and "".join(deltas) == "Let me look that up."
    calls = [e.tool_call for e in events if e.type == "tool_call"]
    assert calls == [ToolCall("toolu_9", "session_search", {"query": "deploy day", "limit": 5})]
    assert events[-1].type == "done"
    response = events[-1].response
    assert response.text == "Let me look that up." and response.tool_calls == calls
    assert response.finish_reason == "tool_use"
    assert (response.usage.input_tokens, response.usage.output_tokens) == (321, 45)
    body = anthropic_server.last.body
    check_anthropic_request(body)
    assert body["stream"] is True


def test_cached_prompt_tokens_count_as_input(anthropic_server):
    reply = anthropic_message([{"type": "text", "text": "hi"}])
    reply["usage"].update(cache_read_input_tokens=500, cache_creation_input_tokens=100)
    anthropic_server.script(Reply(body=reply))
    response = client(anthropic_server).complete(system="", history=[msg("user", "hi")],
                                                 tools=[])
    assert response.usage.input_tokens == 620
    assert "system" not in anthropic_server.last.body
    assert "tools" not in anthropic_server.last.body


def test_overloaded_is_retried_then_reported(anthropic_server):
    error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    anthropic_server.script(*[Reply(529, error) for _ in range(3)])
    with pytest.raises(LLMError) as info:
        client(anthropic_server, max_retries=2).complete(
            system="", history=[msg("user", "hi")], tools=[])
    assert info.value.status == 529
    assert "Anthropic (claude-haiku-4-5): HTTP 529: Overloaded" in info.value.detail
    assert len(anthropic_server.requests) == 3


def test_bad_request_message_is_passed_on(anthropic_server):
    anthropic_server.script(Reply(400, {"type": "error", "error": {
        "type": "invalid_request_error", "message": "messages: roles must alternate"}}))
    with pytest.raises(LLMError, match="roles must alternate"):
        client(anthropic_server).complete(system="", history=[msg("user", "hi")], tools=[])
    assert len(anthropic_server.requests) == 1


def test_error_event_in_the_stream_is_an_llm_error(anthropic_server):
    events = anthropic_stream([{"type": "text", "text": "partial answer"}])[:4]
    events.append(("error", {"type": "error", "error": {"type": "overloaded_error",
                                                        "message": "Overloaded"}}))
    anthropic_server.script(Reply(events=events))
    with pytest.raises(LLMError, match="Overloaded"):
        list(client(anthropic_server).stream(system="", history=[msg("user", "hi")], tools=[]))


def test_malformed_streamed_tool_input_keeps_the_raw_text(anthropic_server):
    events = [e for e in anthropic_stream([{"type": "tool_use", "id": "toolu_x",
                                            "name": "session_search", "input": {}}])
              if e[0] != "content_block_delta"]
    at = next(i for i, e in enumerate(events) if e[0] == "content_block_stop")
    events.insert(at, ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                               "delta": {"type": "input_json_delta",
                                                         "partial_json": '{"query": '}}))
    anthropic_server.script(Reply(events=events))
    done = list(client(anthropic_server).stream(system="", history=[msg("user", "hi")],
                                                tools=[]))[-1]
    call = done.response.tool_calls[0]
    assert call.arguments == {} and call.raw_arguments == '{"query": '
    assert call.argument_error
