"""Bad input through MCP, on both transports: every call answers an error result (never a
protocol failure or a crash) naming the problem, and nothing stored changes."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("mcp")  # the `mcp` extra (`make install` installs it)

from sessions_app import models  # noqa: E402
from tests.api.conftest import stored_state  # noqa: E402

from .clients import open_client, run, text_of  # noqa: E402
from .conftest import World  # noqa: E402


def bad_calls(world: World) -> list[tuple[str, dict[str, Any], str]]:
    """(tool, arguments, words the error must contain)."""
    theirs = world.mallory_session_id
    answer = world.manager().get_session(world.session_id).get_latest_leaf().id
    return [
        ("set_context", {"label": "memory"}, "missing required argument 'content'"),
        ("set_context", {"label": "ghost", "content": "x"}, "must be one of memory, kb"),
        ("set_context", {"label": "persona", "content": "x"}, "must be one of"),  # read-only
        ("set_context", {"label": "memory", "content": "word " * 200}, "30"),  # the budget
        ("set_context", {"label": "memory", "content": "x", "extra": 1}, "unknown argument"),
        ("set_context", {"label": "memory", "content": 5}, "must be of type string"),
        ("set_context", {"label": "kb", "content": "x"}, "needs a 'key'"),
        ("load_context", {"label": "memory", "key": "x"}, "no tool 'load_context'"),
        ("append_message", {"role": "robot", "content": "x"}, "must be one of user"),
        ("append_message", {"role": "user", "content": "x", "parent_id": "nope"}, "nope"),
        ("append_message", {"role": "user", "content": "x", "parent_id": "a\x00b"}, "parent"),
        ("append_message", {"role": "user", "content": "x", "session_id": theirs},
         f"session {theirs} not found"),
        ("append_message", {"role": "user", "content": "x", "session_id": "nope"},
         "session nope not found"),
        ("read_history", {"limit": 0}, "between 1 and 500"),
        ("read_history", {"limit": True}, "must be of type integer"),
        ("read_history", {"session_id": theirs}, f"session {theirs} not found"),
        ("read_history", {"leaf_id": "nope"}, "nope"),
        ("read_history", {"before_id": "nope"}, "nope"),
        ("read_history", {"limit": 501}, "between 1 and 500"),
        # the answer is below the first message, not on the path that ends there
        ("read_history", {"leaf_id": world.first_id, "before_id": answer}, "not on the path"),
        ("list_sessions", {"cursor": "garbage"}, "cursor"),
        ("list_sessions", {"limit": 1000}, "between 1 and 200"),
        ("search", {"query": 7}, "must be of type string"),
        ("search", {}, "missing required argument 'query'"),
        ("fork_session", {"message_id": "nope"}, "nope"),
        ("fork_session", {"session_id": theirs, "message_id": world.first_id},
         f"session {theirs} not found"),
        ("no_such_tool", {}, "no tool 'no_such_tool'"),
    ]


def snapshot(world: World) -> Any:
    return ([stored_state(s) for s in (world.session_id, world.other_session_id,
                                       world.mallory_session_id)],
            sorted(models.Session.objects.values_list("id", flat=True)))


def test_bad_calls_are_error_results_and_change_nothing(transport: str, world: World) -> None:
    calls = bad_calls(world)
    before = snapshot(world)

    async def main() -> list[Any]:
        async with open_client(transport, world, world.session_id) as client:
            return [await client.call_tool(name, args) for name, args, _ in calls]

    results = run(main)
    for (name, args, words), result in zip(calls, results, strict=True):
        text = text_of(result)
        assert result.is_error, (name, args, text)
        assert text.startswith("Error: ") and words in text, (name, args, text)
    assert snapshot(world) == before


def test_memory_tools_need_a_session_in_scope(transport: str, world: World) -> None:
    async def main() -> Any:
        async with open_client(transport, world) as client:
            return (await client.call_tool("set_context", {"label": "memory", "content": "x"}),
                    await client.call_tool("read_history", {}))

    set_context, history = run(main)
    assert set_context.is_error and "no tool 'set_context'" in text_of(set_context)
    assert history.is_error and "missing required argument 'session_id'" in text_of(history)
