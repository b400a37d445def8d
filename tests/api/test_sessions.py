"""Sessions over HTTP: registry, pagination, fork, usage, compactions and compaction runs."""

from __future__ import annotations

import pytest

from memory_core import SessionManager
from sessions_app import models
from tests.conftest import session_key

from .conftest import append, assistant_msg, error, ok, stored_state, user_msg


def test_create_get_and_shape(api, agent_id):
    body = ok(api.post(f"/agents/{agent_id}/sessions",
                       {"name": "Trip", "model": "gpt-x", "source": "cli"}), 201)
    assert set(body) == {"id", "agent_id", "name", "parent_session_id", "model", "source",
                         "input_tokens", "output_tokens", "estimated_cost", "end_reason",
                         "message_count", "created_at", "updated_at", "status", "pinned"}
    assert body["agent_id"] == agent_id and body["name"] == "Trip" and body["model"] == "gpt-x"
    assert ok(api.get(f"/sessions/{body['id']}")) == body


def test_parent_session_must_be_the_agents(api, agent_id, session_id):
    child = ok(api.post(f"/agents/{agent_id}/sessions", {"parent_session_id": session_id}), 201)
    assert child["parent_session_id"] == session_id
    error(api.post(f"/agents/{agent_id}/sessions", {"parent_session_id": "nope"}), 404)


def test_patch_renames_and_ends(api, session_id):
    assert ok(api.patch(f"/sessions/{session_id}", {"name": "New"}))["name"] == "New"
    body = ok(api.patch(f"/sessions/{session_id}", {"end_reason": "done"}))
    assert body["end_reason"] == "done" and body["name"] == "New"
    assert ok(api.patch(f"/sessions/{session_id}", {"end_reason": None}))["end_reason"] is None
    error(api.patch(f"/sessions/{session_id}", {"name": "x" * 201}), 422)
    error(api.patch(f"/sessions/{session_id}", {"model": "x"}), 422)  # not patchable


def test_delete_session(api, session_id, conversation):
    key = session_key(session_id)
    ok(api.delete(f"/sessions/{session_id}"), 204)
    error(api.get(f"/sessions/{session_id}"), 404)
    error(api.delete(f"/sessions/{session_id}"), 404)
    assert not models.Message.objects.filter(session_id=key).exists()


def test_list_newest_first_with_stable_cursor(api, agent_id):
    ids = [ok(api.post(f"/agents/{agent_id}/sessions", {"name": f"s{i}"}), 201)["id"]
           for i in range(5)]
    first = ok(api.get(f"/agents/{agent_id}/sessions", limit=2))
    assert [s["id"] for s in first["items"]] == [ids[4], ids[3]]
    ok(api.post(f"/agents/{agent_id}/sessions", {"name": "new"}), 201)  # lands on page one
    rest = ok(api.get(f"/agents/{agent_id}/sessions", limit=10, cursor=first["next_cursor"]))
    assert [s["id"] for s in rest["items"]] == [ids[2], ids[1], ids[0]]
    assert rest["next_cursor"] is None


@pytest.mark.parametrize("count", [2, 60])
def test_list_sessions_query_count_is_fixed(api, alice_agent, count, django_assert_num_queries):
    manager = SessionManager.for_agent(alice_agent)
    for i in range(count):
        manager.create(f"s{i}")
    with django_assert_num_queries(3):  # key lookup; agent; one page
        body = ok(api.get(f"/agents/{alice_agent.id}/sessions", limit=200))
    assert len(body["items"]) == count


def test_fork_copies_the_path(api, session_id, conversation):
    fork = ok(api.post(f"/sessions/{session_id}/fork", {"message_id": "a1", "name": "alt"}), 201)
    assert fork["parent_session_id"] == session_id and fork["name"] == "alt"
    history = ok(api.get(f"/sessions/{fork['id']}/history"))["messages"]
    assert [m["id"] for m in history] == ["u1", "a1"]
    assert history[0]["metadata"]["forked_from"] == {"session_id": session_id,
                                                     "message_id": "u1"}
    error(api.post(f"/sessions/{session_id}/fork", {"message_id": "ghost"}), 404)


