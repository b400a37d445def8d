"""Every event type's typed payload (memory_core/events.py) round-trips unchanged: built by
its constructor, emitted through the session's sink, then received by a WebSocket
subscriber both live and replayed from the outbox (`resume`), on SQLite and Postgres."""

from __future__ import annotations

import json
from typing import Any

import pytest
from channels.db import database_sync_to_async
from django.db import connection

from memory_core import SessionManager
from memory_core import events as ev
from memory_core.events import EPHEMERAL, EVENT_TYPES, PAYLOADS, Payload
from sessions_app.auth import create_key
from sessions_app.live import events as sink
from tests.api.test_websocket import connect, publish, receive, subscribed
from tests.conftest import assistant_msg, make_agent, user_msg

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
async def close_the_sync_threads_connection():
    yield
    await database_sync_to_async(lambda: connection.close())()


def samples(manager: SessionManager, session_id: str) -> list[Payload]:
    """One payload or more of every type, from real rows (session.deleted last: the
    socket closes after it)."""
    session = manager.get_session(session_id)
    a = session.append_message(user_msg("<b>hello</b> & \u00e9"))
    b = session.append_message(assistant_msg("hi", metadata={"model": "m"}), a.id)
    overlay = session.add_compaction("the gist", a.id, b.id)
    info = manager.update(session_id, model="m2", source="api")
    return [
        ev.message_appended(b), ev.message_updated(a), ev.branch_created(b),
        ev.messages_deleted([a.id], 2), ev.messages_cleared(),
        ev.session_status("thinking", stopping=True), ev.session_status("idle"),
        ev.compaction_started(), ev.compaction_completed(overlay),
        ev.compaction_completed(None), ev.compaction_failed("no model"),
        ev.compaction_removed(overlay.id),
        ev.context_updated("notes", "set_entry", key="k"),
        ev.context_updated("notes", "restore", number=2), ev.context_updated("notes", "add"),
        ev.prompt_refreshed("2026-01-02T03:04:05+00:00"), ev.prompt_refreshed(None),
        ev.session_renamed("renamed"), ev.session_updated(info, ev.UPDATED_FIELDS),
        ev.session_updated(info, ev.USAGE_FIELDS), ev.message_delta(b.id, a.id, "tok"),
        ev.session_deleted(),
    ]


def test_every_type_has_a_payload_and_a_sample():
    assert set(PAYLOADS) == set(EVENT_TYPES)


@database_sync_to_async
def emit_all(manager: SessionManager, session_id: str) -> tuple[list[Payload], list[dict]]:
    """The samples emitted through the session (the engine's one emit), with the
    after-commit publish caught: the test hands the frames to the channel layer. The
    frames caught start with those of the writes the samples were made from."""
    caught: list[dict[str, Any]] = []
    real_publish, sink.publish = sink.publish, caught.append
    try:
        payloads = samples(manager, session_id)
        session = manager.get_session(session_id)
        for payload in payloads:
            session.emit(payload)
    finally:
        sink.publish = real_publish
    return payloads, caught


async def test_every_payload_round_trips_live_and_through_the_outbox(transactional_db):
    agent = await database_sync_to_async(make_agent)("alice", "assistant")
    key = (await database_sync_to_async(create_key)(agent.owner))[1]
    manager = SessionManager.for_agent(agent)
    session_id = (await database_sync_to_async(manager.create)("typed")).id
    ws = connect(session_id, key=key)
    last_seq = (await subscribed(ws))["last_seq"]
    payloads, caught = await emit_all(manager, session_id)
    assert {p.type for p in payloads} == set(EVENT_TYPES)
    frames = caught[-len(payloads):]
    assert [f["type"] for f in frames] == [p.type for p in payloads]

    for payload in payloads:  # each built exactly to its declared shape
        declared = PAYLOADS[payload.type]
        keys = set(payload.data)
        assert declared.__required_keys__ <= keys <= declared.__required_keys__ | \
            declared.__optional_keys__, payload

    # Live: the frame each subscriber receives carries the payload as built.
    for frame in caught:
        await publish(frame)
    live = [await receive(ws) for _ in caught][-len(payloads):]
    wire = [json.loads(json.dumps(p.data)) for p in payloads]
    assert [f["data"] for f in live] == wire
    assert [f["type"] for f in live] == [p.type for p in payloads]
    assert all(("seq" in f) == (f["type"] not in EPHEMERAL) for f in live)
    assert all(f["session_id"] == session_id for f in live)
    await ws.disconnect()  # closed by the server after session.deleted

    # Replayed from the outbox: the same frames (message.delta is not stored).
    ws = connect(session_id, key=key)
    await subscribed(ws)
    await ws.send_json_to({"action": "resume", "after_seq": last_seq})
    stored = [f for f in live if f["type"] not in EPHEMERAL]
    replayed = [await receive(ws) for f in caught if f["type"] not in EPHEMERAL]
    assert replayed[-len(stored):] == stored
    await ws.disconnect()
