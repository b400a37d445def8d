"""Closing from async code: `await session.close()` on `ArborSession` (as code written for
the SDK's `AsyncSQLiteSession` does) and `AsyncArborSession`, whose close is a coroutine."""

from __future__ import annotations

import asyncio
import threading

import pytest

from arbor_client import ArborClient
from arbor_client.agents_session import ArborSession, AsyncArborSession
from sessions_app.auth import create_key
from tests.conftest import make_agent


@pytest.fixture
def arbor(live_server, transactional_db):
    agent = make_agent("alice", "sdk agent")
    key = create_key(agent.owner)[1]
    with ArborClient(live_server.url, key) as client:
        yield {"url": live_server.url, "key": key, "agent": agent, "client": client}


async def test_arbor_session_close_can_be_awaited(arbor):
    session = await ArborSession.create(arbor["agent"].id, client=arbor["client"])
    await session.add_items([{"role": "user", "content": "hi"}])
    await session.close()
    await asyncio.gather(session.close(), session.close())  # twice, and at once, is fine
    with pytest.raises(RuntimeError, match="ArborSession is closed"):
        await session.get_items()


async def test_arbor_session_close_closes_without_being_awaited(arbor):
    session = await ArborSession.create(arbor["agent"].id, base_url=arbor["url"],
                                        api_key=arbor["key"])
    session.close()  # as SQLiteSession's: done when it returns
    assert session._store.client._http.is_closed
    with pytest.raises(RuntimeError, match="closed"):
        await session.add_items([])


async def test_async_arbor_session_over_the_api(arbor):
    session = await AsyncArborSession.create(arbor["agent"].id, base_url=arbor["url"],
                                             api_key=arbor["key"], session_settings={"limit": 1})
    assert isinstance(session, AsyncArborSession)
    async with session:
        await session.add_items([{"role": "user", "content": "one"},
                                 {"role": "assistant", "content": "two"}])
        assert await session.get_items() == [{"role": "assistant", "content": "two"}]
    assert session._store.client._http.is_closed  # the client it made, closed on exit
    with pytest.raises(RuntimeError, match="AsyncArborSession is closed"):
        await session.get_items()
    history = arbor["client"].history(session.session_id)["messages"]
    assert [m["parts"][0]["text"] for m in history] == ["one", "two"]


class _SlowStore:
    """A store whose history read waits until the test lets it finish."""

    def __init__(self) -> None:
        self.reading, self.release = threading.Event(), threading.Event()
        self.closed = False

    def path(self, leaf_id):
        self.reading.set()
        assert self.release.wait(10)
        return []

    def close(self):
        self.closed = True


async def test_async_close_waits_for_a_call_in_flight_and_the_loop_keeps_running():
    store = _SlowStore()
    session = AsyncArborSession("s", store=store)
    reading = asyncio.create_task(session.get_items())
    assert await asyncio.to_thread(store.reading.wait, 10)
    closing = asyncio.create_task(session.close())
    await asyncio.sleep(0.05)  # the loop runs while close waits for the read...
    assert not closing.done() and not store.closed
    store.release.set()  # ...so this line, on the loop, is reached
    assert await reading == []
    await asyncio.wait_for(closing, 10)
    assert store.closed
