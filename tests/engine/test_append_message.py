"""append_message: auto-parenting, explicit parents, idempotency, conflicts, bad input."""

from __future__ import annotations

import pytest

from memory_core import Conflict, InvalidInput, Message, NotFound
from tests.conftest import assistant_msg, user_msg


def test_auto_parent_is_latest_leaf(session):
    a = session.append_message(user_msg("one"))
    b = session.append_message(assistant_msg("two"))
    c = session.append_message(user_msg("three"))
    assert a.parent_id is None
    assert b.parent_id == a.id
    assert c.parent_id == b.id
    assert session.get_latest_leaf().id == c.id


def test_latest_leaf_after_branch_is_newest_childless_message(session):
    a = session.append_message(user_msg("q"))
    b = session.append_message(assistant_msg("answer 1"))
    b2 = session.append_message(assistant_msg("answer 2"), parent_id=a.id)
    assert session.get_latest_leaf().id == b2.id
    # Auto-parenting follows the newest branch.
    c = session.append_message(user_msg("follow-up"))
    assert c.parent_id == b2.id
    assert [m.id for m in session.get_history(b.id)] == [a.id, b.id]


def test_returns_immutable_message_with_text_projection(session):
    m = session.append_message(
        {"role": "assistant", "parts": [
            {"type": "reasoning", "text": "thinking"},
            {"type": "text", "text": "hello"},
            {"type": "custom-part", "payload": {"x": 1}},
        ], "metadata": {"model": "m1"}}
    )
    assert isinstance(m, Message)
    assert m.text == "thinking\nhello"
    assert m.metadata == {"model": "m1"}
    with pytest.raises(AttributeError):
        m.role = "user"  # type: ignore[misc]
    stored = session.get_message(m.id)
    assert stored == m
    # Unknown part types come back unchanged.
    assert stored.parts[2] == {"type": "custom-part", "payload": {"x": 1}}
    assert set(m.to_dict()) == {"id", "parent_id", "role", "parts", "metadata", "created_at"}


def test_content_shorthand_makes_one_text_part(session):
    m = session.append_message({"role": "user", "content": "short"})
    assert m.parts == [{"type": "text", "text": "short"}]


def test_append_accepts_a_message_object(session, manager):
    first = session.append_message(user_msg("hi"))
    other = manager.get_session(manager.create("copy").id)
    copied = other.append_message(first)
    assert copied.id == first.id and copied.parts == first.parts


def test_caller_supplied_id_is_kept(session):
    m = session.append_message(user_msg("hi", id="msg-1"))
    assert m.id == "msg-1"
    assert session.get_message("msg-1").text == "hi"


def test_identical_append_is_idempotent(session):
    m1 = session.append_message(user_msg("hi", id="x"))
    m2 = session.append_message(user_msg("hi", id="x"))
    assert m1 == m2
    assert session.get_message_count() == 1
    assert session.get_path_length() == 1


def test_same_id_other_content_is_conflict_and_stores_nothing(session):
    session.append_message(user_msg("hi", id="x"))
    with pytest.raises(Conflict) as err:
        session.append_message(user_msg("changed", id="x"))
    assert err.value.code == "conflict"
    assert session.get_message("x").text == "hi"
    assert session.get_message_count() == 1


def test_unknown_parent_is_not_found_and_stores_nothing(session):
    session.append_message(user_msg("root"))
    with pytest.raises(NotFound):
        session.append_message(user_msg("orphan"), parent_id="nope")
    assert session.get_message_count() == 1


def test_parent_in_another_session_is_conflict(manager, session):
    other = manager.get_session(manager.create("other").id)
    foreign = other.append_message(user_msg("elsewhere"))
    with pytest.raises(Conflict):
        session.append_message(user_msg("x"), parent_id=foreign.id)
    assert session.get_message_count() == 0


def test_parent_of_another_tenant_looks_unknown(session, other_manager):
    theirs = other_manager.get_session(other_manager.create("t").id)
    secret = theirs.append_message(user_msg("secret"))
    with pytest.raises(NotFound):
        session.append_message(user_msg("x"), parent_id=secret.id)


def test_if_latest_succeeds_while_leaf_unchanged(session):
    a = session.append_message(user_msg("a"))
    b = session.append_message(assistant_msg("b"), if_latest=a.id)
    assert b.parent_id == a.id


def test_if_latest_conflict_names_current_leaf(session):
    a = session.append_message(user_msg("a"))
    b = session.append_message(assistant_msg("b"))
    with pytest.raises(Conflict) as err:
        session.append_message(user_msg("late"), if_latest=a.id)
    assert err.value.current_leaf_id == b.id
    assert b.id in err.value.detail
    assert session.get_message_count() == 2


def test_every_write_bumps_updated_at(manager, session):
    before = manager.get(session.id).updated_at
    session.append_message(user_msg("x"))
    after = manager.get(session.id).updated_at
    assert after > before


@pytest.mark.parametrize(
    "bad",
    [
        {"role": "robot", "parts": []},
        {"role": "user"},
        {"role": "user", "parts": "text"},
        {"role": "user", "parts": [{"text": "no type"}]},
        {"role": "user", "parts": [], "metadata": []},
        {"role": "user", "parts": [], "id": 5},
        {"role": "user", "parts": [], "id": "x" * 300},
        {"role": "user", "parts": [{"type": "text", "text": "\ud800"}]},
        {"role": "user", "parts": [{"type": "text", "n": 2**70}]},
        "not a message",
        None,
    ],
)
def test_bad_message_is_invalid_and_stores_nothing(session, bad):
    session.append_message(user_msg("keep"))
    with pytest.raises(InvalidInput):
        session.append_message(bad)
    assert session.get_message_count() == 1


def test_deeply_nested_parts_are_rejected_cleanly(session):
    deep: dict = {"type": "data"}
    cursor = deep
    for _ in range(1000):
        cursor["child"] = {}
        cursor = cursor["child"]
    with pytest.raises(InvalidInput):
        session.append_message({"role": "user", "parts": [deep]})
    assert session.get_message_count() == 0


def test_nul_characters_are_stored_safely(session):
    m = session.append_message(user_msg("before\x00after"))
    stored = session.get_message(m.id)
    assert stored.parts[0]["text"] == "before\x00after"
    assert "\x00" not in stored.text


def test_append_to_deleted_session_is_not_found(manager, session):
    manager.delete(session.id)
    with pytest.raises(NotFound):
        session.append_message(user_msg("x"))


def _statements(captured):
    return [q["sql"] for q in captured if "SAVEPOINT" not in q["sql"]]


@pytest.mark.parametrize("length", [10, 300])
def test_append_query_count_is_fixed(manager, length, vendor):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    session = manager.get_session(manager.create("counted").id)
    manager.append_all(session.id, [user_msg(f"m{i}") for i in range(length)])
    with CaptureQueriesContext(connection) as ctx:
        session.append_message(user_msg("one more"))
    # lock + count the session row, find the latest leaf, insert (+ the FTS5 row and the
    # search counts' pending row on SQLite), then its message.appended event: one INSERT
    # into the outbox that also numbers it (no branch check: the latest leaf has no children).
    assert len(_statements(ctx.captured_queries)) == (6 if vendor == "sqlite" else 4)
