"""Compaction ranges with AI SDK tool parts whose output came in a later message (what
ArborSession writes for the Agents SDK's function_call / function_call_output items)."""

from __future__ import annotations

from datetime import UTC, datetime

from memory_core.compaction import choose_range
from memory_core.messages import Message


def flat_tokens(text):
    """Every message costs the same, whatever its parts: ranges depend on counts alone."""
    return 10


def msg(i, parts):
    return Message(f"m{i}", None, "assistant", parts, {}, datetime.now(UTC))


def pending(cid):
    return {"type": "tool-add", "toolCallId": cid, "state": "input-available", "input": {}}


def answered(cid):
    return {"type": "tool-add", "toolCallId": cid, "state": "output-available", "input": {},
            "output": "5"}


def text_path(n=10):
    return [msg(i, [{"type": "text", "text": "x"}]) for i in range(n)]


def middle(path, head=1):
    return choose_range(path, protect_head=head, tail_token_budget=30, min_tail_messages=2,
                        counter=flat_tokens)


def test_a_call_answered_later_is_summarised_with_its_output():
    path = text_path()
    path[3], path[4] = msg(3, [pending("a")]), msg(4, [answered("a")])
    assert middle(path) == (1, 7)  # no longer held back as "pending"


def test_the_range_does_not_split_them():
    path = text_path()
    path[7], path[8] = msg(7, [pending("a")]), msg(8, [answered("a")])
    assert middle(path)[1] == 6  # the call stays in the tail with its output
    path = text_path()
    path[1], path[2] = msg(1, [pending("b")]), msg(2, [answered("b")])
    assert middle(path, head=2)[0] == 3  # the output follows its call into the head


def test_a_call_never_answered_is_still_never_summarised():
    path = text_path()
    path[4] = msg(4, [pending("c")])
    assert middle(path) == (1, 3)
