"""Branches and the tree view."""

from __future__ import annotations

import pytest

from memory_core import NotFound
from sessions_app.storage.branches import sibling_info, sibling_positions
from tests.conftest import assistant_msg, user_msg


def test_appending_under_a_parent_with_children_creates_a_branch(session):
    q = session.append_message(user_msg("question"))
    a1 = session.append_message(assistant_msg("answer one"))
    a2 = session.append_message(assistant_msg("answer two"), parent_id=q.id)
    branches = session.get_branches(q.id)
    assert [m.id for m in branches] == [a1.id, a2.id]  # oldest first
    assert [m.text for m in session.get_history(a1.id)] == ["question", "answer one"]
    assert [m.text for m in session.get_history(a2.id)] == ["question", "answer two"]


def test_branches_of_leaf_are_empty_and_unknown_is_not_found(session):
    m = session.append_message(user_msg("x"))
    assert session.get_branches(m.id) == []
    with pytest.raises(NotFound):
        session.get_branches("missing")


def test_tree_lists_every_message_with_child_counts(session):
    q = session.append_message(user_msg("question " + "long " * 100))
    a1 = session.append_message(assistant_msg("one"))
    a2 = session.append_message(assistant_msg("two"), parent_id=q.id)
    tree = session.get_tree()
    assert [r.id for r in tree] == [q.id, a1.id, a2.id]
    by_id = {r.id: r for r in tree}
    assert by_id[q.id].child_count == 2
    assert by_id[a1.id].child_count == 0
    assert by_id[a2.id].parent_id == q.id
    assert len(by_id[q.id].preview) <= 120
    assert set(tree[0].to_dict()) == {"id", "parent_id", "role", "preview", "created_at", "child_count"}


def test_hundred_branches_each_read_back_their_own_path(manager):
    session = manager.get_session(manager.create("wide").id)
    trunk = manager.append_all(session.id, [user_msg(f"t{i}") for i in range(20)])
    tips = [session.append_message(assistant_msg(f"b{i}"), parent_id=trunk[-1].id) for i in range(100)]
    assert len(session.get_branches(trunk[-1].id)) == 100
    for i, tip in enumerate(tips):
        history = session.get_history(tip.id)
        assert len(history) == 21 and history[-1].text == f"b{i}"


def test_sibling_places_from_the_tree_match_the_path_pages(session):
    # The chat fragment, the tree page and the admin count places from the tree read
    # (storage.branches.sibling_positions); path pages count them in SQL: the same.
    r1 = session.append_message(user_msg("first root"))
    a1 = session.append_message(assistant_msg("one"))
    a2 = session.append_message(assistant_msg("two"), parent_id=r1.id)
    a3 = session.append_message(assistant_msg("three"), parent_id=r1.id)
    r2 = session.append_message(user_msg("second root"), root=True)
    places = sibling_positions(session.get_tree())
    for leaf in (a1, a2, a3, r2):
        page = session.get_path_page(leaf.id, limit=10)
        assert {m.id: places[m.id] for m in page.messages} == page.siblings
    assert (places[a2.id].index, places[a2.id].count) == (2, 3)
    assert (places[a2.id].previous_id, places[a2.id].next_id) == (a1.id, a3.id)
    assert (places[r2.id].index, places[r2.id].previous_id) == (2, r1.id)
    assert sibling_info([a1.id, a2.id, a3.id], a3.id) == places[a3.id]
    assert sibling_info([a1.id], a2.id) is None
