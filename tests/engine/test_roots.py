"""Explicit new roots: root=True appends a message with no parent, even in a session that
has messages; the roots are siblings of each other."""

from __future__ import annotations

import pytest

from memory_core import InvalidInput, NotFound
from memory_core.events import Event
from tests.conftest import assistant_msg, user_msg


class Sink:
    def __init__(self) -> None:
        self.events: list[Event] = []

    def emit(self, event: Event) -> None:
        self.events.append(event)


def test_root_appends_a_message_without_parent_in_a_busy_session(session):
    first = session.append_message(user_msg("first"))
    session.append_message(assistant_msg("answer"))
    second = session.append_message(user_msg("a fresh start"), root=True)
    assert second.parent_id is None
    assert session.get_message(second.id).parent_id is None
    assert session.get_latest_leaf().id == second.id
    assert [m.text for m in session.get_history()] == ["a fresh start"]
    # An absent or null parent still means: under the latest leaf.
    after = session.append_message(assistant_msg("reply"), None)
    assert after.parent_id == second.id
    assert [m.id for m in session.get_branches(None)] == [first.id, second.id]


def test_root_with_a_parent_is_refused_and_stores_nothing(session):
    first = session.append_message(user_msg("first"))
    with pytest.raises(InvalidInput, match="parent_id or root"):
        session.append_message(user_msg("x"), parent_id=first.id, root=True)
    with pytest.raises(InvalidInput, match="parent_id or root"):
        session.append_messages([user_msg("x")], first.id, root=True)
    with pytest.raises(InvalidInput, match="parent_id or root"):
        session.upsert_message(user_msg("x"), first.id, root=True)
    with pytest.raises(InvalidInput, match="root must be"):
        session.append_message(user_msg("x"), root="yes")  # type: ignore[arg-type]
    assert session.get_message_count() == 1


def test_a_batch_can_start_a_new_root(session):
    session.append_message(user_msg("old"))
    chain = session.append_messages([user_msg("q"), assistant_msg("a")], root=True)
    assert chain[0].parent_id is None and chain[1].parent_id == chain[0].id
    assert len(session.get_branches(None)) == 2


def test_upsert_as_a_new_root_then_in_place(session):
    session.append_message(user_msg("old"))
    made = session.upsert_message(assistant_msg("draft", id="d"), root=True)
    assert made.parent_id is None
    again = session.upsert_message(assistant_msg("final", id="d"))
    assert again.parent_id is None and again.text == "final"


def test_manager_writes_take_root(manager, session):
    manager.append(session.id, user_msg("one"))
    root = manager.append(session.id, user_msg("two"), root=True)
    chain = manager.append_all(session.id, [user_msg("three")], root=True)
    upserted = manager.upsert(session.id, user_msg("four", id="u4"), root=True)
    assert {root.parent_id, chain[0].parent_id, upserted.parent_id} == {None}
    assert len(session.get_branches(None)) == 4


def test_roots_are_siblings_in_creation_order(session):
    assert session.get_branches(None) == []
    roots = [session.append_message(user_msg(f"r{i}"), root=True) for i in range(3)]
    assert [m.id for m in session.get_branches(None)] == [r.id for r in roots]
    page = session.get_path_page(roots[1].id)
    info = page.siblings[roots[1].id]
    assert (info.index, info.count, info.previous_id, info.next_id) == (
        2, 3, roots[0].id, roots[2].id)


def test_a_second_root_is_announced_as_a_branch(manager):
    sink = Sink()
    m = manager.with_events(sink)
    s = m.get_session(m.create("roots").id)
    first = s.append_message(user_msg("first"), root=True)
    assert [e.type for e in sink.events if e.session_id == s.id][-1] == "message.appended"
    sink.events.clear()
    second = s.append_message(user_msg("second"), root=True)
    assert [(e.type, e.data.get("message_id")) for e in sink.events] == [
        ("message.appended", None), ("branch.created", second.id)]
    assert sink.events[1].data == {"message_id": second.id, "parent_id": None}
    assert first.id != second.id


def test_unknown_message_branches_still_not_found(session):
    with pytest.raises(NotFound):
        session.get_branches("missing")
