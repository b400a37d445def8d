"""What the SDK's own tests do not cover: Arbor's tree under the session (other clients'
branches and multi-part messages), several event loops and threads, values only the
SDK's SQLite store keeps, AdvancedSQLiteSession's features, and the in-process variant."""

from __future__ import annotations

import asyncio
import json
import threading

import pytest
from agents import Agent, Runner, set_tracing_disabled  # noqa: E402
from agents.testing import ScriptedModel  # noqa: E402
from agents.usage import Usage  # noqa: E402

from arbor_client import ArborClient
from arbor_client.agents_session import ArborSession
from arbor_client.engine_session import LocalArborSession
from sessions_app.auth import create_key
from tests.agents_sdk.upstream.test_responses import get_text_message
from tests.conftest import make_agent

set_tracing_disabled(True)


@pytest.fixture
def arbor(live_server, transactional_db):
    agent = make_agent("alice", "sdk agent")
    key = create_key(agent.owner)[1]
    with ArborClient(live_server.url, key) as client:
        yield {"url": live_server.url, "key": key, "agent": agent, "client": client}


def new_session(arbor, **options) -> ArborSession:
    sid = arbor["client"].create_session(arbor["agent"].id, "sdk")["id"]
    return ArborSession(sid, client=arbor["client"], **options)  # closed by the fixture


def user(text):
    return {"role": "user", "content": text}


def said(text):
    return {"role": "assistant", "content": text}


async def test_close_leaves_a_client_the_caller_passed_open(arbor):
    session = await ArborSession.create(arbor["agent"].id, client=arbor["client"])
    session.close()
    assert arbor["client"].get_session(session.session_id)["id"] == session.session_id


async def test_close_then_any_use_raises(arbor):
    session = new_session(arbor)
    await session.add_items([user("hi")])
    session.close()
    session.close()  # twice is fine
    for call in (session.get_items(), session.add_items([]), session.pop_item(),
                 session.clear_session()):
        with pytest.raises(RuntimeError, match="ArborSession is closed"):
            await call


def test_one_session_from_several_event_loops_and_threads(arbor):
    session = new_session(arbor)
    asyncio.run(session.add_items([user("first loop")]))
    asyncio.run(session.add_items([user("second loop")]))
    errors = []

    def write(n):
        try:
            for i in range(2):
                asyncio.run(session.add_items([user(f"thread {n}.{i}")]))
        except Exception as exc:  # pragma: no cover - what the test looks for
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors == []
    items = asyncio.run(session.get_items())
    assert len(items) == 10 and items[0]["content"] == "first loop"
    session.close()


async def test_session_settings_default_and_limit(arbor):
    from agents.memory import SessionSettings

    assert new_session(arbor).session_settings == SessionSettings()
    session = new_session(arbor, session_settings={"limit": 2})
    await session.add_items([user("a"), said("b"), user("c")])
    assert [i["content"] for i in await session.get_items()] == ["b", "c"]
    assert len(await session.get_items(limit=3)) == 3


async def test_pop_follows_the_sessions_own_path_past_a_branch_point(arbor):
    session = new_session(arbor)
    await session.add_items([user("q"), said("a1")])
    client = arbor["client"]
    q = client.history(session.session_id)["messages"][0]
    # Another client (a regenerate in the UI) answers q again: a branch beside a1.
    client.append(session.session_id, {"role": "assistant", "parts": [
        {"type": "text", "text": "a2"}]}, parent_id=q["id"])
    await session.add_items([user("q2")])  # on the latest branch: q, a2, q2
    assert [i["content"] for i in await session.get_items()] == ["q", "a2", "q2"]
    assert (await session.pop_item())["content"] == "q2"
    assert (await session.pop_item())["content"] == "a2"
    assert await session.get_items() == [user("q")]  # not q, a1: the SDK's store gives [q]
    await session.add_items([said("a3")])  # appended where the session stands
    assert [i["content"] for i in await session.get_items()] == ["q", "a3"]
    assert len(client.branches(session.session_id, q["id"])["items"]) == 2  # a1 and a3
    assert await session.pop_item() == said("a3")  # the session stands on q again
    client.delete_message(session.session_id, q["id"])  # ...which another client deletes
    assert await session.get_items() == [said("a1")]  # the latest leaf, then


