"""What ArborSession asks the server for: `get_items(limit)` reads pages from the end of
its branch, not the whole path; `list_branches` is one request however many leaves; the
plain client pages history."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from arbor_client import ArborClient
from arbor_client.agents_session import ArborSession
from arbor_client.engine_session import LocalArborSession
from memory_core import SessionManager
from sessions_app.auth import create_key
from tests.conftest import assistant_msg, make_agent, user_msg


def run(coroutine: Any) -> Any:
    return asyncio.run(coroutine)


class Recorded:
    """An ArborClient whose requests are kept (method, path, query) with the number of
    messages each answer carried."""

    def __init__(self, url: str, key: str) -> None:
        self.requests: list[tuple[str, str, dict[str, str]]] = []
        self.messages_read = 0
        hooks = {"request": [self._request], "response": [self._response]}
        self.client = ArborClient(url, key, client=httpx.Client(event_hooks=hooks))

    def _request(self, request: httpx.Request) -> None:
        self.requests.append((request.method, request.url.path, dict(request.url.params)))

    def _response(self, response: httpx.Response) -> None:
        if response.request.url.path.endswith("/history"):
            response.read()
            self.messages_read += len(response.json().get("messages", []))

    def reset(self) -> None:
        self.requests.clear()
        self.messages_read = 0


@pytest.fixture
def arbor(live_server, transactional_db):
    agent = make_agent("alice", "sdk agent")
    recorded = Recorded(live_server.url, create_key(agent.owner)[1])
    yield {"agent": agent, "recorded": recorded}
    recorded.client.close()


def _long_session(agent: Any, count: int) -> str:
    manager = SessionManager.for_agent(agent)
    sid = manager.create("long").id
    manager.append_all(sid, [user_msg(f"question {i}") if i % 2 == 0
                             else assistant_msg(f"answer {i}") for i in range(count)])
    return sid


def test_get_items_with_a_limit_reads_only_that_many_messages(arbor):
    sid = _long_session(arbor["agent"], 400)
    recorded = arbor["recorded"]
    session = ArborSession(sid, client=recorded.client)
    recorded.reset()
    items = run(session.get_items(limit=20))
    assert [i["content"] for i in items] == [
        f"question {i}" if i % 2 == 0 else f"answer {i}" for i in range(380, 400)]
    assert recorded.messages_read == 20
    assert [(m, p.rsplit("/", 1)[-1], q.get("limit")) for m, p, q in recorded.requests] == [
        ("GET", "history", "20")]
    recorded.reset()
    everything = run(session.get_items())
    assert len(everything) == 400 and recorded.messages_read == 400
    assert run(session.get_items(limit=0)) == []


def test_get_items_pages_on_until_it_has_enough_items(arbor):
    """A message another client wrote may hold several items: pages are read from the
    end until they hold `limit` items, and the answer is what a whole read would give."""
    agent = arbor["agent"]
    manager = SessionManager.for_agent(agent)
    sid = manager.create("parts").id
    for i in range(6):
        manager.append_all(sid, [user_msg(f"q{i}"), {"role": "assistant", "parts": [
            {"type": "text", "text": f"calling {i}"},
            {"type": "tool-lookup", "toolCallId": f"c{i}", "state": "output-available",
             "input": {"n": i}, "output": f"found {i}"}]}])
    recorded = arbor["recorded"]
    session = ArborSession(sid, client=recorded.client)
    whole = run(session.get_items())
    for limit in (1, 3, 4, 7, 30):
        recorded.reset()
        assert run(session.get_items(limit=limit)) == whole[-limit:], limit
        if limit < 5:  # four items a turn: a page or two of `limit` messages, not all 12
            assert recorded.messages_read <= 2 * limit, limit


def test_list_branches_is_one_request_however_many_leaves(arbor):
    agent = arbor["agent"]
    manager = SessionManager.for_agent(agent)
    sid = manager.create("branchy").id
    session = manager.get_session(sid)
    question = session.append_message(user_msg("question"))
    for i in range(5):
        session.append_message(assistant_msg(f"answer {i}"), parent_id=question.id)
    recorded = arbor["recorded"]
    sdk = ArborSession(sid, client=recorded.client)
    recorded.reset()
    branches = run(sdk.list_branches())
    assert len(recorded.requests) == 1
    assert recorded.requests[0][1].endswith("/paths")
    assert len(branches) == 5 and sum(b["is_current"] for b in branches) == 1
    assert all(b["message_count"] == 2 and b["user_turns"] == 1 for b in branches)
    assert branches[-1]["is_current"]  # the latest leaf's branch
    local = LocalArborSession(sid, agent)
    assert run(local.list_branches()) == branches


def test_the_plain_client_pages_history(arbor):
    sid = _long_session(arbor["agent"], 30)
    client = arbor["recorded"].client
    page = client.history(sid, limit=10)
    assert len(page["messages"]) == 10 and page["has_more"] is True
    above = client.history(sid, limit=10, before_id=page["next_before_id"])
    assert above["messages"][-1]["id"] == page["messages"][0]["parent_id"]
    assert len(client.history(sid)["messages"]) == 30
