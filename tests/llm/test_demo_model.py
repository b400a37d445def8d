"""The offline demo model: deterministic, no network, the real tool protocol."""

from __future__ import annotations

import pytest

from memory_core.llm import LLMClient
from memory_core.llm.demo import DemoModel, memory_section
from memory_core.prompt import Section, render
from memory_core.tokens import estimate_message_tokens

from .conftest import memory_tool, msg, search_tool

PROMPT = render([
    Section("soul", "readonly", "Identity", "You are a helpful demo.", 5, None),
    Section("memory", "writable", "Learned facts", "- likes tea\n- lives in Oslo", 8, 1100),
    Section("todos", "writable", None, "", 0, None),
])[0]


def answer(history, tools=None, system=PROMPT):
    model: LLMClient = DemoModel()
    return model.complete(system=system, history=history,
                          tools=tools if tools is not None else [memory_tool(), search_tool()])


def with_result(history, call, output, form):
    """The history after the chat turn stored the call and its result, in either form."""
    if form == "ui":
        part = {"type": f"tool-{call.name}", "toolCallId": call.id, "state": "output-available",
                "input": call.arguments, "output": output}
        return [*history, msg("assistant", part)]
    return [*history,
            msg("assistant", {"type": "tool-call", "toolCallId": call.id,
                              "toolName": call.name, "input": call.arguments}),
            msg("tool", {"type": "tool-result", "toolCallId": call.id, "toolName": call.name,
                         "output": output})]


@pytest.mark.parametrize("said", ["Remember that my name is Ada.", "remember: my name is Ada",
                                  "Please REMEMBER my name is Ada"])
def test_remember_calls_set_context_to_append_to_memory(said):
    response = answer([msg("user", said)])
    assert response.text == ""
    assert response.finish_reason == "tool_calls"
    [call] = response.tool_calls
    assert call.name == "set_context"
    assert call.arguments == {"label": "memory", "content": "- my name is Ada",
                              "action": "append"}
    assert memory_tool().call(call.arguments).is_error is False  # valid for the real schema


@pytest.mark.parametrize("form", ["ui", "split"])
def test_after_the_tool_result_it_confirms(form):
    history = [msg("user", "remember that the deploy is on Friday")]
    call = answer(history).tool_calls[0]
    result = memory_tool().execute(call.arguments)
    response = answer(with_result(history, call, result, form))
    assert response.tool_calls == []
    assert "the deploy is on Friday" in response.text
    assert result in response.text


def test_a_failed_save_is_reported():
    history = [msg("user", "remember that x")]
    call = answer(history).tool_calls[0]
    error = "Error: memory is over its budget (1100 tokens; this write would make 1200)"
    response = answer(with_result(history, call, error, "split"))
    assert "could not save" in response.text and error in response.text


def test_without_a_memory_block_it_explains_instead_of_calling():
    response = answer([msg("user", "remember that x")], tools=[search_tool()])
    assert response.tool_calls == [] and "memory" in response.text
    assert response.text.startswith("I would use set_context for that, but this session has "
                                    "no writable 'memory' block.")


def test_without_session_search_it_explains_instead_of_calling():
    response = answer([msg("user", "did we talk about Lisbon?")], tools=[memory_tool()])
    assert response.tool_calls == []
    assert "this session has no session_search tool." in response.text


def test_what_do_you_remember_reads_the_prompt_and_this_conversation():
    history = [msg("user", "remember that I use vim")]
    call = answer(history).tool_calls[0]
    history = with_result(history, call, "Updated memory: 20/1100 tokens (2%) used.", "ui")
    history += [msg("assistant", "Saved."), msg("user", "What do you remember?")]
    text = answer(history).text
    assert text.splitlines() == ["Here is what I remember:", "- likes tea", "- lives in Oslo",
                                 "- I use vim"]


def test_what_do_you_remember_with_empty_memory():
    assert "empty" in answer([msg("user", "what do you remember")], system="").text


def test_memory_section_is_read_from_the_prompt_format():
    assert memory_section(PROMPT) == ["- likes tea", "- lives in Oslo"]
    assert memory_section("no blocks") == []


@pytest.mark.parametrize("said, query", [
    ("search for deployment day", "deployment day"),
    ("Did we talk about the database migration?", "the database migration"),
    ("what did we decide about pricing?", "pricing"),
    ("Search past sessions for Oslo", "Oslo"),
])
def test_questions_about_the_past_call_session_search(said, query):
    [call] = answer([msg("user", said)]).tool_calls
    assert (call.name, call.arguments) == ("session_search", {"query": query})


def test_search_results_are_summarised():
    history = [msg("user", "did we talk about Oslo?")]
    call = answer(history).tool_calls[0]
    hits = "\n".join(f"- 2025-01-0{i} 10:00 [session s{i}] user: Oslo trip {i}"
                     for i in range(1, 7))
    hits += "\n- 2025-01-07 10:00 [session s7] assistant: Here is what I remember:\n- Oslo"
    text = answer(with_result(history, call, hits, "split")).text
    assert text.startswith("I found 7 messages about \u201cOslo\u201d")
    assert "Oslo trip 1" in text and "Oslo trip 6" not in text and "2 more" in text
    nothing = answer(with_result(history, call, "No past messages match 'Oslo'.", "ui")).text
    assert "found nothing" in nothing


def test_anything_else_gets_an_honest_canned_reply():
    response = answer([msg("user", "Write me a poem")])
    assert response.tool_calls == []
    assert "offline demo model" in response.text
    assert "ARBOR_LLM_BASE_URL" in response.text and "ARBOR_ANTHROPIC_API_KEY" in response.text
    assert response.usage.cost == 0.0
    assert response.usage.input_tokens == estimate_message_tokens(
        [msg("user", "Write me a poem")], system_prompt=PROMPT)
    assert response.usage.output_tokens > 0


def test_it_is_deterministic():
    history = [msg("user", "remember that tea is good")]
    assert answer(history) == answer(history)


def test_streaming_yields_words_then_done():
    model = DemoModel()
    events = list(model.stream(system=PROMPT, history=[msg("user", "hello there")], tools=[]))
    deltas = [e.text for e in events if e.type == "text_delta"]
    assert len(deltas) > 10
    assert events[-1].type == "done" and "".join(deltas) == events[-1].response.text


def test_streaming_a_tool_call():
    events = list(DemoModel().stream(system=PROMPT, history=[msg("user", "remember that a")],
                                     tools=[memory_tool()]))
    assert [e.type for e in events] == ["tool_call", "done"]
    assert events[0].tool_call == events[1].response.tool_calls[0]
