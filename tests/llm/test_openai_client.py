"""OpenAICompatibleClient against a fake chat-completions server over loopback."""

from __future__ import annotations

import socket

import pytest

from memory_core.llm import LLMError, OpenAICompatibleClient, ToolCall, Usage, cost

from .conftest import msg
from .fakes import (
    DONE,
    FakeServer,
    Reply,
    openai_chunk,
    openai_completion,
    openai_tool_call,
    openai_usage_chunk,
)
from .schemas import check_openai_request

KEY = "sk-test-secret-123"


def client(server: FakeServer, **options) -> OpenAICompatibleClient:
    options = {"backoff": 0.001, **options}
    return OpenAICompatibleClient(server.url + "/v1", KEY, "gpt-4o-mini", **options)


def ask(llm, tools=(), text="hi"):
    return llm.complete(system="PROMPT", history=[msg("user", text)], tools=list(tools))


def stream(llm, tools=(), text="hi"):
    return list(llm.stream(system="PROMPT", history=[msg("user", text)], tools=list(tools)))


def test_plain_answer_sends_a_valid_request_and_parses_usage(openai_server, tools):
    openai_server.script(Reply(body=openai_completion("Hello!", prompt_tokens=1000,
                                                      completion_tokens=500)))
    response = ask(client(openai_server), tools)
    assert response.text == "Hello!"
    assert response.tool_calls == []
    assert response.finish_reason == "stop"
    assert response.model == "gpt-4o-mini"
    assert response.usage == Usage(1000, 500, cost("gpt-4o-mini", 1000, 500))
    assert response.usage.cost == pytest.approx((1000 * 0.15 + 500 * 0.60) / 1e6)
    request = openai_server.last
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == f"Bearer {KEY}"
    check_openai_request(request.body)
    assert request.body["model"] == "gpt-4o-mini"
    assert request.body["messages"] == [{"role": "system", "content": "PROMPT"},
                                        {"role": "user", "content": "hi"}]
    assert request.body["tools"] == [t.to_format("openai") for t in tools]
    assert "stream" not in request.body


def test_no_tools_and_no_key_send_neither(openai_server):
    openai_server.script(Reply(body=openai_completion("ok", model="llama3.2")))
    llm = OpenAICompatibleClient(openai_server.url, None, "llama3.2")
    assert ask(llm).usage.cost == 0.0  # unknown (local) model: no price
    assert "tools" not in openai_server.last.body
    assert "authorization" not in openai_server.last.headers


def test_tool_calls_are_parsed(openai_server, tools):
    calls = [openai_tool_call("call_a", "set_context",
                              '{"label": "memory", "content": "- tea", "action": "append"}'),
             openai_tool_call("call_b", "session_search", '{"query": "deploy"}')]
    openai_server.script(Reply(body=openai_completion(None, tool_calls=calls,
                                                      finish_reason="tool_calls")))
    response = ask(client(openai_server), tools)
    assert response.text == ""
    assert response.finish_reason == "tool_calls"
    assert response.tool_calls == [
        ToolCall("call_a", "set_context",
                 {"label": "memory", "content": "- tea", "action": "append"}),
        ToolCall("call_b", "session_search", {"query": "deploy"})]
    assert all(c.argument_error is None for c in response.tool_calls)


@pytest.mark.parametrize("raw", ['{"label": "memory", ', "[1, 2]", '"text"'])
def test_malformed_tool_arguments_keep_the_raw_text_for_a_clear_error(openai_server, raw):
    openai_server.script(Reply(body=openai_completion(
        None, tool_calls=[openai_tool_call("call_x", "set_context", raw)])))
    call = ask(client(openai_server)).tool_calls[0]
    assert call.arguments == {}
    assert call.raw_arguments == raw
    assert call.argument_error is not None
    assert call.argument_error.startswith("Error:") and "set_context" in call.argument_error


def test_arguments_sent_as_an_object_are_accepted(openai_server):
    call = {"id": "c", "type": "function",
            "function": {"name": "session_search", "arguments": {"query": "x"}}}
    openai_server.script(Reply(body=openai_completion(None, tool_calls=[call])))
    assert ask(client(openai_server)).tool_calls[0].arguments == {"query": "x"}


def test_streaming_text_yields_deltas_then_done_with_usage(openai_server):
    openai_server.script(Reply(events=[
        openai_chunk({"role": "assistant", "content": ""}),
        openai_chunk({"content": "Hel"}), openai_chunk({"content": "lo"}),
        openai_chunk({}, finish_reason="stop"), openai_usage_chunk(12, 3), DONE]))
    events = stream(client(openai_server))
    assert [(e.type, e.text) for e in events[:-1]] == [("text_delta", "Hel"),
                                                       ("text_delta", "lo")]
    done = events[-1]
    assert done.type == "done" and done.response is not None
    assert done.response.text == "Hello"
    assert done.response.finish_reason == "stop"
    assert (done.response.usage.input_tokens, done.response.usage.output_tokens) == (12, 3)
    body = openai_server.last.body
    check_openai_request(body)
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}


