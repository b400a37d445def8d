"""to_openai_messages / to_anthropic_messages on hand-written histories."""

from __future__ import annotations

import json

from memory_core.llm.convert import (
    STUB_RESULT,
    result_text,
    to_anthropic_messages,
    to_openai_messages,
    tool_exchanges,
)

from .conftest import msg
from .schemas import check_anthropic_messages, check_openai_messages

SUMMARY = "[Summary of earlier conversation]\n## Topic / goal\n- plan the launch"


def summary_msg():
    return msg("system", SUMMARY, compaction={"id": "c1", "from_message_id": "a",
                                              "to_message_id": "b"})


def ui_tool(call_id="call_1", state="output-available", **extra):
    return {"type": "tool-set_context", "toolCallId": call_id, "state": state,
            "input": {"label": "memory", "content": "- likes tea"}, **extra}


def split_call(call_id="call_9", name="session_search", args=None):
    return {"type": "tool-call", "toolCallId": call_id, "toolName": name,
            "input": args if args is not None else {"query": "deploy day"}}


def split_result(call_id="call_9", output="- 2025-01-01 deploy on Friday"):
    return {"type": "tool-result", "toolCallId": call_id, "toolName": "session_search",
            "output": output}


def test_openai_text_reasoning_and_system_prompt():
    history = [msg("user", "hi"),
               msg("assistant", {"type": "reasoning", "text": "think"}, "hello")]
    out = to_openai_messages(history, system="PROMPT")
    check_openai_messages(out)
    assert out == [{"role": "system", "content": "PROMPT"}, {"role": "user", "content": "hi"},
                   {"role": "assistant", "content": "hello"}]


def test_openai_ai_sdk_tool_part_becomes_call_then_tool_message():
    history = [msg("user", "remember I like tea"),
               msg("assistant", "Saving.", ui_tool(output="Updated memory."), "Done.")]
    out = to_openai_messages(history)
    check_openai_messages(out)
    assert [m["role"] for m in out] == ["user", "assistant", "tool", "assistant"]
    call = out[1]["tool_calls"][0]
    assert call["function"]["name"] == "set_context"
    assert json.loads(call["function"]["arguments"]) == {"label": "memory",
                                                         "content": "- likes tea"}
    assert out[1]["content"] == "Saving."
    assert out[2] == {"role": "tool", "tool_call_id": call["id"], "content": "Updated memory."}
    assert out[3]["content"] == "Done."  # text after the result stays after it


def test_openai_split_form_pairs_call_and_later_result():
    history = [msg("user", "did we pick a day?"), msg("assistant", split_call()),
               msg("tool", split_result()), msg("assistant", "Friday.")]
    out = to_openai_messages(history)
    check_openai_messages(out)
    assert out[1]["content"] is None
    assert out[2]["content"] == "- 2025-01-01 deploy on Friday"


def test_result_separated_from_call_is_moved_next_to_it():
    history = [msg("assistant", split_call()), msg("user", "still there?"),
               msg("tool", split_result())]
    out = to_openai_messages(history)
    check_openai_messages(out)
    assert [m["role"] for m in out] == ["assistant", "tool", "user"]


def test_interrupted_calls_get_a_stub_in_both_forms():
    history = [msg("user", "go"),
               msg("assistant", ui_tool("a", state="input-available"), split_call("b")),
               msg("user", "hello again")]
    out = to_openai_messages(history)
    check_openai_messages(out)
    assert [m["content"] for m in out if m["role"] == "tool"] == [STUB_RESULT, STUB_RESULT]
    system, turns = to_anthropic_messages(history)
    check_anthropic_messages(turns)
    results = [b for b in turns[2]["content"] if b["type"] == "tool_result"]
    assert [r["content"] for r in results] == [STUB_RESULT, STUB_RESULT]
    assert all(r["is_error"] for r in results)
    assert turns[2]["content"][-1] == {"type": "text", "text": "hello again"}


def test_orphaned_results_are_dropped_from_the_request_only():
    orphan = msg("tool", split_result("gone"))
    history = [msg("user", "hi"), orphan, msg("assistant", "hello")]
    assert to_openai_messages(history) == [{"role": "user", "content": "hi"},
                                           {"role": "assistant", "content": "hello"}]
    _, turns = to_anthropic_messages(history)
    check_anthropic_messages(turns)
    assert orphan.parts[0]["toolCallId"] == "gone"  # the stored message is untouched


