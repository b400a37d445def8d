"""get_history / path reads: one query per path whatever its length."""

from __future__ import annotations

import pytest

from memory_core import NotFound
from tests.conftest import assistant_msg, user_msg


@pytest.mark.parametrize("length", [10, 1000])
def test_history_query_count_does_not_grow(manager, length, django_assert_num_queries):
    session = manager.get_session(manager.create("long").id)
    manager.append_all(session.id, [user_msg(f"m{i}") for i in range(length)])
    with django_assert_num_queries(2):  # path CTE, overlays of the session
        history = session.get_history()
    assert [m.text for m in history] == [f"m{i}" for i in range(length)]


@pytest.mark.parametrize("length", [10, 1000])
def test_raw_history_is_one_query(manager, length, django_assert_num_queries):
    session = manager.get_session(manager.create("long").id)
    messages = manager.append_all(session.id, [user_msg(f"m{i}") for i in range(length)])
    with django_assert_num_queries(1):
        history = session.get_history(messages[length // 2].id, raw=True)
    assert len(history) == length // 2 + 1


def test_history_of_empty_session_is_empty(session):
    assert session.get_history() == []
    assert session.get_latest_leaf() is None
    assert session.get_path_length() == 0


def test_history_to_a_given_leaf_is_root_first(session):
    a = session.append_message(user_msg("a"))
    b = session.append_message(assistant_msg("b"))
    session.append_message(user_msg("c"))
    assert [m.id for m in session.get_history(b.id)] == [a.id, b.id]


def test_history_unknown_leaf_is_not_found(session):
    session.append_message(user_msg("a"))
    with pytest.raises(NotFound):
        session.get_history("missing")


def test_history_of_other_session_leaf_is_not_found(manager, session):
    other = manager.get_session(manager.create("o").id)
    m = other.append_message(user_msg("elsewhere"))
    with pytest.raises(NotFound):
        session.get_history(m.id)


def test_path_length_counts_messages_before_overlays(session):
    ids = [session.append_message(user_msg(f"m{i}")).id for i in range(6)]
    session.add_compaction("summary", ids[1], ids[4])
    assert session.get_path_length() == 6
    assert len(session.get_history()) == 3
    assert session.get_path_length(ids[2]) == 3


def test_get_message_and_message_count(session):
    m = session.append_message(user_msg("a"))
    assert session.get_message(m.id) == m
    assert session.get_message("nope") is None
    assert session.get_message_count() == 1
