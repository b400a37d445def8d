"""Search over HTTP: words only, never syntax; fixed query counts."""

from __future__ import annotations

import pytest

from memory_core import SessionManager

from .conftest import append, assistant_msg, ok, user_msg


def test_session_search_ranks_hits(api, session_id, conversation):
    items = ok(api.get(f"/sessions/{session_id}/search", q="which day is the deployment?"))["items"]
    assert items and items[0]["id"] in {"u1", "a1", "a1b", "u2", "a2"}
    assert set(items[0]) == {"id", "session_id", "role", "content", "created_at", "rank", "score"}
    assert [h["rank"] for h in items] == list(range(1, len(items) + 1))


def test_agent_search_spans_sessions(api, agent_id, session_id, conversation):
    other = ok(api.post(f"/agents/{agent_id}/sessions", {}), 201)["id"]
    append(api, other, user_msg("Thursday deployment confirmed"))
    hits = ok(api.get(f"/agents/{agent_id}/search", q="Thursday"))["items"]
    assert {h["session_id"] for h in hits} == {session_id, other}


def test_limit(api, session_id, conversation):
    assert len(ok(api.get(f"/sessions/{session_id}/search", q="deploy", limit=1))["items"]) == 1


@pytest.mark.parametrize("q", ['"unbalanced', "deploy*", "-deploy", "deploy NEAR tuesday",
                               "a OR b AND", "col:umn", "(((", "[]{}", "'; DROP TABLE x;--",
                               "", "   ", "\u202e", "部署", "🚀", "%", "\\"])
def test_any_query_text_is_words_never_an_error(api, agent_id, session_id, conversation, q):
    ok(api.get(f"/sessions/{session_id}/search", q=q))
    ok(api.get(f"/agents/{agent_id}/search", q=q))


def test_deleted_messages_are_not_found(api, session_id, conversation):
    ok(api.delete(f"/sessions/{session_id}/messages/a2"), 204)
    hits = ok(api.get(f"/sessions/{session_id}/search", q="Thursday"))["items"]
    assert "a2" not in [h["id"] for h in hits]


@pytest.mark.parametrize("count", [5, 200])
def test_search_query_counts_are_fixed(api, alice_agent, session_id, count,
                                       django_assert_num_queries):
    SessionManager.for_agent(alice_agent).append_all(session_id, [
        assistant_msg(f"deploy note {i}") for i in range(count)])
    with django_assert_num_queries(3):  # key; session row; FTS query
        assert ok(api.get(f"/sessions/{session_id}/search", q="deploy note"))["items"]
    with django_assert_num_queries(3):  # key; agent; FTS query
        assert ok(api.get(f"/agents/{alice_agent.id}/search", q="deploy note"))["items"]
