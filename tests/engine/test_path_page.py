"""get_path_page (a page of a path with sibling positions) and get_newest_leaf_under:
fixed query counts however long the path or big the tree."""

from __future__ import annotations

import pytest

from memory_core import InvalidInput, NotFound, PathPage, SiblingInfo
from tests.conftest import assistant_msg, user_msg


def chain(manager, session, length: int, parent_id: str | None = None):
    return manager.append_all(session.id, [user_msg(f"m{i}") for i in range(length)],
                              parent_id)


def test_the_last_page_of_the_latest_path(manager, session):
    msgs = chain(manager, session, 7)
    page = session.get_path_page(limit=3)
    assert isinstance(page, PathPage)
    assert [m.text for m in page.messages] == ["m4", "m5", "m6"]
    assert page.has_more is True and page.leaf_id == msgs[-1].id
    assert set(page.siblings) == {m.id for m in page.messages}
    assert page.siblings[msgs[5].id] == SiblingInfo(1, 1, None, None)


def test_paging_up_with_before_id_reaches_the_root(manager, session):
    msgs = chain(manager, session, 7)
    leaf = msgs[-1].id
    seen = []
    page = session.get_path_page(leaf, limit=3)
    seen = [m.text for m in page.messages]
    while page.has_more:
        page = session.get_path_page(leaf, limit=3, before_id=page.messages[0].id)
        assert page.leaf_id == leaf
        seen = [m.text for m in page.messages] + seen
    assert seen == [f"m{i}" for i in range(7)]
    assert [m.text for m in page.messages] == ["m0"]


def test_a_whole_path_in_one_page_has_no_more(manager, session):
    chain(manager, session, 3)
    page = session.get_path_page(limit=3)
    assert [m.text for m in page.messages] == ["m0", "m1", "m2"] and page.has_more is False
    assert session.get_path_page(limit=50).has_more is False


def test_the_page_above_the_root_is_empty(manager, session):
    msgs = chain(manager, session, 2)
    page = session.get_path_page(limit=5, before_id=msgs[0].id)
    assert page.messages == [] and page.has_more is False and page.siblings == {}
    assert page.leaf_id == msgs[-1].id  # the latest leaf when none is named


def test_an_empty_session_has_an_empty_page(session):
    page = session.get_path_page()
    assert page == PathPage([], False, None, {})


def test_messages_are_raw_not_overlaid(manager, session):
    msgs = chain(manager, session, 5)
    session.add_compaction("summary", msgs[1].id, msgs[3].id)
    assert len(session.get_history()) == 3
    assert [m.id for m in session.get_path_page().messages] == [m.id for m in msgs]


def test_sibling_positions_on_a_branchy_path(session):
    q = session.append_message(user_msg("question"))
    a1 = session.append_message(assistant_msg("one"), parent_id=q.id)
    a2 = session.append_message(assistant_msg("two"), parent_id=q.id)
    a3 = session.append_message(assistant_msg("three"), parent_id=q.id)
    follow = session.append_message(user_msg("more"), parent_id=a2.id)
    page = session.get_path_page(follow.id)
    assert [m.id for m in page.messages] == [q.id, a2.id, follow.id]
    assert page.siblings[a2.id] == SiblingInfo(2, 3, a1.id, a3.id)
    assert page.siblings[q.id] == SiblingInfo(1, 1, None, None)
    assert page.siblings[follow.id] == SiblingInfo(1, 1, None, None)
    assert page.siblings[a2.id].to_dict() == {"index": 2, "count": 3, "previous_id": a1.id,
                                              "next_id": a3.id}
    first = session.get_path_page(a1.id).siblings[a1.id]
    last = session.get_path_page(a3.id).siblings[a3.id]
    assert (first.previous_id, first.next_id) == (None, a2.id)
    assert (last.index, last.previous_id, last.next_id) == (3, a2.id, None)


