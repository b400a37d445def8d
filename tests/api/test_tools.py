"""Memory tools over HTTP: definitions in three formats, and calls."""

from __future__ import annotations

import pytest

from .conftest import append, error, ok, stored_state, user_msg


@pytest.fixture
def sid(api, alice_agent):
    alice_agent.context = [{"label": "memory", "max_tokens": 10},
                           {"label": "kb", "kind": "search"}]
    alice_agent.save()
    return ok(api.post(f"/agents/{alice_agent.id}/sessions", {}), 201)["id"]


@pytest.mark.parametrize(("fmt", "name_of"), [
    ("openai", lambda t: t["function"]["name"]),
    ("anthropic", lambda t: t["name"]),
    ("mcp", lambda t: t["name"]),
])
def test_tool_definitions_in_each_format(api, sid, fmt, name_of):
    items = ok(api.get(f"/sessions/{sid}/tools", format=fmt))["items"]
    assert sorted(name_of(t) for t in items) == ["search_context", "session_search",
                                                 "set_context"]


def test_default_format_is_openai(api, sid):
    assert ok(api.get(f"/sessions/{sid}/tools"))["items"][0]["type"] == "function"


def test_call_a_tool(api, sid):
    body = ok(api.post(f"/sessions/{sid}/tools/set_context",
                       {"arguments": {"label": "memory", "content": "likes tea"}}))
    assert body["is_error"] is False and "memory" in body["result"]
    assert ok(api.get(f"/sessions/{sid}/context/memory"))["content"] == "likes tea"


def test_session_search_tool_finds_past_messages(api, alice_agent, sid):
    past = ok(api.post(f"/agents/{alice_agent.id}/sessions", {}), 201)["id"]
    append(api, past, user_msg("The deploy moved to Thursday"))
    append(api, sid, user_msg("Is the deploy still on Tuesday?"))
    body = ok(api.post(f"/sessions/{sid}/tools/session_search",
                       {"arguments": {"query": "when is the deploy?"}}))
    assert "Thursday" in body["result"] and not body["is_error"]
    assert "Tuesday" not in body["result"]  # this session's own messages are not "past"


@pytest.mark.parametrize("arguments", [
    {"label": "memory"},
    {"label": "ghost", "content": "x"},
    {"label": "memory", "content": "far too many words for this small block here"},
    {"label": "memory", "content": "x", "extra": 1},
])
def test_bad_tool_arguments_are_an_error_result_and_change_nothing(api, sid, arguments):
    before = stored_state(sid)
    body = ok(api.post(f"/sessions/{sid}/tools/set_context", {"arguments": arguments}))
    assert body["is_error"] is True and body["result"].startswith("Error:")
    assert stored_state(sid) == before


def test_unknown_tool_is_404(api, sid):
    body = error(api.post(f"/sessions/{sid}/tools/rm_rf", {"arguments": {}}), 404)
    assert "set_context" in body["detail"]
    error(api.post(f"/sessions/{sid}/tools/set_context", {"arguments": "x"}), 422)
