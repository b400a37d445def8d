"""History of an unbranched session is read as one index range (session.branched is
unset); once any message gets a sibling the read walks parent pointers. The flag is a
hint: whatever it says, every leaf reads back exactly its root-to-leaf chain."""

from __future__ import annotations

import pytest

from memory_core import NotFound
from sessions_app.models import Session as SessionRow
from tests.conftest import assistant_msg, user_msg


def branched(session) -> bool:
    return SessionRow.objects.get(id=session.id).branched


def chain(session, leaf_id):
    """The root-to-leaf path by following parent ids one message at a time."""
    out = []
    while leaf_id is not None:
        message = session.get_message(leaf_id)
        out.append(message)
        leaf_id = message.parent_id
    return out[::-1]


def test_auto_parented_appends_keep_the_session_unbranched(session):
    ids = [session.append_message(user_msg(f"m{i}")).id for i in range(5)]
    last = session.append_message(assistant_msg("under the leaf"), ids[-1])
    assert not branched(session)
    history = session.get_history()
    assert [m.id for m in history] == [*ids, last.id]
    assert [m.parent_id for m in history] == [None, *ids]
    assert session.get_history(ids[2]) == chain(session, ids[2])


def test_a_second_child_or_root_marks_the_session_branched(session, manager):
    a = session.append_message(user_msg("question"))
    b = session.append_message(assistant_msg("first answer"))
    assert not branched(session)
    b2 = session.append_message(assistant_msg("second answer"), a.id)
    assert branched(session)
    assert [m.id for m in session.get_history()] == [a.id, b2.id]
    assert [m.id for m in session.get_history(b.id)] == [a.id, b.id]

    other = manager.get_session(manager.create("roots").id)
    other.append_message(user_msg("one"))
    assert not branched(other)
    root = other.append_message(user_msg("two"), root=True)
    assert branched(other)
    assert other.get_history() == [other.get_message(root.id)]


def test_a_stale_hint_still_reads_the_exact_chain(session):
    a = session.append_message(user_msg("q"))
    b1 = session.append_message(assistant_msg("a1"))
    session.append_message(user_msg("follow-up on a1"))
    b2 = session.append_message(assistant_msg("a2"), a.id)
    c2 = session.append_message(user_msg("follow-up on a2"))
    SessionRow.objects.filter(id=session.id).update(branched=False)  # a wrong hint
    assert [m.id for m in session.get_history()] == [a.id, b2.id, c2.id]
    assert session.get_history(b1.id) == chain(session, b1.id)
    with pytest.raises(NotFound):
        session.get_history("no-such-message")


def test_delete_and_clear_keep_reads_exact(session):
    ids = [session.append_message(user_msg(f"m{i}")).id for i in range(6)]
    session.delete_messages([ids[2]])
    history = session.get_history()
    assert [m.id for m in history] == [ids[0], ids[1], ids[3], ids[4], ids[5]]
    assert history[2].parent_id == ids[1]
    session.append_message(assistant_msg("branch"), ids[0])
    assert branched(session)
    session.clear_messages()
    assert not branched(session)
    assert session.get_history() == []


def test_fork_is_unbranched_and_a_forked_tree_keeps_its_shape(session, manager):
    a = session.append_message(user_msg("q"))
    session.append_message(assistant_msg("a1"))
    b2 = session.append_message(assistant_msg("a2"), a.id)
    fork = manager.fork(session.id, b2.id)
    forked = manager.get_session(fork.id)
    assert not branched(forked)
    assert [m.text for m in forked.get_history()] == ["q", "a2"]
    assert branched(session)


def test_history_times_and_metadata_read_back_as_stored(session):
    stored = session.append_message(user_msg("with metadata", metadata={"k": [1, 2]}))
    plain = session.append_message(assistant_msg("none"))
    history = session.get_history()
    assert history[0].metadata == {"k": [1, 2]} and history[1].metadata == {}
    assert history[0].created_at == stored.created_at
    assert history[1].created_at == plain.created_at
    assert history[0].created_at.utcoffset() is not None


def test_an_imported_tree_is_branched_and_reads_the_same(session, manager):
    from memory_core.transfer import export_session, import_session

    a = session.append_message(user_msg("q"))
    session.append_message(assistant_msg("a1"))
    b2 = session.append_message(assistant_msg("a2"), a.id)
    document = export_session(manager, session.id)
    manager.delete(session.id)  # message ids are unique within an agent's sessions
    info = import_session(manager, document)
    copy = manager.get_session(info.id)
    assert branched(copy)
    assert [m.text for m in copy.get_history(b2.id)] == ["q", "a2"]


def test_a_replayed_chain_that_continues_under_a_parent_with_children_is_a_branch(session):
    a = session.append_message(user_msg("q", id="a"))
    session.append_message(assistant_msg("first", id="b1"))
    assert not branched(session)
    # a is replayed unchanged; the new message under it is a's second child.
    session.append_messages([user_msg("q", id="a"), assistant_msg("second", id="b2")],
                            root=True)
    assert branched(session)
    assert [m.id for m in session.get_history("b2")] == [a.id, "b2"]
    assert [m.id for m in session.get_history("b1")] == [a.id, "b1"]
