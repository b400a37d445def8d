"""The live-events WebSocket `/ws/sessions/{id}/` (SPEC §10, §13), against the real ASGI
app with Channels' WebsocketCommunicator and the in-memory channel layer.

Events are put in the outbox and published to the group directly here, so these tests
check the consumer alone (auth, frames, resume, ordering); the engine's emission has its
own tests.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from channels.testing import WebsocketCommunicator
from django.db import connection
from django.test import Client

from arbor.asgi import application
from memory_core import SessionManager
from memory_core.events import Event
from sessions_app import models
from sessions_app.auth import create_key
from sessions_app.live import events
from sessions_app.live.events import session_group
from tests.conftest import make_agent

pytestmark = pytest.mark.django_db(transaction=True)
ALLOWED_ORIGIN = b"http://localhost:8000"


@pytest.fixture(autouse=True)
async def close_the_sync_threads_connection():
    """The consumer's queries run on asgiref's shared sync thread, which keeps its own
    connection; close it so teardown can drop the test database."""
    yield
    await database_sync_to_async(lambda: connection.close())()


@pytest.fixture
def alice(transactional_db):
    agent = make_agent("alice", "assistant")
    key = create_key(agent.owner)[1]
    session = SessionManager.for_agent(agent).create("live")
    return {"agent": agent, "key": key, "session": session.id, "user": agent.owner}


@pytest.fixture
def login_cookie(alice) -> bytes:
    client = Client()
    client.force_login(alice["user"])
    return f"sessionid={client.cookies['sessionid'].value}".encode()


@pytest.fixture
def mallory_key(transactional_db):
    return create_key(make_agent("mallory", "other").owner)[1]


def connect(session_id: str, *, key: str | None = None, token: str | None = None,
            headers: list[tuple[bytes, bytes]] | None = None) -> WebsocketCommunicator:
    path = f"/ws/sessions/{session_id}/" + (f"?token={token}" if token else "")
    all_headers = list(headers or [])
    if key:
        all_headers.append((b"authorization", f"Bearer {key}".encode()))
    return WebsocketCommunicator(application, path, headers=all_headers)


async def receive(ws: WebsocketCommunicator, timeout: float = 2) -> dict[str, Any]:
    return json.loads(await ws.receive_from(timeout=timeout))


async def subscribed(ws: WebsocketCommunicator) -> dict[str, Any]:
    connected, _ = await ws.connect()
    assert connected
    frame = await receive(ws)
    assert frame["type"] == "subscribed", frame
    return frame


@database_sync_to_async
def store(session_id: str, *types_: str) -> list[dict[str, Any]]:
    """Events written by the engine's own sink (numbered, kept in the outbox), with the
    after-commit publish caught instead: the test publishes them when and as it likes."""
    caught: list[dict[str, Any]] = []
    real_publish = events.publish
    events.publish = caught.append
    try:
        for n, kind in enumerate(types_):
            events.ChannelsSink().emit(Event(kind, session_id, {"n": n}))  # type: ignore[arg-type]
    finally:
        events.publish = real_publish
    assert len(caught) == len(types_)
    return caught


async def publish(frame: dict[str, Any]) -> None:
    await get_channel_layer().group_send(session_group(frame["session_id"]),
                                         {"type": "arbor.event", "frame": frame})


# --- who may connect -------------------------------------------------------------------

async def test_an_api_key_in_the_header_subscribes_and_live_events_arrive(alice):
    ws = connect(alice["session"], key=alice["key"])
    hello = await subscribed(ws)
    (frame,) = await store(alice["session"], "message.appended")
    assert hello == {"type": "subscribed", "session_id": alice["session"],
                     "last_seq": frame["seq"] - 1}
    await publish(frame)
    assert await receive(ws) == frame
    await ws.disconnect()


async def test_an_api_key_as_token_query_parameter(alice):
    ws = connect(alice["session"], token=alice["key"])
    await subscribed(ws)
    await ws.disconnect()


async def test_a_browser_login_session_with_an_allowed_origin(alice, login_cookie):
    ws = connect(alice["session"], headers=[(b"cookie", login_cookie), (b"origin", ALLOWED_ORIGIN)])
    await subscribed(ws)
    await ws.disconnect()


async def test_a_login_session_without_origin_is_not_enough(alice, login_cookie):
    ws = connect(alice["session"], headers=[(b"cookie", login_cookie)])
    await ws.connect()
    assert (await receive(ws))["code"] == "unauthorized"
    assert (await ws.receive_output(timeout=1))["code"] == 4401


@pytest.mark.parametrize("origin", [b"http://evil.example", b"null", b"ftp://localhost"])
async def test_a_browser_origin_that_is_not_an_allowed_host_is_refused(alice, origin):
    ws = connect(alice["session"], key=alice["key"], headers=[(b"origin", origin)])
    connected, _ = await ws.connect()
    assert not connected


async def test_an_allowed_origin_with_a_key_is_let_in(alice):
    ws = connect(alice["session"], key=alice["key"],
                 headers=[(b"origin", b"https://127.0.0.1")])
    await subscribed(ws)
    await ws.disconnect()


@pytest.mark.parametrize("key", [None, "arb_not-a-key"])
async def test_no_key_or_a_wrong_key_is_unauthorized(alice, key):
    ws = connect(alice["session"], key=key)
    await ws.connect()
    assert (await receive(ws))["code"] == "unauthorized"
    assert (await ws.receive_output(timeout=1))["code"] == 4401


async def test_a_foreign_session_is_refused_exactly_as_a_missing_one(alice, mallory_key):
    answers = []
    for session_id in (alice["session"], "no-such-session"):
        ws = connect(session_id, key=mallory_key)
        await ws.connect()
        frame = await receive(ws)
        close = await ws.receive_output(timeout=1)
        answers.append((frame["type"], frame["code"], close["code"],
                        frame["detail"].replace(session_id, "ID")))
        assert await ws.receive_nothing()
    assert answers[0] == answers[1] == ("error", "not_found", 4404, "session ID not found")


@pytest.fixture
def limited_key(alice) -> str:
    other = models.Agent.objects.create(owner=alice["user"], name="other")
    return create_key(alice["user"], agent=other)[1]


async def test_a_key_limited_to_another_agent_does_not_see_the_session(alice, limited_key):
    ws = connect(alice["session"], key=limited_key)
    await ws.connect()
    assert (await receive(ws))["code"] == "not_found"


async def test_a_foreign_subscriber_receives_nothing_of_the_session(alice, mallory_key):
    ws = connect(alice["session"], key=mallory_key)
    await ws.connect()
    await receive(ws)
    await ws.receive_output(timeout=1)
    (frame,) = await store(alice["session"], "message.appended")
    await publish(frame)
    assert await ws.receive_nothing(timeout=0.3)


# --- client frames (SPEC §13) ------------------------------------------------------------

@pytest.mark.parametrize("text, code", [
    ("not json", "bad_frame"),
    ("[1, 2]", "bad_frame"),
    ('"ping"', "bad_frame"),
    ("{}", "bad_frame"),
    ('{"action": 3}', "bad_frame"),
    ('{"action": "dance"}', "unknown_action"),
    ('{"action": "resume"}', "invalid"),
    ('{"action": "resume", "after_seq": -1}', "invalid"),
    ('{"action": "resume", "after_seq": "3"}', "invalid"),
    ('{"action": "resume", "after_seq": 1.5}', "invalid"),
    ('{"action": "resume", "after_seq": true}', "invalid"),
    ("x" * 70_000, "bad_frame"),
])
async def test_bad_frames_get_an_error_event_and_the_socket_stays_open(alice, text, code):
    ws = connect(alice["session"], key=alice["key"])
    await subscribed(ws)
    await ws.send_to(text_data=text)
    error = await receive(ws)
    assert error["type"] == "error" and error["code"] == code and error["detail"], error
    await ws.send_json_to({"action": "ping"})
    assert await receive(ws) == {"type": "pong"}
    await ws.disconnect()


async def test_a_binary_frame_gets_an_error_event(alice):
    ws = connect(alice["session"], key=alice["key"])
    await subscribed(ws)
    await ws.send_to(bytes_data=b"\x00\x01")
    assert (await receive(ws))["code"] == "bad_frame"
    await ws.send_json_to({"action": "ping"})
    assert await receive(ws) == {"type": "pong"}
    await ws.disconnect()


async def test_explicit_subscribe_is_idempotent(alice):
    ws = connect(alice["session"], key=alice["key"])
    await subscribed(ws)
    await ws.send_json_to({"action": "subscribe"})
    assert (await receive(ws))["type"] == "subscribed"
    (frame,) = await store(alice["session"], "session.renamed")
    await publish(frame)
    assert await receive(ws) == frame
    assert await ws.receive_nothing(timeout=0.2)  # once, though subscribed twice
    await ws.disconnect()


# --- resume ------------------------------------------------------------------------------

async def test_resume_sends_what_was_missed_in_order_then_live_ones(alice):
    stored = await store(alice["session"], "message.appended", "message.appended",
                         "session.renamed")
    ws = connect(alice["session"], key=alice["key"])
    assert (await subscribed(ws))["last_seq"] == stored[-1]["seq"]
    await ws.send_json_to({"action": "resume", "after_seq": stored[0]["seq"]})
    assert [await receive(ws) for _ in range(2)] == stored[1:]
    (live,) = await store(alice["session"], "context.updated")
    await publish(live)
    assert await receive(ws) == live
    await ws.send_json_to({"action": "resume", "after_seq": live["seq"]})
    assert await ws.receive_nothing(timeout=0.2)
    await ws.disconnect()


async def test_resume_past_the_retention_asks_for_a_resync(alice):
    stored = await store(alice["session"], "message.appended", "message.appended",
                         "message.appended")
    await database_sync_to_async(lambda: models.SessionEvent.objects.filter(
        session__id=alice["session"], seq__lte=stored[1]["seq"]).delete())()
    ws = connect(alice["session"], key=alice["key"])
    await subscribed(ws)
    await ws.send_json_to({"action": "resume", "after_seq": stored[0]["seq"] - 1})
    assert await receive(ws) == {"type": "resync"}
    (live,) = await store(alice["session"], "message.appended")
    await publish(live)
    assert await receive(ws) == live  # live ones continue after a resync
    await ws.disconnect()


async def test_resume_from_a_seq_the_session_never_reached_asks_for_a_resync(alice):
    ws = connect(alice["session"], key=alice["key"])
    await subscribed(ws)
    await ws.send_json_to({"action": "resume", "after_seq": 10_000})
    assert await receive(ws) == {"type": "resync"}
    await ws.disconnect()


# --- delivery in seq order ------------------------------------------------------------------

async def test_a_frame_past_a_gap_waits_for_the_missing_one(alice):
    ws = connect(alice["session"], key=alice["key"])
    await subscribed(ws)
    first, second = await store(alice["session"], "message.appended", "message.appended")
    await publish(second)
    assert await ws.receive_nothing(timeout=0.05)  # held back
    await publish(first)
    assert [await receive(ws) for _ in range(2)] == [first, second]
    assert await ws.receive_nothing(timeout=0.5)  # the gap fill sends no duplicate
    await ws.disconnect()


async def test_a_gap_that_never_arrives_live_is_filled_from_the_outbox(alice):
    ws = connect(alice["session"], key=alice["key"])
    await subscribed(ws)
    first, second, third = await store(alice["session"], "message.appended",
                                       "message.appended", "message.appended")
    await publish(third)
    await publish(second)
    frames = [await receive(ws, timeout=2) for _ in range(3)]
    assert frames == [first, second, third]
    await publish(first)  # arriving late: a duplicate now, skipped
    assert await ws.receive_nothing(timeout=0.3)
    await ws.disconnect()


async def test_duplicates_are_skipped_and_deltas_pass_straight_through(alice):
    ws = connect(alice["session"], key=alice["key"])
    await subscribed(ws)
    (frame,) = await store(alice["session"], "message.appended")
    delta = {"type": "message.delta", "session_id": alice["session"], "data": {"text": "hi"}}
    await publish(frame)
    await publish(frame)
    await publish(delta)
    assert [await receive(ws) for _ in range(2)] == [frame, delta]
    assert await ws.receive_nothing(timeout=0.2)
    await ws.disconnect()


async def test_events_before_subscribing_are_not_replayed_live(alice):
    (old,) = await store(alice["session"], "message.appended")
    ws = connect(alice["session"], key=alice["key"])
    await subscribed(ws)
    await publish(old)  # a late publish of an event committed before the subscription
    (new,) = await store(alice["session"], "message.appended")
    await publish(new)
    assert await receive(ws) == new
    assert await ws.receive_nothing(timeout=0.2)
    await ws.disconnect()


async def test_many_swapped_frames_arrive_in_order(alice):
    ws = connect(alice["session"], key=alice["key"])
    await subscribed(ws)
    frames = await store(alice["session"], *["message.appended"] * 20)
    shuffled = frames[1::2] + frames[0::2]
    await asyncio.gather(*(publish(f) for f in shuffled))
    assert [await receive(ws) for _ in range(20)] == frames
    await ws.disconnect()


async def test_a_stalled_subscriber_slows_neither_writers_nor_other_subscribers(alice):
    """A subscriber that never reads has a bounded queue: once full, frames for it are
    dropped (it resumes later) and publishing goes on at full speed. A live subscriber
    whose queue overflowed in the burst gets the dropped frames from the outbox."""
    layer = get_channel_layer()
    burst = layer.capacity + 50
    stalled = await layer.new_channel()
    await layer.group_add(session_group(alice["session"]), stalled)
    ws = connect(alice["session"], key=alice["key"])
    await subscribed(ws)
    frames = await store(alice["session"], *["message.appended"] * burst)
    start = asyncio.get_running_loop().time()
    for frame in frames:
        await publish(frame)
    assert asyncio.get_running_loop().time() - start < 1.0
    assert [await receive(ws) for _ in range(burst)] == frames
    await layer.group_discard(session_group(alice["session"]), stalled)
    await ws.disconnect()


async def test_a_dropped_tail_is_fetched_once_the_burst_goes_quiet(alice):
    """Frames lost at the end of a burst leave no gap to notice; the consumer checks the
    session's seq after a quiet moment and fetches them."""
    ws = connect(alice["session"], key=alice["key"])
    await subscribed(ws)
    frames = await store(alice["session"], *["message.appended"] * 4)
    await publish(frames[0])  # the other three were stored but never published
    assert [await receive(ws) for _ in range(4)] == frames
    await ws.disconnect()


