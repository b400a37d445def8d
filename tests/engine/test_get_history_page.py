"""Session.get_history_page: a window of get_history, in a fixed number of queries;
Session.get_leaf_paths: every branch as read, at once."""

from __future__ import annotations

import pytest

from memory_core import InvalidInput, NotFound
from tests.conftest import assistant_msg, user_msg


def _grow(manager, session, count: int) -> list[str]:
    return [m.id for m in manager.append_all(session.id, [user_msg(f"m{i}")
                                                          for i in range(count)])]


@pytest.mark.parametrize("length", [10, 1000])
def test_history_page_query_count_does_not_grow(manager, session, length,
                                                django_assert_num_queries):
    ids = _grow(manager, session, length)
    with django_assert_num_queries(2):  # overlays or unloaded skills?; the page
        page = session.get_history_page(limit=5)
    assert [m.id for m in page.messages] == ids[-5:] and page.has_more
    with django_assert_num_queries(3):  # ...; the page above; before_id on the leaf's path
        page = session.get_history_page(limit=5, before_id=ids[-5])
    assert [m.id for m in page.messages] == ids[-10:-5]


@pytest.mark.parametrize("length", [10, 1000])
def test_a_compacted_history_page_query_count_does_not_grow(manager, session, length,
                                                            django_assert_num_queries,
                                                            empty_path_cache):
    ids = _grow(manager, session, length)
    session.add_compaction("the start", ids[0], ids[4])
    # views; the session's stamp with its views, the path; the siblings' page
    with django_assert_num_queries(4):
        page = session.get_history_page(limit=3)
    assert [m.id for m in page.messages] == ids[-3:]
    assert page.messages == session.get_history()[-3:]


def test_history_page_refuses_bad_values(manager, session):
    ids = _grow(manager, session, 3)
    # Unbranched: a message after the leaf is not on its path; one before it is.
    with pytest.raises(InvalidInput, match="not on the path"):
        session.get_history_page(leaf_id=ids[0], before_id=ids[2])
    assert [m.id for m in session.get_history_page(leaf_id=ids[1], before_id=ids[1])
            .messages] == ids[:1]
    branch = session.append_message(user_msg("side"), parent_id=ids[0])
    for limit in (0, -1, 501, True, "5"):
        with pytest.raises(InvalidInput):
            session.get_history_page(limit=limit)
    with pytest.raises(NotFound):
        session.get_history_page(before_id="missing")
    with pytest.raises(InvalidInput, match="not on the path"):
        session.get_history_page(before_id=ids[2], leaf_id=branch.id)
    with pytest.raises(InvalidInput, match="not on the path"):
        session.get_history_page(before_id=ids[2])  # the latest leaf is the side branch
    session.add_compaction("s", ids[0], ids[1])  # the same answers through the whole read
    with pytest.raises(InvalidInput, match="not on the path"):
        session.get_history_page(before_id=ids[2], leaf_id=branch.id)
    with pytest.raises(NotFound):
        session.get_history_page(before_id="missing")


def test_leaf_paths_are_every_branch_as_read_latest_last(manager, session):
    question = session.append_message(user_msg("q"))
    first = session.append_message(assistant_msg("a1"))
    second = session.append_message(assistant_msg("a2"), parent_id=question.id)
    paths = session.get_leaf_paths()
    assert [leaf for leaf, _ in paths] == [first.id, second.id]
    for leaf, path in paths:
        assert path == session.get_history(leaf)
    session.add_compaction("summary", question.id, first.id)
    assert dict(session.get_leaf_paths())[first.id] == session.get_history(first.id)
