"""SessionManager: registry, batches, forks, usage, tenancy."""

from __future__ import annotations

import pytest

from memory_core import Conflict, InvalidInput, NotFound, SessionManager
from tests.conftest import assistant_msg, session_key, user_msg


def test_create_get_list_rename(manager):
    a = manager.create("first", model="gpt-x", source="cli")
    b = manager.create("second")
    assert manager.get(a.id).name == "first"
    assert manager.get(a.id).model == "gpt-x" and manager.get(a.id).source == "cli"
    assert manager.get("nope") is None
    manager.append(a.id, user_msg("touch"))  # a is now the most recently updated
    assert [s.id for s in manager.list()] == [a.id, b.id]
    renamed = manager.rename(b.id, "renamed")
    assert renamed.name == "renamed"
    with pytest.raises(NotFound):
        manager.rename("nope", "x")
    info = manager.get(a.id).to_dict()
    assert {"id", "agent_id", "name", "parent_session_id", "model", "source", "input_tokens",
            "output_tokens", "estimated_cost", "end_reason", "message_count", "created_at",
            "updated_at"} <= set(info)


def test_for_agent_accepts_instance_or_id(agent):
    by_instance = SessionManager.for_agent(agent)
    by_id = SessionManager.for_agent(agent.id)
    s = by_instance.create("x")
    assert by_id.get(s.id) is not None
    with pytest.raises(InvalidInput):
        SessionManager.for_agent(None)


def test_create_with_unknown_parent_session_is_not_found(manager):
    with pytest.raises(NotFound):
        manager.create("x", parent_session_id="missing")


def test_defect_7_delete_works_without_loading_the_session(manager, agent):
    s = manager.create("doomed")
    manager.append(s.id, user_msg("findable words"))
    fresh = SessionManager.for_agent(agent.id)  # a new manager that never loaded it
    assert fresh.delete(s.id) is True
    assert fresh.get(s.id) is None
    assert fresh.search("findable") == []
    assert fresh.delete(s.id) is False


def test_delete_cascades_and_spares_other_sessions(manager):
    s1, s2 = manager.create("one"), manager.create("two")
    ids = [m.id for m in manager.append_all(s1.id, [user_msg("apple pie"), user_msg("banana")])]
    manager.add_compaction(s1.id, "sum", ids[0], ids[1])
    manager.append(s2.id, user_msg("apple tart"))
    key = session_key(s1.id)
    manager.delete(s1.id)
    with pytest.raises(NotFound):
        manager.get_history(s1.id)
    assert [h.session_id for h in manager.search("apple")] == [s2.id]
    from sessions_app.models import Compaction, Message
    assert not Message.objects.filter(session_id=key).exists()
    assert not Compaction.objects.filter(session_id=s1.id).exists()


def test_append_all_chains_parents(manager):
    s = manager.create("batch")
    root = manager.append(s.id, user_msg("root"))
    out = manager.append_all(s.id, [user_msg("a"), assistant_msg("b"), user_msg("c")], parent_id=root.id)
    assert [m.parent_id for m in out] == [root.id, out[0].id, out[1].id]
    assert manager.get_message_count(s.id) == 4


def test_defect_9_batch_writes_are_atomic(manager):
    s = manager.create("batch")
    manager.append(s.id, user_msg("existing", id="dup"))
    with pytest.raises(Conflict):
        manager.append_all(s.id, [user_msg("fine 1"), user_msg("fine 2"), user_msg("other", id="dup")])
    assert manager.get_message_count(s.id) == 1
    with pytest.raises(InvalidInput):
        manager.append_all(s.id, [user_msg("fine"), {"role": "nobody", "parts": []}])
    assert manager.get_message_count(s.id) == 1
    assert manager.search("fine") == []


def test_fork_copies_path_keeping_ids_and_recording_origin(manager):
    s = manager.create("orig", model="m")
    msgs = manager.append_all(s.id, [user_msg("q"), assistant_msg("a"), user_msg("q2"), assistant_msg("a2")])
    branch = manager.append(s.id, assistant_msg("alt"), parent_id=msgs[2].id)
    fork = manager.fork(s.id, msgs[2].id, "forked")
    assert fork.parent_session_id == s.id and fork.name == "forked" and fork.id != s.id
    history = manager.get_history(fork.id)
    assert [m.id for m in history] == [m.id for m in msgs[:3]]
    assert [m.parent_id for m in history] == [None, msgs[0].id, msgs[1].id]
    for m in history:
        assert m.metadata["forked_from"] == {"session_id": s.id, "message_id": m.id}
    assert manager.get_message_count(fork.id) == 3
    # The fork is independent: appending there leaves the original alone.
    manager.append(fork.id, assistant_msg("new in fork"))
    assert manager.get_message_count(s.id) == 5
    assert branch.id not in {m.id for m in manager.get_history(fork.id)}
    # Copies are searchable in the fork and tell their origin.
    hits = manager.get_session(fork.id).search("q2")
    assert [h.id for h in hits] == [msgs[2].id] and hits[0].session_id == fork.id


def test_fork_copies_overlays_inside_the_path(manager):
    s = manager.create("orig")
    msgs = manager.append_all(s.id, [user_msg(f"m{i}") for i in range(5)])
    manager.add_compaction(s.id, "inside", msgs[0].id, msgs[1].id)
    manager.add_compaction(s.id, "outside", msgs[3].id, msgs[4].id)
    fork = manager.fork(s.id, msgs[2].id)
    assert [c.summary for c in manager.get_compactions(fork.id)] == ["inside"]
    assert len(manager.get_history(fork.id)) == 2


def test_fork_unknown_message_or_session_is_not_found(manager):
    s = manager.create("orig")
    manager.append(s.id, user_msg("x"))
    with pytest.raises(NotFound):
        manager.fork(s.id, "missing")
    with pytest.raises(NotFound):
        manager.fork("missing", "x")
    assert len(manager.list()) == 1


def test_add_usage_accumulates_and_validates(manager):
    s = manager.create("u")
    manager.add_usage(s.id, 10, 5, 0.25)
    info = manager.add_usage(s.id, input_tokens=1, output_tokens=2, cost=0.5)
    assert (info.input_tokens, info.output_tokens, info.estimated_cost) == (11, 7, 0.75)
    for bad in ((-1, 0, 0), ("1", 0, 0), (0, 0, float("nan")), (0, 0, -1.0)):
        with pytest.raises(InvalidInput):
            manager.add_usage(s.id, *bad)
    with pytest.raises(NotFound):
        manager.add_usage("missing", 1, 1, 1)


def test_defect_1_other_tenant_sees_nothing(manager, other_manager):
    s = manager.create("private")
    manager.append(s.id, user_msg("classified launch codes"))
    assert other_manager.get(s.id) is None
    assert other_manager.list() == []
    assert other_manager.search("classified") == []
    with pytest.raises(NotFound):
        other_manager.get_session(s.id)
    with pytest.raises(NotFound):
        other_manager.append(s.id, user_msg("intrusion"))
    with pytest.raises(NotFound):
        other_manager.fork(s.id, "x")
    assert other_manager.delete(s.id) is False
    with pytest.raises(NotFound):
        other_manager.rename(s.id, "pwned")
    with pytest.raises(NotFound):
        other_manager.add_usage(s.id, 1, 1, 1)
    assert manager.get(s.id).name == "private"
    assert manager.get_message_count(s.id) == 1


def test_bad_names_are_invalid(manager):
    with pytest.raises(InvalidInput):
        manager.create(123)  # type: ignore[arg-type]
    with pytest.raises(InvalidInput):
        manager.create("x" * 500)
    assert manager.create(None).name == ""
