"""Messages over HTTP: appends, branches, if_latest, batches, edits, deletes, path reads."""

from __future__ import annotations

import pytest

from memory_core import SessionManager
from sessions_app import models

from .conftest import append, assistant_msg, error, ok, stored_state, user_msg


def test_append_returns_the_stored_message(api, session_id):
    body = append(api, session_id, user_msg("hello", metadata={"source": "cli"}))
    assert body["role"] == "user"
    assert body["parts"] == [{"type": "text", "text": "hello"}]
    assert body["metadata"] == {"source": "cli"}
    assert body["parent_id"] is None
    assert body["id"] and body["created_at"]


def test_appends_chain_under_the_latest_leaf(api, session_id):
    first = append(api, session_id, user_msg("one"))
    second = append(api, session_id, assistant_msg("two"))
    assert second["parent_id"] == first["id"]


def test_parent_id_with_children_makes_a_branch(api, session_id, conversation):
    branches = ok(api.get(f"/sessions/{session_id}/messages/u1/branches"))["items"]
    assert [m["id"] for m in branches] == ["a1", "a1b"]
    history = ok(api.get(f"/sessions/{session_id}/history", leaf_id="a2"))
    assert [m["id"] for m in history["messages"]] == ["u1", "a1", "u2", "a2"]
    assert history["leaf_id"] == "a2"


def test_history_defaults_to_the_latest_leaf(api, session_id, conversation):
    history = ok(api.get(f"/sessions/{session_id}/history"))
    assert history["leaf_id"] == "a1b"
    assert [m["id"] for m in history["messages"]] == ["u1", "a1b"]
    assert ok(api.get(f"/sessions/{session_id}/leaf"))["message"]["id"] == "a1b"


def test_history_of_an_empty_session(api, session_id):
    assert ok(api.get(f"/sessions/{session_id}/history")) == {"leaf_id": None, "messages": []}
    assert ok(api.get(f"/sessions/{session_id}/leaf")) == {"message": None}


def test_history_applies_overlays_unless_raw(api, session_id, conversation):
    ok(api.post(f"/sessions/{session_id}/compactions",
                {"summary": "planned a deploy", "from_message_id": "u1",
                 "to_message_id": "u2"}), 201)
    read = ok(api.get(f"/sessions/{session_id}/history", leaf_id="a2"))
    assert [m["role"] for m in read["messages"]] == ["system", "assistant"]
    assert read["messages"][0]["metadata"]["compaction"]["to_message_id"] == "u2"
    raw = ok(api.get(f"/sessions/{session_id}/history", leaf_id="a2", raw="true"))
    assert [m["id"] for m in raw["messages"]] == ["u1", "a1", "u2", "a2"]


def test_history_leaf_id_is_the_stored_leaf_under_a_summary(api, session_id, conversation):
    ok(api.post(f"/sessions/{session_id}/compactions",
                {"summary": "all of it", "from_message_id": "u1", "to_message_id": "a2"}), 201)
    read = ok(api.get(f"/sessions/{session_id}/history", leaf_id="a2"))
    assert read["leaf_id"] == "a2"
    assert len(read["messages"]) == 1


def test_history_of_an_unknown_leaf_is_404(api, session_id, conversation):
    error(api.get(f"/sessions/{session_id}/history", leaf_id="nope"), 404, "not_found")


def test_if_latest_conflict_names_the_current_leaf(api, session_id, conversation):
    before = stored_state(session_id)
    body = error(api.post(f"/sessions/{session_id}/messages",
                          {"message": user_msg("late"), "if_latest": "a2"}), 409, "conflict")
    assert body["current_leaf_id"] == "a1b"
    assert stored_state(session_id) == before
    ok(api.post(f"/sessions/{session_id}/messages",
                {"message": user_msg("in time"), "if_latest": "a1b"}), 201)


def test_same_id_same_content_is_idempotent(api, session_id):
    first = append(api, session_id, user_msg("once", id="m1"))
    again = append(api, session_id, user_msg("once", id="m1"))
    assert again == first
    assert models.Session.objects.get(id=session_id).message_count == 1


def test_same_id_other_content_is_409_and_changes_nothing(api, session_id):
    append(api, session_id, user_msg("once", id="m1"))
    before = stored_state(session_id)
    error(api.post(f"/sessions/{session_id}/messages", {"message": user_msg("twice", id="m1")}),
          409, "conflict")
    assert stored_state(session_id) == before


def test_unknown_parent_is_404_and_changes_nothing(api, session_id, conversation):
    before = stored_state(session_id)
    error(api.post(f"/sessions/{session_id}/messages",
                   {"message": user_msg("x"), "parent_id": "ghost"}), 404, "not_found")
    assert stored_state(session_id) == before


