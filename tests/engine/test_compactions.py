"""Compaction overlays: stored, applied on read, deterministic, removable."""

from __future__ import annotations

import pytest

from memory_core import InvalidInput, NotFound
from tests.conftest import assistant_msg, user_msg


def chain(session, n):
    return [session.append_message(user_msg(f"m{i}")).id for i in range(n)]


def test_overlay_replaces_range_with_summary_message(session):
    ids = chain(session, 6)
    overlay = session.add_compaction("they talked", ids[1], ids[3])
    history = session.get_history()
    assert [m.id for m in history] == [ids[0], f"compaction-{overlay.id}", ids[4], ids[5]]
    summary = history[1]
    assert summary.role == "system"
    assert summary.parts == [{"type": "text", "text": "[Summary of earlier conversation]\nthey talked"}]
    assert summary.metadata["compaction"] == {
        "id": overlay.id, "from_message_id": ids[1], "to_message_id": ids[3]}
    # Stored messages are untouched.
    assert [m.id for m in session.get_history(raw=True)] == ids


def test_overlay_only_applies_to_paths_holding_both_endpoints(session):
    ids = chain(session, 4)
    sibling = session.append_message(assistant_msg("sibling"), parent_id=ids[1])
    session.add_compaction("tail", ids[2], ids[3])
    assert [m.id for m in session.get_history(sibling.id)] == [ids[0], ids[1], sibling.id]
    assert len(session.get_history(ids[3])) == 3


def test_newest_overlapping_overlay_wins(session):
    ids = chain(session, 8)
    old = session.add_compaction("old", ids[1], ids[3])
    new = session.add_compaction("new", ids[2], ids[5])
    history = [m.id for m in session.get_history()]
    assert f"compaction-{new.id}" in history and f"compaction-{old.id}" not in history
    assert history == [ids[0], ids[1], f"compaction-{new.id}", ids[6], ids[7]]


def test_newer_wider_overlay_hides_older_inner_one_and_order_is_stable(session):
    ids = chain(session, 8)
    session.add_compaction("inner", ids[2], ids[3])
    wide = session.add_compaction("wide", ids[1], ids[6])
    first = session.get_history()
    assert [m.id for m in first] == [ids[0], f"compaction-{wide.id}", ids[7]]
    assert session.get_history() == first


def test_remove_compaction_restores_originals(session):
    ids = chain(session, 5)
    overlay = session.add_compaction("s", ids[1], ids[3])
    session.remove_compaction(overlay.id)
    assert [m.id for m in session.get_history()] == ids
    with pytest.raises(NotFound):
        session.remove_compaction(overlay.id)


def test_add_compaction_validates_endpoints(session):
    ids = chain(session, 3)
    branch = session.append_message(assistant_msg("b"), parent_id=ids[0])
    with pytest.raises(NotFound):
        session.add_compaction("s", "missing", ids[2])
    with pytest.raises(NotFound):
        session.add_compaction("s", ids[0], "missing")
    with pytest.raises(InvalidInput):
        session.add_compaction("s", branch.id, ids[2])  # not on the path
    with pytest.raises(InvalidInput):
        session.add_compaction("s", ids[2], ids[0])  # reversed
    with pytest.raises(InvalidInput):
        session.add_compaction("  ", ids[0], ids[1])
    assert session.get_compactions() == []


def test_get_compactions_in_creation_order(session):
    ids = chain(session, 4)
    a = session.add_compaction("a", ids[0], ids[1])
    b = session.add_compaction("b", ids[2], ids[3])
    assert [c.id for c in session.get_compactions()] == [a.id, b.id]


def test_defect_8_compaction_as_first_operation(manager):
    # Tables exist from migrations: a compaction write never depends on earlier use.
    session = manager.get_session(manager.create("fresh").id)
    ids = chain(session, 2)
    other = manager.get_session(manager.create("first-op").id)
    with pytest.raises(NotFound):
        other.add_compaction("s", ids[0], ids[1])
    assert session.add_compaction("s", ids[0], ids[1]).summary == "s"


def test_defect_1_compactions_are_per_session(manager):
    s1 = manager.get_session(manager.create("one").id)
    s2 = manager.get_session(manager.create("two").id)
    ids = chain(s1, 3)
    s2.append_messages([user_msg("m0", id=ids[0]), user_msg("m1", id=ids[1]), user_msg("m2", id=ids[2])])
    s1.add_compaction("only in one", ids[0], ids[1])
    assert len(s1.get_history()) == 2
    assert len(s2.get_history()) == 3
    assert s2.get_compactions() == []