def test_usage_accumulates(api, session_id):
    ok(api.post(f"/sessions/{session_id}/usage",
                {"input_tokens": 10, "output_tokens": 5, "cost": 0.25}))
    body = ok(api.post(f"/sessions/{session_id}/usage",
                       {"input_tokens": 1, "output_tokens": 2, "cost": 1}))
    assert (body["input_tokens"], body["output_tokens"], body["estimated_cost"]) == (11, 7, 1.25)
    error(api.post(f"/sessions/{session_id}/usage", {"input_tokens": "10"}), 422)


def test_compactions_add_list_remove(api, session_id, conversation):
    overlay = ok(api.post(f"/sessions/{session_id}/compactions", {
        "summary": "deploy talk", "from_message_id": "a1", "to_message_id": "a2"}), 201)
    assert ok(api.get(f"/sessions/{session_id}/compactions"))["items"] == [overlay]
    ok(api.delete(f"/sessions/{session_id}/compactions/{overlay['id']}"), 204)
    assert ok(api.get(f"/sessions/{session_id}/compactions"))["items"] == []
    error(api.delete(f"/sessions/{session_id}/compactions/{overlay['id']}"), 404)


def test_bad_compactions_change_nothing(api, session_id, conversation):
    before = stored_state(session_id)
    error(api.post(f"/sessions/{session_id}/compactions", {
        "summary": "x", "from_message_id": "ghost", "to_message_id": "a2"}), 404)
    error(api.post(f"/sessions/{session_id}/compactions", {  # not on the path
        "summary": "x", "from_message_id": "a1b", "to_message_id": "a2"}), 422)
    error(api.post(f"/sessions/{session_id}/compactions", {
        "summary": "", "from_message_id": "u1", "to_message_id": "a2"}), 422)
    assert stored_state(session_id) == before


def _long_session(api, session_id, turns=12):
    for i in range(turns):
        append(api, session_id, user_msg(f"Question {i} about the deployment of service {i}. "
                                         + "details " * 1500))
        append(api, session_id, assistant_msg(f"Answer {i}: deploy service {i} on day {i}. "
                                              + "reasons " * 1500))


def test_compact_runs_the_configured_compaction(api, session_id):
    _long_session(api, session_id)
    body = ok(api.post(f"/sessions/{session_id}/compact"))
    overlay = body["compaction"]
    assert overlay is not None and overlay["summary"]
    assert ok(api.get(f"/sessions/{session_id}/compactions"))["items"] == [overlay]
    history = ok(api.get(f"/sessions/{session_id}/history"))["messages"]
    assert any(m["metadata"].get("compaction") for m in history)


def test_compact_of_a_short_session_is_null(api, session_id):
    append(api, session_id, user_msg("hi"))
    assert ok(api.post(f"/sessions/{session_id}/compact")) == {"compaction": None}


def test_compact_and_split_continues_in_a_new_session(api, session_id, conversation):
    new = ok(api.post(f"/sessions/{session_id}/compact-and-split",
                      {"summary": "We moved the deploy to Thursday.", "name": "part 2"}), 201)
    assert new["parent_session_id"] == session_id and new["name"] == "part 2"
    assert ok(api.get(f"/sessions/{session_id}"))["end_reason"] == "compaction"
    first = ok(api.get(f"/sessions/{new['id']}/history"))["messages"][0]
    assert "Thursday" in first["parts"][0]["text"]


def test_compact_and_split_writes_its_own_summary(api, session_id):
    _long_session(api, session_id, turns=3)
    new = ok(api.post(f"/sessions/{session_id}/compact-and-split", {}), 201)
    assert ok(api.get(f"/sessions/{new['id']}"))["message_count"] == 1


def test_end_reason_longer_than_its_column_is_422(api, session_id):
    before = stored_state(session_id)
    error(api.patch(f"/sessions/{session_id}", {"end_reason": "x" * 101}), 422)
    assert stored_state(session_id) == before