def test_parent_in_another_session_is_409(api, agent_id, session_id, conversation):
    other = ok(api.post(f"/agents/{agent_id}/sessions", {"name": "other"}), 201)["id"]
    before = stored_state(other)
    error(api.post(f"/sessions/{other}/messages",
                   {"message": user_msg("x"), "parent_id": "u1"}), 409, "conflict")
    assert stored_state(other) == before


def test_batch_appends_a_chain(api, session_id):
    body = ok(api.post(f"/sessions/{session_id}/messages/batch",
                       {"messages": [user_msg("a"), assistant_msg("b"), user_msg("c")]}), 201)
    items = body["items"]
    assert [m["parent_id"] for m in items] == [None, items[0]["id"], items[1]["id"]]


def test_batch_is_atomic(api, session_id, conversation):
    before = stored_state(session_id)
    response = api.post(f"/sessions/{session_id}/messages/batch", {"messages": [
        user_msg("fine", id="new1"), user_msg("clash", id="u1")]})
    error(response, 409, "conflict")
    assert stored_state(session_id) == before


def test_batch_under_a_parent(api, session_id, conversation):
    items = ok(api.post(f"/sessions/{session_id}/messages/batch",
                        {"messages": [user_msg("again")], "parent_id": "a1"}), 201)["items"]
    assert items[0]["parent_id"] == "a1"


def test_get_put_delete_one_message(api, session_id, conversation):
    url = f"/sessions/{session_id}/messages/a1"
    assert ok(api.get(url))["parts"][0]["text"] == "Deploy on Tuesday"
    updated = ok(api.put(url, {"message": assistant_msg("Deploy on Wednesday")}))
    assert updated["parts"][0]["text"] == "Deploy on Wednesday"
    assert updated["parent_id"] == "u1"
    assert ok(api.get(url))["parts"][0]["text"] == "Deploy on Wednesday"
    ok(api.delete(url), 204)
    error(api.get(url), 404, "not_found")
    # a1's child u2 moved up to u1
    assert ok(api.get(f"/sessions/{session_id}/messages/u2"))["parent_id"] == "u1"


def test_put_with_a_different_body_id_is_422(api, session_id, conversation):
    before = stored_state(session_id)
    error(api.put(f"/sessions/{session_id}/messages/a1",
                  {"message": assistant_msg("x", id="a2")}), 422)
    assert stored_state(session_id) == before


def test_put_and_delete_unknown_message_are_404(api, session_id, conversation):
    before = stored_state(session_id)
    error(api.put(f"/sessions/{session_id}/messages/ghost",
                  {"message": assistant_msg("x")}), 404, "not_found")
    error(api.delete(f"/sessions/{session_id}/messages/ghost"), 404, "not_found")
    error(api.get(f"/sessions/{session_id}/messages/ghost/branches"), 404, "not_found")
    assert stored_state(session_id) == before


def test_clear_removes_every_message(api, session_id, conversation):
    ok(api.delete(f"/sessions/{session_id}/messages"), 204)
    assert ok(api.get(f"/sessions/{session_id}/tree")) == {"items": []}
    assert ok(api.get(f"/sessions/{session_id}"))["message_count"] == 0
    assert ok(api.get(f"/sessions/{session_id}/search", q="deployment"))["items"] == []


def test_tree_lists_every_message(api, session_id, conversation):
    rows = ok(api.get(f"/sessions/{session_id}/tree"))["items"]
    assert [r["id"] for r in rows] == ["u1", "a1", "u2", "a2", "a1b"]
    by_id = {r["id"]: r for r in rows}
    assert by_id["u1"]["child_count"] == 2
    assert by_id["a1b"]["parent_id"] == "u1"
    assert by_id["u1"]["preview"] == "Plan the deployment"


def test_unknown_parts_are_stored_unchanged(api, session_id):
    parts = [{"type": "data-weather", "data": {"city": "Lisbon", "temp": [1, 2.5, None]}},
             {"type": "tool-search", "toolCallId": "c1", "state": "output-available",
              "input": {"q": "x"}, "output": {"hits": 3}}]
    stored = append(api, session_id, {"role": "assistant", "parts": parts})
    assert stored["parts"] == parts
    assert ok(api.get(f"/sessions/{session_id}/messages/{stored['id']}"))["parts"] == parts


def _grow(session_id: str, count: int, agent) -> None:
    manager = SessionManager.for_agent(agent)
    manager.append_all(session_id, [user_msg(f"message {i} about deploys")
                                    for i in range(count)])


@pytest.mark.parametrize("count", [3, 300])
def test_history_and_tree_query_counts_do_not_grow(api, session_id, alice_agent, count,
                                                   django_assert_num_queries):
    _grow(session_id, count, alice_agent)
    # the key with the session its URL names (the one access check); the path; overlays
    with django_assert_num_queries(3):
        body = ok(api.get(f"/sessions/{session_id}/history"))
    assert len(body["messages"]) == count
    # the key with the session; all rows
    with django_assert_num_queries(2):
        assert len(ok(api.get(f"/sessions/{session_id}/tree"))["items"]) == count
