"""The JSON API and the pages refuse a second chat turn while one runs (409 `conflict`,
nothing stored), as the engine does at every door; the turn's end frees the session."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from memory_core import SessionManager
from sessions_app import models

from .conftest import Api, error, ok
from .test_chat import parse_sse
from .test_chat_branches import BLANK, streaming_chat

pytestmark = [pytest.mark.filterwarnings("ignore:StreamingHttpResponse must consume"),
              pytest.mark.django_db(transaction=True)]


def _texts(sid: str) -> list[str]:
    session = models.Session.objects.get(id=sid)
    manager = SessionManager.for_agent(session.agent_id)
    return [m.text for m in manager.get_session(sid).storage.all_messages(sid)]


@pytest.fixture
def slow_demo(settings):
    for name, value in BLANK.items():
        setattr(settings, name, value)
    settings.ARBOR_DEMO_STREAM_DELAY = 0.05


def test_a_second_chat_while_a_turn_streams_answers_409_and_stores_nothing(
        alice_key, alice_agent, slow_demo):
    api = Api(alice_key)
    sid = ok(api.post(f"/agents/{alice_agent.id}/sessions", {}), 201)["id"]
    thread, out = streaming_chat(alice_key, sid, "the first question")
    assert ok(api.get(f"/sessions/{sid}"))["status"] == "thinking"
    for body in ({"content": "a second question", "stream": True},
                 {"content": "a second question"}):
        refused = error(api.post(f"/sessions/{sid}/chat", body), 409)
        assert refused["code"] == "conflict" and "busy" in refused["detail"]
    error(api.post(f"/sessions/{sid}/compact"), 409)
    roles = [m["role"] for m in ok(api.get(f"/sessions/{sid}/history"))["messages"]]
    assert roles in (["user"], ["user", "assistant"])  # the first turn's own, no more
    assert "a second question" not in _texts(sid)
    assert models.Session.objects.get(id=sid).compactions.count() == 0
    # Stopping the running turn frees the session: the next turn runs.
    assert ok(api.post(f"/sessions/{sid}/chat/stop"), 202) == {"stopping": True}
    thread.join(10)
    assert not thread.is_alive()
    assert parse_sse(out["body"])[-1]["type"] == "done"
    again = ok(api.post(f"/sessions/{sid}/chat", {"content": "a second question"}))
    assert again["role"] == "assistant"
    assert ok(api.get(f"/sessions/{sid}"))["status"] == "idle"


def test_the_page_refuses_a_running_turn_but_not_one_whose_process_died(
        alice_key, alice_agent, slow_demo):
    api = Api(alice_key)
    sid = ok(api.post(f"/agents/{alice_agent.id}/sessions", {}), 201)["id"]
    thread, _ = streaming_chat(alice_key, sid, "the first question")
    browser = Client()
    browser.force_login(alice_agent.owner)
    refused = browser.post(f"/sessions/{sid}/send", {"content": "from the page"})
    assert refused.status_code == 409
    assert "from the page" not in _texts(sid)
    ok(api.post(f"/sessions/{sid}/chat/stop"), 202)
    thread.join(10)
    # A server that crashed mid-turn left "thinking" behind, long ago: the page shows
    # the turn failed and lets the user go on, the API says so too.
    models.Session.objects.filter(id=sid).update(
        status="thinking", turn_seen_at=timezone.now() - timedelta(hours=1))
    page = browser.get(f"/sessions/{sid}/")
    assert b'data-session-status="error"' in page.content
    assert ok(api.get(f"/sessions/{sid}"))["status"] == "error"
    assert browser.post(f"/sessions/{sid}/send", {"content": "from the page"}).status_code == 202
    deadline = time.monotonic() + 10
    while models.Session.objects.get(id=sid).status != "idle":
        assert time.monotonic() < deadline
        time.sleep(0.02)
    assert "from the page" in _texts(sid)


def test_every_door_that_starts_a_turn_refuses_a_second_one(
        alice_key, alice_agent, slow_demo):
    """The busy rule lives in the engine (busy.claim): the pages' send, branch,
    regenerate and compact, and the JSON API's chat, regenerate and compact all answer
    409 while a turn runs, and store nothing. (No MCP tool starts a turn.)"""
    api = Api(alice_key)
    sid = ok(api.post(f"/agents/{alice_agent.id}/sessions", {}), 201)["id"]
    answer = ok(api.post(f"/sessions/{sid}/chat", {"content": "an earlier question"}))
    question = answer["parent_id"]
    thread, _ = streaming_chat(alice_key, sid, "the first question")
    browser = Client()
    browser.force_login(alice_agent.owner)
    base = f"/sessions/{sid}/"
    for path, form in [("send", {"content": "page send"}),
                       (f"messages/{question}/branch", {"content": "page branch"}),
                       (f"messages/{answer['id']}/regenerate", {}),
                       ("compact", {})]:
        assert browser.post(base + path, form).status_code == 409, path
    refused = error(api.post(f"/sessions/{sid}/chat", {"regenerate": answer["id"]}), 409)
    assert refused["code"] == "conflict"
    error(api.post(f"/sessions/{sid}/chat", {"content": "api", "parent_id": question}), 409)
    assert not {"page send", "page branch", "api"} & set(_texts(sid))
    ok(api.post(f"/sessions/{sid}/chat/stop"), 202)
    thread.join(10)
    assert not thread.is_alive()
    assert not {"page send", "page branch", "api"} & set(_texts(sid))