async def test_pop_takes_one_item_of_a_message_another_client_wrote(arbor):
    session = new_session(arbor)
    client = arbor["client"]
    client.append(session.session_id, {"role": "user", "parts": [{"type": "text", "text": "go"}]})
    client.append(session.session_id, {"role": "assistant", "parts": [
        {"type": "text", "text": "Looking it up"},
        {"type": "tool-lookup", "toolCallId": "c1", "state": "output-available",
         "input": {"q": "x"}, "output": "found"}]})
    assert [i.get("type", "message") for i in await session.get_items()] == [
        "message", "message", "function_call", "function_call_output"]
    assert await session.pop_item() == {"type": "function_call_output", "call_id": "c1",
                                        "output": "found"}
    stored = client.history(session.session_id)["messages"][-1]["parts"]
    assert stored[1]["state"] == "input-available" and "output" not in stored[1]
    assert (await session.pop_item())["type"] == "function_call"
    assert await session.pop_item() == said("Looking it up")
    assert await session.get_items() == [user("go")]


@pytest.mark.parametrize("value", [2**70, -(2**64), float("nan"), float("inf"), "\ud800 lone",
                                   "nul\x00byte"])
async def test_values_the_sdk_store_keeps_round_trip(arbor, value):
    session = new_session(arbor)
    item = {"type": "function_call_output", "call_id": "c", "output": "ok", "extra": [value]}
    await session.add_items([user(f"{value!r}"), item])
    back = await session.get_items()
    assert json.dumps(back) == json.dumps([user(f"{value!r}"), item])
    assert await session.pop_item() is not None and len(await session.get_items()) == 1


async def test_tool_calls_are_stored_as_ai_sdk_tool_parts(arbor):
    session = new_session(arbor)
    await session.add_items([
        user("add 2 3"),
        {"type": "function_call", "call_id": "k", "name": "add", "arguments": '{"a": 2, "b": 3}'},
        {"type": "function_call_output", "call_id": "k", "output": "5"}])
    await session.add_items([{"type": "function_call_output", "call_id": "k", "output": "5!"}])
    parts = [m["parts"][0] for m in arbor["client"].history(session.session_id)["messages"]]
    assert parts[1] == {"type": "tool-add", "toolCallId": "k", "state": "input-available",
                        "input": {"a": 2, "b": 3}}
    for part in parts[2:]:  # the call's name and input found in the same batch or stored
        assert part["type"] == "tool-add" and part["state"] == "output-available"
        assert part["input"] == {"a": 2, "b": 3}


async def test_branches_are_arbors_tree(arbor):
    session = new_session(arbor)
    await session.add_items([user("plan a trip"), said("Where to?"), user("Lisbon"),
                             said("Booked Lisbon.")])
    assert [b["branch_id"] for b in await session.list_branches()] == ["main"]
    name = await session.create_branch_from_turn(2, "porto")
    assert name == "porto"
    assert [i["content"] for i in await session.get_items()] == ["plan a trip", "Where to?"]
    await session.add_items([user("Porto"), said("Booked Porto.")])
    branches = {b["branch_id"]: b for b in await session.list_branches()}
    assert set(branches) == {"main", "porto"} and branches["porto"]["is_current"]
    assert branches["porto"]["user_turns"] == 2 and branches["main"]["message_count"] == 4
    # The UI's switcher sees the same: two answers to "Where to?".
    history = arbor["client"].history(session.session_id)["messages"]
    assert len(arbor["client"].branches(session.session_id, history[1]["id"])["items"]) == 2
    await session.switch_to_branch("main")
    assert (await session.get_items())[-1]["content"] == "Booked Lisbon."
    # A branch made by another client (an edit in the UI) is listed, by its first message.
    edited = arbor["client"].append(session.session_id, {"role": "user", "parts": [
        {"type": "text", "text": "Madrid"}]}, parent_id=history[1]["id"])
    assert edited["id"] in {b["branch_id"] for b in await session.list_branches()}
    await session.switch_to_branch(edited["id"])
    assert (await session.get_items())[-1]["content"] == "Madrid"
    with pytest.raises(ValueError, match="current branch"):
        await session.delete_branch(edited["id"])
    await session.delete_branch("porto")
    with pytest.raises(ValueError, match="main"):
        await session.delete_branch("main")
    assert {b["branch_id"] for b in await session.list_branches()} == {"main", edited["id"]}
    turns = await session.get_conversation_turns()
    assert [t["full_content"] for t in turns] == ["plan a trip", "Madrid"]
    assert [t["turn"] for t in await session.find_turns_by_content("trip")] == [1]


