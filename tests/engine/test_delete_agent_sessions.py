"""Deleting an agent's sessions is one engine operation, used by the API and the admin."""

from __future__ import annotations

from memory_core import SessionManager
from sessions_app import models
from sessions_app.agents import delete_agent
from tests.conftest import session_key, user_msg


def test_delete_agent_sessions_removes_every_session_and_its_search_rows(manager, other_manager):
    for name in ("a", "b"):
        manager.append(manager.create(name).id, user_msg("zebra crossing"))
    kept = other_manager.create("kept")
    other_manager.append(kept.id, user_msg("zebra crossing"))

    assert manager.delete_agent_sessions() == 2
    assert manager.list() == [] and manager.search("zebra") == []
    assert [h.session_id for h in other_manager.search("zebra")] == [kept.id]


def test_delete_agent_removes_the_agent_with_its_sessions(agent, manager):
    agent_id, session = agent.id, manager.create("s")
    manager.append(session.id, user_msg("hello"))
    key = session_key(session.id)
    assert delete_agent(agent) == 1
    assert not models.Agent.objects.filter(id=agent_id).exists()
    assert not models.Message.objects.filter(session_id=key).exists()
    assert SessionManager.for_agent(agent_id).list() == []
