"""A browser tab's live message events carry the message rendered as the page shows it
(`html`, rendered once per event by the worker's hub: live/fragments.py), so the tab need
not fetch it; an agent's socket gets the frame unchanged."""

from __future__ import annotations

from typing import Any

import pytest
from channels.db import database_sync_to_async
from django.db import connection
from django.test import Client

from memory_core import SessionManager
from sessions_app.auth import create_key
from sessions_app.live import events as sink
from tests.api.test_websocket import ALLOWED_ORIGIN, connect, publish, receive, subscribed
from tests.conftest import make_agent, user_msg

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
async def close_the_sync_threads_connection():
    yield
    await database_sync_to_async(lambda: connection.close())()


@database_sync_to_async
def setup() -> dict[str, Any]:
    agent = make_agent("alice", "assistant")
    manager = SessionManager.for_agent(agent)
    session = manager.get_session(manager.create("live").id)
    first = session.append_message(user_msg("first"))
    browser = Client()
    browser.force_login(agent.owner)
    cookie = f"sessionid={browser.cookies['sessionid'].value}".encode()
    return {"session": session, "first": first, "key": create_key(agent.owner)[1],
            "browser": browser, "cookie": cookie}


@database_sync_to_async
def write(do: Any) -> list[dict[str, Any]]:
    """The frames a write publishes, caught: the test hands them to the channel layer."""
    caught: list[dict[str, Any]] = []
    real_publish, sink.publish = sink.publish, caught.append
    try:
        do()
    finally:
        sink.publish = real_publish
    return caught


@database_sync_to_async
def fetched(browser: Client, session_id: str, message_id: str) -> str:
    response = browser.get(f"/sessions/{session_id}/messages/{message_id}/",
                           headers={"HX-Request": "true"})
    assert response.status_code == 200
    return response.content.decode()


async def test_a_tab_gets_the_rendered_message_an_agent_the_frame_as_it_was():
    s = await setup()
    session = s["session"]
    tab = connect(session.id, headers=[(b"cookie", s["cookie"]), (b"origin", ALLOWED_ORIGIN)])
    agent = connect(session.id, key=s["key"])
    await subscribed(tab)
    await subscribed(agent)
    # A branch beside `first`'s answer: its counter shows 2/2 in the rendered fragment.
    frames = await write(lambda: [
        session.append_message({"role": "assistant", "parts": [
            {"type": "text", "text": "**bold** <script>alert(1)</script>"}]}, s["first"].id),
        session.append_message({"role": "assistant", "parts": [
            {"type": "text", "text": "another"}]}, s["first"].id)])
    appended = [f for f in frames if f["type"] == "message.appended"]
    for frame in frames:
        await publish(frame)
    got_tab = [await receive(tab) for _ in frames]
    got_agent = [await receive(agent) for _ in frames]

    assert got_agent == frames  # agents: the frames exactly as published, no html
    assert [{k: v for k, v in f.items() if k != "html"} for f in got_tab] == frames
    rendered = [f["html"] for f in got_tab if f["type"] == "message.appended"]
    assert len(rendered) == len(appended) == 2
    assert all("html" not in f for f in got_tab if f["type"] != "message.appended")
    # What the tab would have fetched, byte for byte, and sanitised like it.
    message_id = appended[1]["data"]["message"]["id"]
    assert rendered[1] == await fetched(s["browser"], session.id, message_id)
    first_answer = rendered[0]
    assert "<strong>bold</strong>" in first_answer and "<script>" not in first_answer
    assert "1/1" not in rendered[1] and "2/2" in rendered[1]
    await tab.disconnect()
    await agent.disconnect()


async def test_a_replayed_message_event_has_no_html_and_the_tab_fetches_it():
    s = await setup()
    session = s["session"]
    tab = connect(session.id, headers=[(b"cookie", s["cookie"]), (b"origin", ALLOWED_ORIGIN)])
    last = (await subscribed(tab))["last_seq"]
    await write(lambda: session.append_message(user_msg("missed")))
    await tab.send_json_to({"action": "resume", "after_seq": last})
    replayed = await receive(tab)
    assert replayed["type"] == "message.appended" and "html" not in replayed
    await tab.disconnect()


async def test_a_streaming_answers_partial_writes_are_not_rendered():
    s = await setup()
    session = s["session"]
    tab = connect(session.id, headers=[(b"cookie", s["cookie"]), (b"origin", ALLOWED_ORIGIN)])
    await subscribed(tab)
    frames = await write(lambda: session.upsert_message({
        "id": "answer-1", "role": "assistant", "parts": [{"type": "text", "text": "so far"}],
        "metadata": {"streaming": True}}, s["first"].id))
    for frame in frames:
        await publish(frame)
    got = [await receive(tab) for _ in frames]
    assert [f["type"] for f in got] == ["message.appended"] and "html" not in got[0]
    await tab.disconnect()
