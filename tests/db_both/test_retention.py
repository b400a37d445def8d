"""Retention policies on both databases (issue 31): exactly the due sessions go; pinned
and recent ones stay; a dry run changes nothing; a run failing half-way leaves each
session whole or gone; erasure reaches search, the outbox and the path caches."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.utils import timezone

from sessions_app import models
from sessions_app.lifecycle import retention, worker
from sessions_app.storage import erasure, jobs, path_cache
from tests.conftest import assistant_msg, user_msg


@pytest.fixture(autouse=True)
def _close_lock_connections():
    yield
    jobs.close_connections()  # else the test database cannot be dropped at the end

def _session(manager, name: str, *, days_old: float, messages: int = 2) -> str:
    sid = manager.create(name).id
    manager.append_all(sid, [user_msg(f"{name} note {i}") for i in range(messages)])
    models.Session.objects.filter(id=sid).update(
        updated_at=timezone.now() - timedelta(days=days_old))
    return sid


@pytest.fixture
def sessions(manager, agent):
    made = {name: _session(manager, name, days_old=days)
            for name, days in [("ancient", 400), ("old", 40), ("pinned_old", 50),
                               ("week", 7), ("today", 0.01)]}
    models.Session.objects.filter(id=made["pinned_old"]).update(pinned=True)
    return made


def _left(agent) -> set[str]:
    return set(models.Session.objects.filter(agent=agent).values_list("name", flat=True))


def test_age_policy_removes_exactly_the_old_unpinned_sessions(agent, sessions):
    agent.retention_max_age_days = 30
    agent.save()
    outcome = retention.apply(agent)
    assert sorted(outcome.sessions) == sorted([sessions["ancient"], sessions["old"]])
    assert outcome.messages == 4
    assert _left(agent) == {"pinned_old", "week", "today"}


def test_count_policy_keeps_the_newest_unpinned_and_every_pinned(agent, sessions):
    agent.retention_max_sessions = 2
    agent.save()
    retention.apply(agent)
    assert _left(agent) == {"pinned_old", "week", "today"}


def test_no_policy_keeps_everything(agent, sessions):
    assert retention.apply_all() == []
    assert retention.apply(agent).sessions == []
    assert len(_left(agent)) == 5


def test_dry_run_lists_and_changes_nothing(agent, sessions):
    agent.retention_max_age_days = 30
    agent.save()
    out = StringIO()
    call_command("apply_retention", "--agent", agent.id, "--dry-run", stdout=out)
    assert sessions["ancient"] in out.getvalue() and sessions["old"] in out.getvalue()
    assert "would delete 2 sessions (4 messages)" in out.getvalue()
    assert len(_left(agent)) == 5 and not models.Erasure.objects.exists()
    call_command("apply_retention", stdout=out)
    assert _left(agent) == {"pinned_old", "week", "today"}


def test_a_run_failing_half_way_leaves_each_session_whole_or_gone(agent, sessions, monkeypatch):
    agent.retention_max_age_days = 5
    agent.save()
    doomed = list(retention.due(agent).values_list("id", flat=True))
    assert len(doomed) == 3  # ancient, old, week: oldest first
    real = erasure.erased

    def failing(**kw):
        real(**kw)
        if kw["session_id"] == doomed[1]:
            raise RuntimeError("disk full")

    monkeypatch.setattr(erasure, "erased", failing)
    with pytest.raises(RuntimeError):
        retention.apply(agent)
    assert not models.Session.objects.filter(id=doomed[0]).exists()
    for sid in doomed[1:]:
        row = models.Session.objects.get(id=sid)
        assert row.message_count == 2 == models.Message.objects.filter(session=row).count()
    assert list(models.Erasure.objects.values_list("session_id", flat=True)) == [doomed[0]]


def test_a_running_turn_is_left_to_the_next_run(agent, sessions):
    agent.retention_max_age_days = 30
    agent.save()
    models.Session.objects.filter(id=sessions["old"]).update(status="thinking")
    retention.apply(agent)
    assert "old" in _left(agent) and "ancient" not in _left(agent)


def test_a_policy_run_held_by_another_worker_is_skipped(agent, sessions):
    agent.retention_max_age_days = 30
    agent.save()
    with jobs.exclusive("retention"):
        assert worker.policy_run() == []
    assert "ancient" in _left(agent)
    assert [o.sessions for o in worker.policy_run() if o.sessions]
    assert "ancient" not in _left(agent)


@pytest.mark.django_db(transaction=True)  # the path cache serves reads outside one
def test_deleted_text_is_gone_from_search_outbox_and_caches(manager, empty_path_cache):
    session = manager.get_session(manager.create("s").id)
    session.append_message(user_msg("zanzibarquux is my password", id="m1"))
    session.append_message(assistant_msg("noted", id="m2"))
    session.append_message(user_msg("thanks", id="m3"))
    session.add_compaction("user said zanzibarquux", "m1", "m2")
    session.get_history()
    assert any(k[2] == session.id for k in path_cache.paths._paths)
    assert session.search("zanzibarquux")
    events = models.SessionEvent.objects.filter(session__id=session.id,
                                                type="compaction.completed")
    assert "zanzibarquux" in str(events.get().data)

    session.delete_messages(["m1"])
    assert not session.search("zanzibarquux")
    assert not manager.search("zanzibarquux")
    assert "zanzibarquux" not in str(events.get().data)
    assert not any(k[2] == session.id for k in path_cache.paths._paths)
    assert not session.get_compactions()
    assert [m.id for m in session.get_history()] == ["m2", "m3"]


@pytest.mark.django_db(transaction=True)
def test_every_worker_forgets_paths_erased_by_another(manager, empty_path_cache):
    sid = manager.create("s").id
    manager.append_all(sid, [user_msg("hello")])
    upkeep = worker.Worker()
    upkeep.sweep()  # starts from the log's end
    manager.get_session(sid).get_history()
    assert any(k[2] == sid for k in path_cache.paths._paths)
    # Another worker's deletion: only its log row reaches this process.
    models.Erasure.objects.create(created_at=timezone.now(), agent_id=manager.agent_id,
                                  session_id=sid, scope="messages", messages=1,
                                  by="system", door="command")
    upkeep.sweep()
    assert not any(k[2] == sid for k in path_cache.paths._paths)


def test_a_deleted_message_keeps_the_block_versions_it_wrote(manager):
    from sessions_app.storage import OrmStorage  # noqa: F401 (the storage in use)

    session = manager.get_session(manager.create("s").id)
    session.append_message(user_msg("remember tea", id="m1"))
    models.BlockVersion.objects.create(
        key=f"agent:{manager.agent_id}:memory", number=1, agent_id=manager.agent_id,
        action="replace", content="likes tea", actor="model", message_id="m1",
        source_session_id=session.id, created_at=timezone.now())
    session.delete_messages(["m1"])
    version = models.BlockVersion.objects.get()
    assert version.source_deleted and version.content == "likes tea"
