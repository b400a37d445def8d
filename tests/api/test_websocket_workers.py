"""Several workers (SPEC §10, §15): two daphne processes share the test database and Redis;
subscribers on both see every event of appends made through both, once, in seq order.

Needs Redis on 127.0.0.1:6379 (ARBOR_TEST_REDIS_URL to change it). Without it the test is
skipped, except under CI, where it fails.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from contextlib import ExitStack
from typing import Any

import httpx
import pytest
import redis
from websockets.asyncio.client import connect as ws_connect

from sessions_app import models
from sessions_app.auth import create_key
from tests.conftest import make_agent
from tests.live_server import running_daphne

REDIS_URL = os.environ.get("ARBOR_TEST_REDIS_URL", "redis://127.0.0.1:6379/7")
IDLE_SECONDS = 6.5  # longer than redis-py's default 5 s socket timeout (channels_redis#422)
APPENDS = 12  # per worker, all at once


def redis_reachable() -> bool:
    try:
        return bool(redis.Redis.from_url(REDIS_URL, socket_connect_timeout=1).ping())
    except redis.RedisError:
        return False


@pytest.fixture
def redis_url() -> str:
    if not redis_reachable():
        if os.environ.get("CI"):
            pytest.fail(f"Redis is not reachable at {REDIS_URL} (required in CI)")
        pytest.skip(f"Redis is not reachable at {REDIS_URL}")
    return REDIS_URL


@pytest.fixture
def two_workers(transactional_db, tmp_path, redis_url):
    with ExitStack() as stack:
        yield [stack.enter_context(running_daphne(tmp_path, env={"REDIS_URL": redis_url}))
               for _ in range(2)]


def ws_url(base: str, session_id: str) -> str:
    return base.replace("http://", "ws://") + f"/ws/sessions/{session_id}/"


async def subscribe(base: str, session_id: str, key: str) -> Any:
    ws = await ws_connect(ws_url(base, session_id),
                                  additional_headers={"Authorization": f"Bearer {key}"})
    hello = json.loads(await asyncio.wait_for(ws.recv(), 5))
    assert hello["type"] == "subscribed", hello
    return ws, hello["last_seq"]


async def collect(ws: Any, until_seq: int, deadline: float) -> list[dict[str, Any]]:
    frames: list[dict[str, Any]] = []
    while not frames or frames[-1].get("seq", 0) < until_seq:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        try:
            frame = json.loads(await asyncio.wait_for(ws.recv(), left))
        except TimeoutError:
            break
        if "seq" in frame:
            frames.append(frame)
    return frames


async def scenario(workers: list[str], session_id: str, key: str) -> dict[str, Any]:
    subscribers = [await subscribe(base, session_id, key) for base in workers for _ in range(2)]
    start_seq = subscribers[0][1]
    await asyncio.sleep(IDLE_SECONDS)
    for ws, _ in subscribers:  # still connected after idling
        await ws.send(json.dumps({"action": "ping"}))
        assert json.loads(await asyncio.wait_for(ws.recv(), 2)) == {"type": "pong"}

    headers = {"Authorization": f"Bearer {key}"}
    async with httpx.AsyncClient(headers=headers, timeout=30) as http:
        async def append(base: str, n: int) -> None:
            message = {"role": "user", "parts": [{"type": "text", "text": f"{base} {n}"}]}
            response = await http.post(f"{base}/api/v1/sessions/{session_id}/messages",
                                       json={"message": message})
            assert response.status_code == 201, response.text

        await asyncio.gather(*(append(base, n) for n in range(APPENDS) for base in workers))
        written = time.monotonic()
        final = (await http.get(f"{workers[0]}/api/v1/sessions/{session_id}")).json()
        history = (await http.get(f"{workers[1]}/api/v1/sessions/{session_id}/history",
                                  params={"limit": 500})).json()
    final_seq = await asyncio.to_thread(_event_seq, session_id)
    received = await asyncio.gather(*(collect(ws, final_seq, written + 1.0)
                                      for ws, _ in subscribers))
    for ws, _ in subscribers:
        await ws.close()
    return {"start": start_seq, "final": final_seq, "received": received, "session": final,
            "history": history}


def _event_seq(session_id: str) -> int:
    from django.db import connection

    try:
        return int(models.Session.objects.get(id=session_id).event_seq)
    finally:
        connection.close()


def test_every_subscriber_on_both_workers_gets_every_event_once_in_order(two_workers):
    agent = make_agent("alice", "assistant")
    key = create_key(agent.owner)[1]
    created = httpx.post(f"{two_workers[0]}/api/v1/agents/{agent.id}/sessions",
                         json={"name": "shared"}, headers={"Authorization": f"Bearer {key}"})
    session_id = created.json()["id"]

    result = asyncio.run(scenario(two_workers, session_id, key))

    expected = list(range(result["start"] + 1, result["final"] + 1))
    assert len(expected) >= 2 * APPENDS
    for frames in result["received"]:
        assert [f["seq"] for f in frames] == expected
        appended = [f for f in frames if f["type"] == "message.appended"]
        assert len(appended) == 2 * APPENDS
    messages = result["history"]["messages"]
    assert len(messages) == 2 * APPENDS
    # One chain: each message's parent is the one before it.
    parents = [m["parent_id"] for m in messages]
    assert parents[1:] == [m["id"] for m in messages[:-1]]


def test_with_redis_down_writes_succeed_and_resume_fetches_them(transactional_db, tmp_path):
    """A worker whose Redis is unreachable still writes (the live copy is lost, the outbox
    keeps it); a client that reconnects elsewhere and resumes receives every event."""
    agent = make_agent("alice", "assistant")
    key = create_key(agent.owner)[1]
    headers = {"Authorization": f"Bearer {key}"}
    with running_daphne(tmp_path, env={"REDIS_URL": "redis://127.0.0.1:1/0"}) as down, \
            running_daphne(tmp_path) as up:
        session_id = httpx.post(f"{down}/api/v1/agents/{agent.id}/sessions", json={},
                                headers=headers).json()["id"]
        for n in range(3):
            message = {"role": "user", "parts": [{"type": "text", "text": f"m{n}"}]}
            response = httpx.post(f"{down}/api/v1/sessions/{session_id}/messages",
                                  json={"message": message}, headers=headers, timeout=30)
            assert response.status_code == 201, response.text

        async def resume() -> tuple[int, list[dict[str, Any]]]:
            ws, last_seq = await subscribe(up, session_id, key)
            await ws.send(json.dumps({"action": "resume", "after_seq": 0}))
            frames = await collect(ws, last_seq, time.monotonic() + 2)
            await ws.close()
            return last_seq, frames

        last_seq, frames = asyncio.run(resume())
    assert [f["seq"] for f in frames] == list(range(1, last_seq + 1))
    appended = [f["data"] for f in frames if f["type"] == "message.appended"]
    assert len(appended) == 3
