"""The JSON API pieces of branching chat: appending a new root, regenerating an answer,
chatting as a new root, and stopping a running turn."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connection

from memory_core import SessionManager
from sessions_app import models

from .conftest import Api, append, assistant_msg, error, ok, stored_state, user_msg
from .test_chat import parse_sse

# The test client reads the async event stream synchronously, and says so.
pytestmark = pytest.mark.filterwarnings("ignore:StreamingHttpResponse must consume")
BLANK = {"ARBOR_LLM_BASE_URL": "", "ARBOR_LLM_API_KEY": "", "ARBOR_LLM_MODEL": "",
         "ARBOR_ANTHROPIC_API_KEY": ""}


@pytest.fixture
def demo(settings):
    """The offline demo model answers (no LLM configured), unpaced."""
    for name, value in BLANK.items():
        setattr(settings, name, value)
    settings.ARBOR_DEMO_STREAM_DELAY = 0


# --------------------------------------------------------------- new roots
def test_append_as_a_new_root(api, session_id):
    first = append(api, session_id, user_msg("first"))
    root = append(api, session_id, user_msg("fresh start"), root=True)
    assert root["parent_id"] is None
    after = append(api, session_id, assistant_msg("reply"), parent_id=None)
    assert after["parent_id"] == root["id"]  # null parent_id: under the latest leaf
    history = ok(api.get(f"/sessions/{session_id}/history", leaf_id=first["id"]))
    assert [m["id"] for m in history["messages"]] == [first["id"]]


def test_root_with_parent_id_is_422_and_stores_nothing(api, session_id):
    first = append(api, session_id, user_msg("first"))
    before = stored_state(session_id)
    body = error(api.post(f"/sessions/{session_id}/messages", {
        "message": user_msg("x"), "parent_id": first["id"], "root": True}), 422)
    assert "parent_id or root" in body["detail"]
    body = error(api.post(f"/sessions/{session_id}/messages/batch", {
        "messages": [user_msg("x")], "parent_id": first["id"], "root": True}), 422)
    assert "parent_id or root" in body["detail"]
    error(api.post(f"/sessions/{session_id}/messages", {
        "message": user_msg("x"), "root": "yes"}), 422)
    assert stored_state(session_id) == before


def test_batch_starts_a_new_root(api, session_id):
    append(api, session_id, user_msg("old"))
    items = ok(api.post(f"/sessions/{session_id}/messages/batch", {
        "messages": [user_msg("q"), assistant_msg("a")], "root": True}), 201)["items"]
    assert items[0]["parent_id"] is None and items[1]["parent_id"] == items[0]["id"]


# -------------------------------------------------------------- regenerate
def test_regenerate_makes_a_numbered_sibling(api, session_id, demo):
    first = ok(api.post(f"/sessions/{session_id}/chat", {"content": "hello there"}))
    second = ok(api.post(f"/sessions/{session_id}/chat", {"regenerate": first["id"]}))
    assert second["parent_id"] == first["parent_id"] and second["id"] != first["id"]
    assert second["parts"][0]["text"].startswith("(variant 2) ")
    branches = ok(api.get(f"/sessions/{session_id}/messages/{first['parent_id']}/branches"))
    assert [m["id"] for m in branches["items"]] == [first["id"], second["id"]]
    events = parse_sse(b"".join(api.post(f"/sessions/{session_id}/chat",
                                         {"regenerate": second["id"], "stream": True})))
    assert events[-1]["type"] == "done"
    third = events[-1]["message"]
    assert third["parent_id"] == first["parent_id"]
    assert third["parts"][0]["text"].startswith("(variant 3) ")


def test_regenerate_errors(api, session_id, mallory, demo):
    first = ok(api.post(f"/sessions/{session_id}/chat", {"content": "hello there"}))
    before = stored_state(session_id)
    chat = f"/sessions/{session_id}/chat"
    error(api.post(chat, {"regenerate": "missing"}), 404, "not_found")
    error(api.post(chat, {"regenerate": "missing", "stream": True}), 404, "not_found")
    body = error(api.post(chat, {"regenerate": first["parent_id"]}), 422)
    assert "only an assistant answer" in body["detail"]
    for bad in ({"content": "x", "regenerate": first["id"]}, {}, {"stream": True},
                {"regenerate": first["id"], "parent_id": first["parent_id"]},
                {"regenerate": first["id"], "root": True}, {"regenerate": ""},
                {"regenerate": 5}):
        body = error(api.post(chat, bad), 422)
        assert body["detail"]
    error(mallory.post(chat, {"regenerate": first["id"]}), 404)
    assert stored_state(session_id) == before


def test_chat_as_a_new_root_and_under_any_message(api, session_id, demo):
    first = ok(api.post(f"/sessions/{session_id}/chat", {"content": "hello there"}))
    rooted = ok(api.post(f"/sessions/{session_id}/chat", {"content": "new topic", "root": True}))
    question = ok(api.get(f"/sessions/{session_id}/messages/{rooted['parent_id']}"))
    assert question["parent_id"] is None
    resent = ok(api.post(f"/sessions/{session_id}/chat", {
        "content": "hello again", "parent_id": None, "root": True, "stream": False}))
    assert resent["role"] == "assistant"
    before = stored_state(session_id)
    body = error(api.post(f"/sessions/{session_id}/chat", {
        "content": "x", "parent_id": first["id"], "root": True}), 422)
    assert "parent_id or root" in body["detail"]
    error(api.post(f"/sessions/{session_id}/chat", {
        "content": "x", "parent_id": first["id"], "root": True, "stream": True}), 422)
    assert stored_state(session_id) == before
    assert ok(api.get(f"/sessions/{session_id}"))["status"] == "idle"


# -------------------------------------------------------------------- stop
def test_stop_answers_whether_a_turn_was_running(api, session_id, mallory, agent_id):
    stop = f"/sessions/{session_id}/chat/stop"
    assert ok(api.post(stop)) == {"stopping": False}
    assert models.Session.objects.get(id=session_id).stop_requested_at is None
    SessionManager.for_agent(agent_id).get_session(session_id).set_status("thinking")
    assert ok(api.post(stop), 202) == {"stopping": True}
    assert models.Session.objects.get(id=session_id).stop_requested_at is not None
    error(mallory.post(stop), 404)
    error(api.post("/sessions/missing/chat/stop"), 404)


@pytest.mark.django_db(transaction=True)
def test_stop_ends_a_streaming_chat_request(alice_key, alice_agent, settings):
    for name, value in BLANK.items():
        setattr(settings, name, value)
    settings.ARBOR_DEMO_STREAM_DELAY = 0.05
    api = Api(alice_key)
    sid = ok(api.post(f"/agents/{alice_agent.id}/sessions", {}), 201)["id"]
    thread, out = streaming_chat(alice_key, sid, "hello there")
    time.sleep(0.3)
    assert ok(api.post(f"/sessions/{sid}/chat/stop"), 202) == {"stopping": True}
    thread.join(10)
    assert not thread.is_alive()
    events = parse_sse(out["body"])
    done = events[-1]
    assert done["type"] == "done" and done["message"]["metadata"]["interrupted"] is True
    stored = ok(api.get(f"/sessions/{sid}/messages/{done['message']['id']}"))
    assert stored["metadata"]["stopped"] is True
    assert ok(api.get(f"/sessions/{sid}"))["status"] == "idle"
    assert ok(api.post(f"/sessions/{sid}/chat/stop")) == {"stopping": False}


def streaming_chat(api_key: str, sid: str, content: str
                   ) -> tuple[threading.Thread, dict[str, bytes]]:
    """A streamed chat turn on another thread, returned once the session is thinking;
    out["body"] holds the stream when the thread ends."""
    out: dict[str, bytes] = {}

    def stream() -> None:
        try:
            out["body"] = b"".join(Api(api_key).post(f"/sessions/{sid}/chat", {
                "content": content, "stream": True}))
        finally:
            connection.close()

    thread = threading.Thread(target=stream)
    thread.start()
    deadline = time.monotonic() + 10
    while models.Session.objects.get(id=sid).status != "thinking":
        assert time.monotonic() < deadline
        time.sleep(0.02)
    return thread, out
