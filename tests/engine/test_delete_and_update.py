"""delete_messages, upsert_message, update_message, clear_messages."""

from __future__ import annotations

import pytest

from memory_core import InvalidInput, NotFound
from tests.conftest import assistant_msg, user_msg


def test_delete_reattaches_children_to_the_deleted_messages_parent(session):
    a = session.append_message(user_msg("a"))
    b = session.append_message(assistant_msg("b"))
    c = session.append_message(user_msg("c"))
    d = session.append_message(assistant_msg("d"), parent_id=b.id)
    assert session.delete_messages([b.id]) == 1
    assert session.get_message(c.id).parent_id == a.id
    assert session.get_message(d.id).parent_id == a.id
    assert [m.id for m in session.get_history(c.id)] == [a.id, c.id]
    assert session.get_message_count() == 3


def test_deleting_a_chain_moves_children_to_the_nearest_kept_ancestor(session):
    ids = [session.append_message(user_msg(f"m{i}")).id for i in range(5)]
    session.delete_messages([ids[1], ids[2], ids[3]])
    assert session.get_message(ids[4]).parent_id == ids[0]
    assert [m.id for m in session.get_history()] == [ids[0], ids[4]]


def test_deleting_root_makes_children_roots(session):
    a = session.append_message(user_msg("a"))
    b = session.append_message(user_msg("b"))
    session.delete_messages([a.id])
    assert session.get_message(b.id).parent_id is None
    assert session.get_history() == [session.get_message(b.id)]


def test_delete_unknown_ids_deletes_nothing(session):
    session.append_message(user_msg("a"))
    assert session.delete_messages(["nope"]) == 0
    assert session.delete_messages([]) == 0
    assert session.get_message_count() == 1


def test_delete_removes_overlays_touching_the_deleted_message(session):
    ids = [session.append_message(user_msg(f"m{i}")).id for i in range(6)]
    inner = session.add_compaction("inner range", ids[1], ids[3])
    endpoint = session.add_compaction("endpoint", ids[4], ids[5])
    untouched = session.add_compaction("head", ids[0], ids[0])
    session.delete_messages([ids[2]])
    remaining = {c.id for c in session.get_compactions()}
    assert inner.id not in remaining
    assert endpoint.id in remaining and untouched.id in remaining
    session.delete_messages([ids[5]])
    assert {c.id for c in session.get_compactions()} == {untouched.id}


def test_defect_3_upsert_really_updates(session):
    m = session.append_message(assistant_msg("partial", id="stream-1"))
    updated = session.upsert_message(assistant_msg("partial and complete", id="stream-1"))
    assert updated.text == "partial and complete"
    assert session.get_message("stream-1").text == "partial and complete"
    assert session.get_message("stream-1").parent_id == m.parent_id
    assert session.get_message_count() == 1
    assert [h.id for h in session.search("complete")] == ["stream-1"]


def test_upsert_inserts_when_missing_and_keeps_parent_on_update(session):
    a = session.append_message(user_msg("a"))
    b = session.append_message(user_msg("b"))
    m = session.upsert_message(assistant_msg("x", id="s"), parent_id=a.id)
    assert m.parent_id == a.id
    again = session.upsert_message(assistant_msg("xy", id="s"), parent_id=b.id)
    assert again.parent_id == a.id  # parent unchanged by an update


def test_update_message_replaces_content_and_unknown_is_not_found(session):
    m = session.append_message(user_msg("old words"))
    updated = session.update_message({"id": m.id, "role": "user", "parts": [{"type": "text", "text": "new words"}]})
    assert updated.text == "new words" and updated.created_at == m.created_at
    assert session.search("old") == []
    with pytest.raises(NotFound):
        session.update_message(user_msg("x", id="missing"))
    with pytest.raises(InvalidInput):
        session.update_message(user_msg("no id"))


def test_clear_removes_everything_of_the_session_and_nothing_of_others(manager, session):
    other = manager.get_session(manager.create("other").id)
    ids = [session.append_message(user_msg(f"alpha {i}")).id for i in range(3)]
    session.add_compaction("s", ids[0], ids[1])
    kept = other.append_message(user_msg("alpha kept"))
    session.clear_messages()
    assert session.get_history() == []
    assert session.get_compactions() == []
    assert session.get_message_count() == 0
    assert session.search("alpha") == []
    assert [h.id for h in manager.search("alpha")] == [kept.id]
    assert other.get_history() == [kept]
    # The session still works after a clear.
    assert session.append_message(user_msg("fresh")).parent_id is None
