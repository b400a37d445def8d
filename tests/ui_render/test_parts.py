"""A message's parts as the chat UI shows them: text as Markdown, the rest collapsed."""

from __future__ import annotations

import json

import pytest

from memory_core.messages import prepare
from sessions_app.rendering import MAX_PRE_CHARS, render_parts

from .markup import assert_inert, parse

XSS = "<script>alert(1)</script><img src=x onerror=alert(1)>"


def message(*parts, role="assistant"):
    return prepare({"role": role, "parts": list(parts)}).to_message(None)


def summaries(html):
    """(details class, summary text) for each collapsed block, in order."""
    doc, out = parse(html), []
    for chunk in html.split("<details")[1:]:
        head = parse("<details" + chunk.split("</summary>")[0])
        out.append((head.named("details")[0]["class"], head.text))
    assert len(out) == len(doc.named("details"))
    return out


def test_text_parts_render_as_markdown_in_order():
    html = render_parts(message({"type": "text", "text": "# One"},
                                {"type": "text", "text": "*two*"}))
    doc = assert_inert(html)
    assert [a["class"] for a in doc.named("div")] == ["message-text", "message-text"]
    assert html.index("<h1>One</h1>") < html.index("<em>two</em>")


def test_reasoning_is_collapsed_markdown():
    html = render_parts(message({"type": "reasoning", "text": "First **check** the date"},
                                {"type": "text", "text": "It is Monday."}))
    assert_inert(html)
    assert summaries(html) == [("reasoning", "Reasoning")]
    assert "<details class=\"reasoning\"><summary>Reasoning</summary>" in html
    assert " open" not in html
    assert "<strong>check</strong>" in html


def test_tool_call_and_result_are_collapsed_with_their_names():
    html = render_parts(message(
        {"type": "tool-call", "toolCallId": "c1", "toolName": "get_weather",
         "input": {"city": "Lisbon", "days": [1, 2]}},
        {"type": "tool-result", "toolCallId": "c1", "toolName": "get_weather",
         "output": "Sunny, 24°C"}))
    doc = assert_inert(html)
    assert summaries(html) == [("tool-call", "Tool call: get_weather"),
                               ("tool-result", "Tool result: get_weather")]
    assert json.dumps({"city": "Lisbon", "days": [1, 2]}, indent=2) in doc.text
    assert "Sunny, 24°C" in doc.text
    assert [a["class"] for a in doc.named("pre")] == ["tool-input", "tool-output"]


def test_error_result_and_json_output():
    html = render_parts(message(
        {"type": "tool-result", "toolCallId": "c1", "toolName": "run",
         "output": {"type": "error-text", "value": "exit 1"}},
        {"type": "tool-result", "toolCallId": "c3", "toolName": "rm", "isError": True,
         "output": "denied"},
        {"type": "tool-result", "toolCallId": "c2", "output": {"rows": 3}}))
    doc = assert_inert(html)
    assert summaries(html) == [("tool-result tool-error", "Tool error: run"),
                               ("tool-result tool-error", "Tool error: rm"),
                               ("tool-result", "Tool result: tool")]
    assert "exit 1" in doc.text and '"rows": 3' in doc.text


def test_ai_sdk_tool_part_shows_call_then_result():
    html = render_parts(message(
        {"type": "tool-search", "toolCallId": "c1", "state": "output-available",
         "input": {"q": "lisbon"}, "output": {"type": "json", "value": ["a", "b"]}},
        {"type": "dynamic-tool", "toolCallId": "c2", "toolName": "fetch",
         "state": "output-error", "input": {}, "errorText": "timeout"},
        {"type": "tool-pending", "toolCallId": "c3", "state": "input-available",
         "input": {"x": 1}}))
    doc = assert_inert(html)
    assert summaries(html) == [
        ("tool-call", "Tool call: search"), ("tool-result", "Tool result: search"),
        ("tool-call", "Tool call: fetch"), ("tool-result tool-error", "Tool error: fetch"),
        ("tool-call", "Tool call: pending")]
    assert "timeout" in doc.text


def test_long_tool_output_is_cut_with_a_note():
    output = "x" * (MAX_PRE_CHARS + 5_000)
    html = render_parts(message({"type": "tool-result", "toolCallId": "c1",
                                 "toolName": "cat", "output": output}))
    doc = assert_inert(html)
    assert doc.text.count("x") == MAX_PRE_CHARS
    assert f"Showing the first {MAX_PRE_CHARS:,} of {MAX_PRE_CHARS + 5_000:,} characters" \
        in doc.text


def test_unknown_and_data_parts_are_collapsed_json_named_by_type():
    html = render_parts(message({"type": "data-weather", "data": {"t": 24}},
                                {"type": "my-custom", "value": "<b>raw</b>"}))
    doc = assert_inert(html)
    assert summaries(html) == [("part-other", "data-weather"), ("part-other", "my-custom")]
    assert '"value": "<b>raw</b>"' in doc.text


def test_step_start_shows_nothing_and_sources_are_links():
    html = render_parts(message(
        {"type": "step-start"},
        {"type": "source-url", "sourceId": "s1", "url": "https://example.com/doc",
         "title": "Doc <1>"},
        {"type": "source-url", "sourceId": "s2", "url": "javascript:alert(1)"}))
    doc = assert_inert(html)
    assert [a["href"] for a in doc.named("a")] == ["https://example.com/doc"]
    assert "Doc <1>" in doc.text
    assert summaries(html) == [("part-other", "source-url")]


def test_accepts_the_json_shape_too():
    msg = message({"type": "text", "text": "hi"})
    assert render_parts(msg.to_dict()) == render_parts(msg)


@pytest.mark.parametrize("part", [
    {"type": "text", "text": XSS},
    {"type": "reasoning", "text": XSS},
    {"type": "tool-call", "toolCallId": XSS, "toolName": XSS, "input": {XSS: XSS}},
    {"type": "tool-call", "toolCallId": "c1", "toolName": "t", "input": XSS},
    {"type": "tool-result", "toolCallId": "c1", "toolName": XSS, "output": XSS},
    {"type": "tool-result", "toolCallId": "c1", "output": {"type": "text", "value": XSS}},
    {"type": "dynamic-tool", "toolCallId": "c1", "toolName": XSS, "state": "output-error",
     "errorText": XSS},
    {"type": "tool-x", "toolCallId": "c1", "input": [XSS], "output": {XSS: [XSS]}},
    {"type": XSS, "payload": XSS},
    {"type": "data-" + XSS, "data": XSS},
    {"type": "source-url", "sourceId": "s", "url": "https://ok.example/\"><script>x</script>",
     "title": XSS},
])
def test_payloads_in_any_part_are_inert_and_shown(part):
    html = render_parts(message(part))
    doc = assert_inert(html)
    assert "<script>alert(1)</script>" in doc.text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_a_tool_name_payload_cannot_close_the_summary():
    html = render_parts(message({"type": "tool-call", "toolCallId": "c1",
                                 "toolName": "</summary></details><script>x</script>",
                                 "input": {}}))
    assert_inert(html)
    assert summaries(html) == [("tool-call", "Tool call: </summary></details><script>x</script>")]
