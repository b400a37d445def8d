"""The per-request work of the hot API paths: the key and the session its URL names in
one query, the message answered in the engine's own shape, and history served with the
stored JSON spliced in (the same bytes a decode-and-encode would give)."""

from __future__ import annotations

import pytest

from sessions_app import models
from sessions_app.auth import create_key, revoke
from tests.api.conftest import Api, error, ok
from tests.conftest import assistant_msg, make_agent, user_msg


@pytest.mark.parametrize("existing", [0, 50])
def test_append_runs_one_lookup_before_the_engine(api, session_id, existing, vendor,
                                                  django_assert_num_queries):
    for i in range(existing):
        ok(api.post(f"/sessions/{session_id}/messages", {"message": user_msg(f"m{i}")}), 201)
    # The key with its session, then the engine's: SQLite: BEGIN, the latest leaf,
    # counters, the row, its index row, its search counts' pending row, the event, COMMIT;
    # Postgres: the session lock, the
    # latest leaf, the row with its vector and counters, the event, and the transaction.
    # The same whatever the session's length.
    with django_assert_num_queries(9 if vendor == "sqlite" else 7):
        body = ok(api.post(f"/sessions/{session_id}/messages",
                           {"message": user_msg("hello")}), 201)
    assert body["role"] == "user" and body["parts"] == [{"type": "text", "text": "hello"}]
    assert body["created_at"].endswith("+00:00")


def test_the_lookup_keeps_tenancy_and_key_limits(api, session_id, mallory, alice_agent):
    missing = error(mallory.post("/sessions/no-such-session/messages",
                                 {"message": user_msg("x")}), 404)
    foreign = error(mallory.post(f"/sessions/{session_id}/messages",
                                 {"message": user_msg("x")}), 404)
    assert foreign["detail"] == missing["detail"].replace("no-such-session", session_id)
    error(mallory.get(f"/sessions/{session_id}/history"), 404)

    # A key limited to another agent of the same owner does not reach this session.
    other = models.Agent.objects.create(owner=alice_agent.owner, name="second")
    limited = Api(create_key(alice_agent.owner, agent=other)[1])
    error(limited.get(f"/sessions/{session_id}/history"), 404)
    error(limited.post(f"/sessions/{session_id}/messages", {"message": user_msg("x")}), 404)
    assert ok(api.get(f"/sessions/{session_id}/history"))["messages"] == []

    # A revoked key and an inactive owner answer 401, session or not.
    key, raw = create_key(alice_agent.owner)
    revoke(key)
    error(Api(raw).get(f"/sessions/{session_id}/history"), 401)
    owner = make_agent("carol", "c").owner
    carol_raw = create_key(owner)[1]
    owner.is_active = False
    owner.save()
    error(Api(carol_raw).get("/agents"), 401)


def test_history_splices_the_stored_json_exactly(api, session_id):
    parts = [{"type": "text", "text": "naïve café — 東京 \"quoted\" \\ back\nslash"},
             {"type": "data-chart", "data": {"values": [1, 2.5, -3e-7, None, True],
                                             "nested": {"deep": [{"k": "v"}]}}}]
    first = ok(api.post(f"/sessions/{session_id}/messages", {
        "message": {"role": "user", "parts": parts, "metadata": {"source": "test", "n": 1}}}), 201)
    second = ok(api.post(f"/sessions/{session_id}/messages", {
        "message": assistant_msg("plain")}), 201)
    history = ok(api.get(f"/sessions/{session_id}/history"))
    assert history["leaf_id"] == second["id"]
    assert history["messages"] == [first, second]
    assert history["messages"][0]["parts"] == parts
    assert history["messages"][0]["metadata"] == {"source": "test", "n": 1}
    assert history["messages"][1]["metadata"] == {}
    raw = ok(api.get(f"/sessions/{session_id}/history", raw="true"))
    assert raw["messages"] == [first, second]


def test_history_with_an_overlay_and_a_compaction_like_id(api, session_id):
    ids = [ok(api.post(f"/sessions/{session_id}/messages", {"message": m}), 201)["id"]
           for m in (user_msg("one"), assistant_msg("two"), user_msg("three"))]
    odd = ok(api.post(f"/sessions/{session_id}/messages", {
        "message": {"id": "compaction-lookalike", "role": "assistant", "content": "four",
                    "metadata": {"compaction": "not an overlay"}}}), 201)
    history = ok(api.get(f"/sessions/{session_id}/history"))
    assert history["leaf_id"] == odd["id"]
    ok(api.post(f"/sessions/{session_id}/compactions", {
        "summary": "one and two", "from_message_id": ids[0], "to_message_id": ids[1]}), 201)
    history = ok(api.get(f"/sessions/{session_id}/history"))
    texts = [m["parts"][0]["text"] for m in history["messages"]]
    assert texts[1:] == ["three", "four"] and "one and two" in texts[0]
    assert history["leaf_id"] == odd["id"]
