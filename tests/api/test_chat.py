"""POST /sessions/{id}/chat: one assistant turn, as JSON or as server-sent events."""

from __future__ import annotations

import orjson
import pytest
from django.test import override_settings

from .conftest import error, ok, stored_state
from .fake_llm import install

# The test client reads the async event stream synchronously, and says so.
pytestmark = pytest.mark.filterwarnings("ignore:StreamingHttpResponse must consume")


@pytest.fixture
def sid(api, alice_agent, monkeypatch):
    install(monkeypatch)
    alice_agent.context = [{"label": "memory", "max_tokens": 200}]
    alice_agent.save()
    return ok(api.post(f"/agents/{alice_agent.id}/sessions", {}), 201)["id"]


def parse_sse(content: bytes) -> list[dict]:
    events = []
    for frame in content.decode().split("\n\n"):
        if not frame.strip():
            continue
        lines = dict(line.split(": ", 1) for line in frame.splitlines())
        events.append({"type": lines["event"], **orjson.loads(lines["data"])})
    return events


def test_chat_stores_the_turn_and_returns_the_answer(api, sid):
    answer = ok(api.post(f"/sessions/{sid}/chat", {"content": "hello there"}))
    assert answer["role"] == "assistant"
    assert answer["parts"] == [{"type": "text", "text": "You said: hello there"}]
    history = ok(api.get(f"/sessions/{sid}/history"))
    assert [m["role"] for m in history["messages"]] == ["user", "assistant"]
    assert history["leaf_id"] == answer["id"]
    session = ok(api.get(f"/sessions/{sid}"))
    assert (session["input_tokens"], session["output_tokens"]) == (8, 4)


def test_chat_runs_tools(api, sid):
    answer = ok(api.post(f"/sessions/{sid}/chat", {"content": "remember I like tea"}))
    assert answer["parts"][0]["text"] == "Saved it."
    assert ok(api.get(f"/sessions/{sid}/context/memory"))["content"] == "I like tea"
    roles = [m["role"] for m in ok(api.get(f"/sessions/{sid}/history"))["messages"]]
    assert roles == ["user", "assistant", "assistant"]  # the call and its output: one part


def test_chat_under_an_earlier_message_makes_a_branch(api, sid):
    first = ok(api.post(f"/sessions/{sid}/chat", {"content": "one"}))
    ok(api.post(f"/sessions/{sid}/chat", {"content": "two"}))
    ok(api.post(f"/sessions/{sid}/chat", {"content": "three", "parent_id": first["id"]}))
    branches = ok(api.get(f"/sessions/{sid}/messages/{first['id']}/branches"))["items"]
    assert [m["parts"][0]["text"] for m in branches] == ["two", "three"]


def test_chat_stream_sends_events_then_done(api, sid):
    response = api.post(f"/sessions/{sid}/chat", {"content": "remember blue", "stream": True})
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/event-stream")
    events = parse_sse(b"".join(response))
    kinds = [e["type"] for e in events]
    assert kinds[:2] == ["tool_call", "tool_result"] and kinds[-1] == "done"
    assert "text_delta" in kinds
    text = "".join(e["text"] for e in events if e["type"] == "text_delta")
    done = events[-1]["message"]
    assert text == done["parts"][0]["text"] == "Saved it."
    assert ok(api.get(f"/sessions/{sid}/leaf"))["message"] == done


def test_bad_chat_input_is_a_json_error_and_changes_nothing(api, sid):
    before = stored_state(sid)
    error(api.post(f"/sessions/{sid}/chat", {"content": ""}), 422)
    error(api.post(f"/sessions/{sid}/chat", {"content": "   "}), 422)
    error(api.post(f"/sessions/{sid}/chat", {"content": "x", "parent_id": "ghost"}), 404)
    error(api.post(f"/sessions/{sid}/chat", {"content": "x", "parent_id": "ghost",
                                             "stream": True}), 404)
    error(api.post(f"/sessions/{sid}/chat", {"content": "x", "stream": "yes"}), 422)
    assert stored_state(sid) == before


def test_model_failures_mid_stream_end_with_an_error_event(api, sid, monkeypatch):
    from memory_core.llm import LLMError, StreamEvent

    from .fake_llm import FakeLLM

    def broken(self, **kwargs):
        yield StreamEvent("text_delta", text="Par")
        raise LLMError("model unreachable")

    monkeypatch.setattr(FakeLLM, "stream", broken)
    response = api.post(f"/sessions/{sid}/chat", {"content": "hi", "stream": True})
    events = parse_sse(b"".join(response))
    assert [e["type"] for e in events] == ["text_delta", "error"]
    assert events[-1] == {"type": "error", "detail": "model unreachable", "code": "llm_error"}


def test_model_failure_before_the_first_event_is_502(api, sid, monkeypatch):
    from memory_core.llm import LLMError

    from .fake_llm import FakeLLM

    def broken(self, **kwargs):
        raise LLMError("model unreachable")

    monkeypatch.setattr(FakeLLM, "complete", broken)
    error(api.post(f"/sessions/{sid}/chat", {"content": "hi"}), 502, "llm_error")


@override_settings(ARBOR_LLM_BASE_URL="", ARBOR_LLM_API_KEY="", ARBOR_ANTHROPIC_API_KEY="")
def test_chat_with_the_default_offline_model(api, alice_agent):
    """No LLM configured: the built-in demo model answers (SPEC §15)."""
    alice_agent.context = [{"label": "memory", "max_tokens": 200}]
    alice_agent.save()
    sid = ok(api.post(f"/agents/{alice_agent.id}/sessions", {}), 201)["id"]
    answer = ok(api.post(f"/sessions/{sid}/chat", {"content": "remember that I fly on Tuesdays"}))
    assert answer["role"] == "assistant"
    assert "Tuesdays" in ok(api.get(f"/sessions/{sid}/context/memory"))["content"]