def test_unknown_ids_and_bad_limits(manager, session):
    msgs = chain(manager, session, 3)
    for kwargs in ({"leaf_id": "missing"}, {"before_id": "missing"},
                   {"leaf_id": "missing", "before_id": msgs[1].id}):
        with pytest.raises(NotFound):
            session.get_path_page(**kwargs)
    for limit in (0, -1, 501, True, "5", 2.5):
        with pytest.raises(InvalidInput, match="limit"):
            session.get_path_page(limit=limit)


def test_another_sessions_message_is_not_found(manager, session):
    other = manager.get_session(manager.create("other").id)
    elsewhere = other.append_message(user_msg("x"))
    with pytest.raises(NotFound):
        session.get_path_page(elsewhere.id)
    with pytest.raises(NotFound):
        session.get_newest_leaf_under(elsewhere.id)


@pytest.mark.parametrize("length", [10, 2000])
def test_page_query_count_does_not_grow(manager, session, length, django_assert_num_queries):
    msgs = chain(manager, session, length)
    with django_assert_num_queries(1):  # the bounded path CTE with its siblings' windows
        page = session.get_path_page(limit=50)
    assert page.messages[-1].id == msgs[-1].id and len(page.messages) == min(50, length)
    assert page.has_more is (length > 50)
    with django_assert_num_queries(1):
        session.get_path_page(msgs[length // 2].id, limit=20)
    with django_assert_num_queries(2):  # the page above before_id, the named leaf exists
        page = session.get_path_page(msgs[-1].id, limit=20, before_id=msgs[length // 2].id)
    assert page.messages[-1].id == msgs[length // 2 - 1].id
    with django_assert_num_queries(2):  # the page above before_id, the latest leaf
        session.get_path_page(limit=20, before_id=msgs[-5].id)


def test_newest_leaf_under_a_message(session):
    q = session.append_message(user_msg("q"))
    a1 = session.append_message(assistant_msg("a1"))
    deep = session.append_message(user_msg("deep"))
    a2 = session.append_message(assistant_msg("a2"), parent_id=q.id)
    newest_under_a1 = session.append_message(assistant_msg("late"), parent_id=a1.id)
    assert session.get_newest_leaf_under(q.id).id == newest_under_a1.id
    assert session.get_newest_leaf_under(a1.id).id == newest_under_a1.id
    assert session.get_newest_leaf_under(a2.id).id == a2.id  # no children: itself
    assert session.get_newest_leaf_under(deep.id).id == deep.id
    with pytest.raises(NotFound):
        session.get_newest_leaf_under("missing")
    with pytest.raises(InvalidInput):
        session.get_newest_leaf_under("")


def test_newest_leaf_after_a_delete_moved_children_up(session):
    a = session.append_message(user_msg("a"))
    b = session.append_message(user_msg("b"))
    c = session.append_message(user_msg("c"))
    session.delete_messages([b.id])
    assert session.get_newest_leaf_under(a.id).id == c.id


@pytest.mark.parametrize("size", [10, 2000])
def test_newest_leaf_query_count_does_not_grow(manager, session, size,
                                               django_assert_num_queries):
    trunk = chain(manager, session, size)
    tips = [session.append_message(assistant_msg(f"tip{i}"), parent_id=trunk[i * size // 5].id)
            for i in range(5)]
    with django_assert_num_queries(1):
        newest = session.get_newest_leaf_under(trunk[0].id)
    assert newest.id == tips[-1].id


@pytest.mark.django_db(transaction=True)
async def test_async_twins_read_the_same(agent):
    from asgiref.sync import sync_to_async
    from django.db import connection

    from memory_core import SessionManager

    manager = SessionManager.for_agent(agent)
    session = await manager.aget_session((await manager.acreate("async")).id)
    msgs = await manager.aappend_all(session.id, [user_msg(f"m{i}") for i in range(4)])
    page = await session.aget_path_page(limit=2)
    assert [m.id for m in page.messages] == [m.id for m in msgs[2:]]
    assert (await session.aget_newest_leaf_under(msgs[0].id)).id == msgs[-1].id
    await sync_to_async(lambda: connection.close())()
