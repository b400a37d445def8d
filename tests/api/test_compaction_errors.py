"""A failing summariser answers 502 compaction_failed and changes nothing (issue 9)."""

from __future__ import annotations

import pytest

from memory_core import CompactionError, SessionManager

from .conftest import append, error, ok, stored_state, user_msg


def broken(prompt):
    raise RuntimeError("model down")


@pytest.fixture
def broken_summariser(monkeypatch):
    monkeypatch.setattr("memory_core.autocompact.default_summarizer", lambda llm=None: broken)


def test_compact_and_split_with_a_failing_summariser_changes_nothing(
        api, agent_id, session_id, conversation, broken_summariser):
    before = stored_state(session_id)
    sessions_before = ok(api.get(f"/agents/{agent_id}/sessions"))["items"]
    body = error(api.post(f"/sessions/{session_id}/compact-and-split", {}), 502,
                 "compaction_failed")
    assert "model down" in body["detail"]
    assert stored_state(session_id) == before
    assert ok(api.get(f"/sessions/{session_id}"))["end_reason"] is None
    assert ok(api.get(f"/agents/{agent_id}/sessions"))["items"] == sessions_before, "no continuation"


def test_compact_with_a_failing_summariser_is_the_same_error(
        api, session_id, broken_summariser):
    for i in range(12):
        append(api, session_id, user_msg(f"q{i} " + "words " * 2000))
    error(api.post(f"/sessions/{session_id}/compact"), 502, "compaction_failed")


def test_engine_raises_compaction_error(agent_id, session_id, conversation, broken_summariser):
    manager = SessionManager.for_agent(agent_id)
    with pytest.raises(CompactionError):
        manager.compact_and_split(session_id)
    assert manager.get(session_id).end_reason is None
    assert [s.id for s in manager.list()] == [session_id]