async def test_a_worker_joins_a_sessions_group_once_however_many_sockets_watch(alice):
    """Three sockets, one layer membership (the worker's hub): an event crosses the layer
    once per worker, not once per subscriber; the last socket out leaves the group."""
    layer = get_channel_layer()
    group = session_group(alice["session"])
    sockets = [connect(alice["session"], key=alice["key"]) for _ in range(3)]
    for ws in sockets:
        await subscribed(ws)
    assert len(layer.groups[group]) == 1
    (frame,) = await store(alice["session"], "message.appended")
    await publish(frame)
    for ws in sockets:
        assert await receive(ws) == frame
    for ws in sockets[:2]:
        await ws.disconnect()
    assert len(layer.groups[group]) == 1
    await sockets[2].disconnect()
    assert not layer.groups.get(group)


async def test_session_deleted_is_delivered_then_the_socket_closes_as_not_found(alice):
    ws = connect(alice["session"], key=alice["key"])
    await subscribed(ws)
    (frame,) = await store(alice["session"], "session.deleted")
    await publish(frame)
    assert await receive(ws) == frame
    assert (await ws.receive_output(timeout=1)) == {"type": "websocket.close", "code": 4404}


async def test_an_append_through_the_json_api_reaches_the_subscriber(alice):
    """End to end: the engine's sink publishes after commit, the socket delivers."""
    ws = connect(alice["session"], key=alice["key"])
    hello = await subscribed(ws)

    def append() -> dict[str, Any]:
        client = Client(headers={"Authorization": f"Bearer {alice['key']}"})
        message = {"role": "user", "parts": [{"type": "text", "text": "hello"}], "id": "m1"}
        response = client.post(f"/api/v1/sessions/{alice['session']}/messages",
                               {"message": message}, content_type="application/json")
        assert response.status_code == 201, response.content
        return response.json()

    await database_sync_to_async(append)()
    frame = await receive(ws)
    assert frame["type"] == "message.appended" and frame["seq"] == hello["last_seq"] + 1
    assert frame["session_id"] == alice["session"]
    await ws.disconnect()