def test_streaming_tool_call_arguments_are_assembled_by_index(openai_server, tools):
    openai_server.script(Reply(events=[
        openai_chunk({"role": "assistant", "content": None, "tool_calls": [
            {"index": 0, "id": "call_a", "type": "function",
             "function": {"name": "set_context", "arguments": ""}}]}),
        openai_chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"label": "me'}}]}),
        openai_chunk({"tool_calls": [{"index": 1, "id": "call_b", "type": "function",
                                      "function": {"name": "session_search",
                                                   "arguments": '{"que'}}]}),
        openai_chunk({"tool_calls": [{"index": 0, "function": {
            "arguments": 'mory", "content": "- tea"}'}}]}),
        openai_chunk({"tool_calls": [{"index": 1, "function": {"arguments": 'ry": "x"}'}}]}),
        openai_chunk({}, finish_reason="tool_calls"), openai_usage_chunk(30, 20), DONE]))
    events = stream(client(openai_server), tools)
    assert [e.type for e in events] == ["tool_call", "tool_call", "done"]
    expected = [ToolCall("call_a", "set_context", {"label": "memory", "content": "- tea"}),
                ToolCall("call_b", "session_search", {"query": "x"})]
    assert [e.tool_call for e in events[:2]] == expected
    assert events[-1].response.tool_calls == expected
    assert events[-1].response.finish_reason == "tool_calls"


def test_429_is_retried_honouring_retry_after(openai_server):
    waits: list[float] = []
    openai_server.script(
        Reply(429, {"error": {"message": "Rate limit reached"}}, headers={"Retry-After": "2"}),
        Reply(body=openai_completion("finally")))
    assert ask(client(openai_server, sleep=waits.append)).text == "finally"
    assert waits == [2.0]
    assert len(openai_server.requests) == 2


def test_5xx_retried_with_exponential_backoff_then_a_clear_error(openai_server):
    waits: list[float] = []
    error = {"error": {"message": "The server had an error while processing your request."}}
    openai_server.script(*[Reply(500, error) for _ in range(4)])
    with pytest.raises(LLMError) as info:
        ask(client(openai_server, backoff=0.01, max_retries=3, sleep=waits.append))
    assert info.value.status == 500
    assert info.value.code == "llm_error"
    assert "HTTP 500" in info.value.detail and "server had an error" in info.value.detail
    assert "4 attempts" in info.value.detail
    assert waits == pytest.approx([0.01, 0.02, 0.04])
    assert len(openai_server.requests) == 4


def test_client_errors_are_not_retried_and_never_show_the_key(openai_server):
    openai_server.script(Reply(401, {"error": {
        "message": f"Incorrect API key provided: {KEY}", "type": "invalid_request_error"}}))
    llm = client(openai_server)
    with pytest.raises(LLMError) as info:
        ask(llm)
    assert info.value.status == 401
    assert KEY not in info.value.detail and KEY not in str(info.value)
    assert "Incorrect API key provided: ***" in info.value.detail
    assert KEY not in repr(llm)
    assert len(openai_server.requests) == 1


def test_non_json_error_bodies_are_reported_as_text(openai_server):
    openai_server.script(Reply(404, "model 'nope' not found"))
    with pytest.raises(LLMError, match="HTTP 404: model 'nope' not found"):
        ask(client(openai_server))


def test_timeout_is_an_llm_error(openai_server):
    openai_server.script(Reply(body=openai_completion("late"), delay=1.0))
    with pytest.raises(LLMError, match=r"no answer within 0\.2s"):
        ask(client(openai_server, timeout=0.2, max_retries=0))


def test_stalled_stream_is_an_llm_error(openai_server):
    openai_server.script(Reply(events=[openai_chunk({"content": "a"}),
                                       openai_chunk({"content": "b"})], chunk_delay=1.0))
    with pytest.raises(LLMError, match="stalled"):
        stream(client(openai_server, timeout=0.3, max_retries=0))


def test_connection_failures_are_retried_then_reported():
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    waits: list[float] = []
    llm = OpenAICompatibleClient(f"http://127.0.0.1:{port}/v1", KEY, "m", max_retries=2,
                                 backoff=0.001, sleep=waits.append)
    with pytest.raises(LLMError, match="cannot reach") as info:
        ask(llm)
    assert info.value.status is None
    assert len(waits) == 2


def test_dropped_connection_is_retried(openai_server):
    openai_server.script(Reply(drop=True), Reply(body=openai_completion("second try")))
    assert ask(client(openai_server)).text == "second try"


def test_streaming_retries_before_the_first_byte(openai_server):
    openai_server.script(Reply(503, {"error": {"message": "busy"}}),
                         Reply(events=[openai_chunk({"content": "ok"}), DONE]))
    events = stream(client(openai_server))
    assert events[-1].response.text == "ok"


def test_error_inside_the_stream_is_an_llm_error(openai_server):
    openai_server.script(Reply(events=[openai_chunk({"content": "par"}),
                                       (None, {"error": {"message": "engine crashed"}})]))
    with pytest.raises(LLMError, match="engine crashed"):
        stream(client(openai_server))