async def test_turn_structure_and_tool_usage(arbor):
    session = new_session(arbor)
    await session.add_items([
        user("add 2 3"),
        {"type": "function_call", "call_id": "k", "name": "add", "arguments": '{"a": 2, "b": 3}'},
        {"type": "function_call_output", "call_id": "k", "output": "5"}, said("5"),
        user("thanks"), said("You're welcome")])
    by_turn = await session.get_conversation_by_turns()
    assert [i["type"] for i in by_turn[1]] == [
        "user", "function_call", "function_call_output", "assistant"]
    assert by_turn[1][1]["tool_name"] == "add" and len(by_turn[2]) == 2
    assert await session.get_tool_usage() == [("add", 1, 1)]


async def test_run_usage_per_turn_and_for_the_session(arbor):
    session = new_session(arbor)
    model = ScriptedModel(default_usage=Usage(requests=1, input_tokens=10, output_tokens=5,
                                              total_tokens=15))
    agent = Agent(name="helper", model=model)
    for text in ("first", "second"):
        model.enqueue([get_text_message(f"re: {text}")])
        result = await Runner.run(agent, text, session=session)
        await session.store_run_usage(result)
    usage = await session.get_session_usage()
    assert usage is not None and usage["total_turns"] == 2 and usage["requests"] == 2
    turns = await session.get_turn_usage()
    assert [t["user_turn_number"] for t in turns] == [1, 2]
    assert (await session.get_turn_usage(2))["requests"] == 1
    info = arbor["client"].get_session(session.session_id)
    assert info["input_tokens"] == usage["input_tokens"] == 20


async def test_compaction_hook_is_arbors_overlay(arbor):
    session = new_session(arbor)
    filler = " ".join(f"word{j}" for j in range(1500))  # past the kept tail's budget
    await session.add_items([user(f"fact {i} {filler}") if i % 2 == 0
                             else said(f"noted {i} {filler}") for i in range(12)])
    client = arbor["client"]
    await session.run_compaction({"response_id": "resp_1", "force": False})  # the Runner's
    assert client.list_compactions(session.session_id)["items"] == []  # Arbor's threshold
    await session.run_compaction({"force": True})
    raw = client.history(session.session_id, raw=True)["messages"]
    assert len(raw) == 12  # nothing deleted
    overlays = client.list_compactions(session.session_id)["items"]
    items = await session.get_items()
    assert len(overlays) == 1  # the summary stands in for the range it covers
    assert "system" in [i.get("role") for i in items] and len(items) < 12


@pytest.fixture
def agent_row(transactional_db):
    return make_agent("bob", "local agent")


async def test_in_process_session_runs_the_agent(agent_row):
    session = await LocalArborSession.create(agent_row, name="in process")
    model = ScriptedModel()
    agent = Agent(name="helper", model=model)
    model.enqueue([get_text_message("Hello Ada")])
    model.enqueue([get_text_message("Still Ada")])
    await Runner.run(agent, "I am Ada", session=session)
    await Runner.run(agent, "Who am I?", session=session)
    items = await session.get_items()
    assert [i.get("content") for i in items][::2] == ["I am Ada", "Who am I?"]
    assert (await session.pop_item())["role"] == "assistant"
    name = await session.create_branch_from_turn(2, "again")
    await session.add_items([user("Who?")])
    assert {b["branch_id"] for b in await session.list_branches()} == {"main", name}
    session.close()
    with pytest.raises(RuntimeError, match="closed"):
        await session.get_items()