def test_result_before_its_call_is_an_orphan_and_the_call_gets_a_stub():
    history = [msg("tool", split_result()), msg("assistant", split_call())]
    out = to_openai_messages(history)
    check_openai_messages(out)
    assert [m["content"] for m in out if m["role"] == "tool"] == [STUB_RESULT]


def test_outputs_are_unwrapped_or_json_encoded():
    assert result_text({"type": "text", "value": "plain"}) == "plain"
    assert result_text({"type": "json", "value": {"a": [1, 2]}}) == '{"a": [1, 2]}'
    assert result_text({"type": "error-text", "value": "boom"}) == "boom"
    assert result_text({"hits": 2}) == '{"hits": 2}'
    assert result_text({"type": "weather", "value": 3, "unit": "C"}) == (
        '{"type": "weather", "value": 3, "unit": "C"}')  # not a wrapper: other keys
    assert result_text(["a", 1]) == '["a", 1]'


def test_error_states_reach_the_model_as_errors():
    history = [msg("assistant", ui_tool("e", state="output-error", errorText="Error: full"))]
    _, turns = to_anthropic_messages(history)
    result = turns[2]["content"][0]
    assert result == {"type": "tool_result", "tool_use_id": "e", "content": "Error: full",
                      "is_error": True}


def test_summaries_are_system_messages_for_openai_and_user_turns_for_anthropic():
    history = [summary_msg(), msg("user", "and now?"), msg("assistant", "next step")]
    out = to_openai_messages(history, system="PROMPT")
    assert out[1] == {"role": "system", "content": SUMMARY}
    system, turns = to_anthropic_messages(history, system="PROMPT")
    check_anthropic_messages(turns)
    assert system == "PROMPT"  # the summary stays out of the cached prefix
    assert turns[0]["content"] == [{"type": "text", "text": SUMMARY},
                                   {"type": "text", "text": "and now?"}]


def test_anthropic_leading_system_messages_join_the_system_text():
    history = [msg("system", "Be brief."), msg("user", "hi"), msg("system", "Note: x"),
               msg("assistant", "ok")]
    system, turns = to_anthropic_messages(history, system="PROMPT")
    check_anthropic_messages(turns)
    assert system == "PROMPT\n\nBe brief."
    assert turns[0]["content"][-1]["text"] == "[System note] Note: x"


def test_anthropic_history_starting_with_assistant_gets_a_user_turn_first():
    _, turns = to_anthropic_messages([msg("assistant", "Welcome back "), msg("assistant", "!")])
    check_anthropic_messages(turns)
    assert turns[0]["role"] == "user"
    assert [b["text"] for b in turns[1]["content"]] == ["Welcome back ", "!"]


def test_anthropic_merges_consecutive_turns():
    history = [msg("user", "one"), msg("user", "two"), msg("assistant", "a"),
               msg("assistant", "b")]
    _, turns = to_anthropic_messages(history)
    check_anthropic_messages(turns)
    assert [t["role"] for t in turns] == ["user", "assistant"]


def test_unsafe_ids_and_names_are_made_valid_consistently():
    long_id = "x" * 60
    history = [msg("assistant", split_call("call.1/a", name="my.tool"), split_call(long_id)),
               msg("tool", split_result("call.1/a"), split_result(long_id))]
    out = to_openai_messages(history)
    check_openai_messages(out)
    _, turns = to_anthropic_messages(history)
    check_anthropic_messages(turns)
    assert out[0]["tool_calls"][0]["function"]["name"] == "my_tool"


def test_repeated_call_ids_keep_only_the_first_call():
    history = [msg("assistant", split_call("d")), msg("tool", split_result("d", "one")),
               msg("assistant", split_call("d")), msg("tool", split_result("d", "two"))]
    out = to_openai_messages(history)
    check_openai_messages(out)
    assert [m["content"] for m in out if m["role"] == "tool"] == ["one"]


def test_empty_and_unknown_parts_are_left_out():
    history = [msg("user", "  ", {"type": "file", "url": "x"}), msg("user", "real"),
               msg("assistant", {"type": "step-start"}, {"type": "data-x", "data": 1})]
    assert to_openai_messages(history) == [{"role": "user", "content": "real"}]


def test_tool_exchanges_lists_calls_with_their_results():
    history = [msg("assistant", ui_tool("u", output="ok"), split_call("s")),
               msg("user", "x")]
    calls = tool_exchanges(history)
    assert [(c.id, c.name, c.output) for c in calls] == [("u", "set_context", "ok"),
                                                         ("s", "session_search", None)]
