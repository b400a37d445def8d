"""arbor_client against a real server on loopback (pytest-django's live server)."""

from __future__ import annotations

import pytest

from arbor_client import ArborAPIError, ArborClient, AsyncArborClient
from sessions_app.auth import create_key
from tests.conftest import make_agent

from .fake_llm import install

# The WSGI live server reads the async event stream synchronously, and says so.
pytestmark = pytest.mark.filterwarnings("ignore:StreamingHttpResponse must consume")

TEXT = {"role": "user", "parts": [{"type": "text", "text": "Deploy on Thursday"}]}


@pytest.fixture
def key(transactional_db):
    return create_key(make_agent("alice", "first").owner)[1]


def test_sync_client_walks_the_api(live_server, key, monkeypatch):
    install(monkeypatch)  # the live server thread shares this process
    with ArborClient(live_server.url, key) as arbor:
        agent = arbor.create_agent("helper", context=[{"label": "memory", "max_tokens": 100}])
        session = arbor.create_session(agent["id"], "plans")
        first = arbor.append(session["id"], TEXT)
        arbor.append(session["id"], {"role": "assistant",
                                     "parts": [{"type": "text", "text": "Noted"}]})
        arbor.append(session["id"], {"role": "assistant", "parts": [
            {"type": "text", "text": "Or Friday?"}]}, parent_id=first["id"])
        assert [m["id"] for m in arbor.branches(session["id"], first["id"])["items"]][1]
        assert arbor.history(session["id"])["leaf_id"]
        assert arbor.search(session["id"], "thursday")["items"][0]["id"] == first["id"]
        assert arbor.call_tool(session["id"], "set_context",
                               {"label": "memory", "content": "likes tea"})["is_error"] is False
        assert arbor.get_block(session["id"], "memory")["content"] == "likes tea"
        answer = arbor.chat(session["id"], "hello")
        assert answer["parts"][0]["text"] == "You said: hello"
        events = list(arbor.chat_stream(session["id"], "remember blue"))
        assert events[-1]["type"] == "done"
        assert [a["id"] for a in arbor.iter_agents(page_size=1)][-1] == agent["id"]
        assert [s["id"] for s in arbor.iter_sessions(agent["id"])] == [session["id"]]
        doc = arbor.export_session(session["id"])
        assert arbor.import_session(agent["id"], doc)["message_count"] == len(doc["messages"])
        assert arbor.delete_message(session["id"], first["id"]) is None
        with pytest.raises(ArborAPIError) as caught:
            arbor.get_message(session["id"], first["id"])
        assert (caught.value.status, caught.value.code) == (404, "not_found")


def test_client_search_cuts_long_hits_unless_full(live_server, key):
    long_text = "Deploy on Thursday. " + "filler words here " * 200  # ~3,600 characters
    message = {"role": "user", "parts": [{"type": "text", "text": long_text}]}
    with ArborClient(live_server.url, key) as arbor:
        agent = arbor.create_agent("searcher")
        session = arbor.create_session(agent["id"])
        arbor.append(session["id"], message)
        for search, scope in ((arbor.search, session["id"]), (arbor.search_agent, agent["id"])):
            [cut] = search(scope, "thursday")["items"]
            assert cut["truncated"] is True and len(cut["content"]) == 2000
            assert cut["snippet"].startswith("Deploy on <mark>Thursday</mark>.")
            [whole] = search(scope, "thursday", full=True)["items"]
            assert whole["truncated"] is False and whole["content"] == long_text


async def test_async_client(live_server, key):
    async with AsyncArborClient(live_server.url, key) as arbor:
        agent = await arbor.create_agent("async helper")
        session = await arbor.create_session(agent["id"])
        await arbor.append_batch(session["id"], [TEXT, TEXT | {"role": "assistant"}])
        history = await arbor.history(session["id"])
        assert [m["role"] for m in history["messages"]] == ["user", "assistant"]
        assert [s["id"] async for s in arbor.iter_sessions(agent["id"])] == [session["id"]]
        with pytest.raises(ArborAPIError) as caught:
            await arbor.append(session["id"], {"role": "robot", "parts": []})
        assert caught.value.status == 422 and "role" in caught.value.detail


def test_bad_key_raises_401(live_server, transactional_db):
    with ArborClient(live_server.url, "arb_wrong") as arbor, pytest.raises(ArborAPIError) as e:
        arbor.list_agents()
    assert e.value.status == 401 and e.value.code == "unauthorized"
