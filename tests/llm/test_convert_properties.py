"""Property: any history, however broken, converts to a valid request for both providers."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory_core.llm.convert import STUB_RESULT, to_anthropic_messages, to_openai_messages
from memory_core.messages import Message

from .conftest import msg
from .schemas import check_anthropic_messages, check_openai_messages

IDS = st.sampled_from(["c1", "c2", "c3", "call.4", "x" * 50, "c 6"])
NAMES = st.sampled_from(["set_context", "session_search", "my.tool", "weird name"])
TEXT = st.sampled_from(["hello", "   ", "", "Friday it is", "ünïcode ✓", "a\nb"])
OUTPUTS = st.one_of(
    st.text(max_size=10), st.integers(), st.none(),
    st.fixed_dictionaries({"type": st.just("text"), "value": st.text(max_size=5)}),
    st.fixed_dictionaries({"type": st.just("json"), "value": st.dictionaries(
        st.text(max_size=3), st.integers(), max_size=2)}),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2))
INPUTS = st.one_of(st.none(), st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
                   st.integers())
STATES = st.sampled_from(["input-streaming", "input-available", "output-available",
                          "output-error", "output-denied"])


@st.composite
def ui_part(draw: st.DrawFn) -> dict[str, Any]:
    state = draw(STATES)
    part = {"type": f"tool-{draw(NAMES)}", "toolCallId": draw(IDS), "state": state,
            "input": draw(INPUTS)}
    if state == "output-available":
        part["output"] = draw(OUTPUTS)
    if state == "output-error":
        part["errorText"] = "Error: " + draw(st.text(max_size=5))
    return part


def text_part(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


@st.composite
def histories(draw: st.DrawFn) -> list[Message]:
    out: list[Message] = []
    for _ in range(draw(st.integers(0, 12))):
        kind = draw(st.sampled_from(["user", "assistant", "ui", "call", "result", "orphan",
                                     "summary", "system", "mixed"]))
        if kind in ("user", "assistant"):
            out.append(msg(kind, text_part(draw(TEXT))))
        elif kind == "ui":
            parts = [draw(ui_part()) for _ in range(draw(st.integers(1, 2)))]
            out.append(msg("assistant", text_part(draw(TEXT)), *parts))
        elif kind == "call":
            calls = [{"type": "tool-call", "toolCallId": draw(IDS), "toolName": draw(NAMES),
                      "input": draw(INPUTS)} for _ in range(draw(st.integers(1, 3)))]
            out.append(msg("assistant", *calls))
        elif kind in ("result", "orphan"):
            call_id = draw(IDS) if kind == "result" else "orphan-" + draw(IDS)
            out.append(msg("tool", {"type": "tool-result", "toolCallId": call_id,
                                    "output": draw(OUTPUTS)}))
        elif kind == "summary":
            out.append(msg("system", "[Summary of earlier conversation]\n" + draw(TEXT),
                           compaction={"id": "s"}))
        elif kind == "system":
            out.append(msg("system", text_part(draw(TEXT))))
        else:  # reasoning, step boundaries, unknown parts, and text after a call
            out.append(msg("assistant", {"type": "reasoning", "text": "hmm"},
                           draw(ui_part()), {"type": "step-start"}, text_part(draw(TEXT)),
                           {"type": "data-note", "data": {"x": 1}}))
    return out


def _call_ids(history: list[Message]) -> list[str]:
    """First occurrence of each call id in assistant messages: what must be sent."""
    seen: list[str] = []
    for m in history:
        if m.role != "assistant":
            continue
        for p in m.parts:
            if p["type"] not in ("tool-result", "text", "reasoning", "step-start",
                                 "data-note") and p["toolCallId"] not in seen:
                seen.append(p["toolCallId"])
    return seen


def _has_result_later(history: list[Message], call_id: str) -> bool:
    start = next(i for i, m in enumerate(history) if m.role == "assistant" and any(
        p.get("toolCallId") == call_id and p["type"] != "tool-result" for p in m.parts))
    first = next(p for p in history[start].parts if p.get("toolCallId") == call_id)
    if first["type"] != "tool-call" and first["state"] in (
            "output-available", "output-error", "output-denied"):
        return True
    later = [p for p in history[start].parts[history[start].parts.index(first) + 1:]]
    later += [p for m in history[start + 1:] for p in m.parts]
    # a split-form result, or a finished AI SDK tool part repeating the id, answers it
    return any(p.get("toolCallId") == call_id and (p.get("type") == "tool-result" or (
        p.get("type") != "tool-call" and p.get("state") in ("output-available", "output-error",
                                                            "output-denied")))
               for p in later)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(histories())
def test_openai_messages_are_always_valid(history: list[Message]) -> None:
    out = to_openai_messages(history, system="PROMPT")
    check_openai_messages(out)
    assert out[0] == {"role": "system", "content": "PROMPT"}
    calls = [c for m in out for c in m.get("tool_calls", [])]
    assert len(calls) == len(_call_ids(history))
    tool_messages = [m for m in out if m["role"] == "tool"]
    assert len(tool_messages) == len(calls)  # orphans never sent
    stubs = sum(m["content"] == STUB_RESULT for m in tool_messages)
    assert stubs >= sum(not _has_result_later(history, c) for c in _call_ids(history))
    summaries = [m for m in history if m.metadata.get("compaction") and m.text.strip()]
    sent = [m["content"] for m in out if m["role"] == "system"]
    assert all(s.text in sent for s in summaries)
    for m in history:
        for p in m.parts:
            if m.role == "user" and p["type"] == "text" and p["text"].strip():
                assert any(p["text"] in (o.get("content") or "") for o in out)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(histories())
def test_anthropic_messages_are_always_valid(history: list[Message]) -> None:
    system, turns = to_anthropic_messages(history, system="PROMPT")
    check_anthropic_messages(turns)
    assert system.startswith("PROMPT")
    uses = [b for t in turns for b in t["content"] if b["type"] == "tool_use"]
    results = [b for t in turns for b in t["content"] if b["type"] == "tool_result"]
    assert len(uses) == len(results) == len(_call_ids(history))
    texts = json.dumps(turns, ensure_ascii=False)
    for m in history:
        if m.metadata.get("compaction") and m.text.strip():
            assert json.dumps(m.text, ensure_ascii=False)[1:-1] in texts


@settings(max_examples=100, deadline=None)
@given(histories())
def test_conversion_never_changes_the_history(history: list[Message]) -> None:
    before = json.dumps([m.parts for m in history], sort_keys=True, default=str)
    to_openai_messages(history)
    to_anthropic_messages(history)
    assert json.dumps([m.parts for m in history], sort_keys=True, default=str) == before
