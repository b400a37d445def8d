"""Big and odd messages render without crashing."""

from __future__ import annotations

import pytest

from memory_core.messages import Message, now, prepare
from sessions_app.rendering import MARKDOWN_MAX_CHARS, render_markdown, render_parts

from .markup import assert_inert

BLOCK = ("## Section {i}\n\nSome *text* with a [link](https://example.com/{i}) and "
         "`code`.\n\n- item\n- item\n\n```python\nprint({i})\n```\n\n| a | b |\n|---|---|\n"
         "| {i} | x |\n\n")


def test_one_megabyte_markdown_message_renders():
    text = "".join(BLOCK.format(i=i) for i in range(7_000))
    assert len(text) > 1_000_000
    html = render_parts(prepare({"role": "assistant", "content": text}).to_message(None))
    doc = assert_inert(html)
    assert doc.text.strip() == text.strip()  # shown whole, as plain text past the limit


def test_markdown_just_under_the_limit_is_rendered():
    text, i = "", 0
    while len(text) + len(BLOCK.format(i=i)) <= MARKDOWN_MAX_CHARS:
        text, i = text + BLOCK.format(i=i), i + 1
    doc = assert_inert(render_markdown(text))
    assert len(doc.named("h2")) == len(doc.named("table")) == text.count("## Section")


def test_one_megabyte_line_and_output_render():
    line = "word " * 210_000
    msg = prepare({"role": "assistant", "parts": [
        {"type": "text", "text": line},
        {"type": "tool-result", "toolCallId": "c", "toolName": "cat", "output": line},
        {"type": "tool-call", "toolCallId": "c", "toolName": "cat", "input": {"a": line}},
    ]}, max_tool_output=10**7).to_message(None)
    html = render_parts(msg)
    assert html.count("Showing the first 20,000") == 2
    assert len(html) > 1_000_000


@pytest.mark.parametrize("text", [
    "a\x00b",
    "\x00",
    "lone \ud800 surrogate",
    "rtl \u202eevil\u202c and zero\u200bwidth \ufeff bom",
    "emoji 👩‍👩‍👧‍👦 and e\u0301\u0301\u0301 combining",
    "controls \x01\x07\x1b[31m\x7f and \uffff \U0010ffff",
    "\r\n\r\n```\r\ncode\r\n```\r",
    "[" * 10_000 + "]" * 10_000,
    "> " * 5_000 + "deep",
    "*" * 20_000,
])
def test_odd_text_does_not_crash(text):
    for html in (render_markdown(text), render_parts(Message(
            "m", None, "assistant",
            [{"type": "text", "text": text}, {"type": "reasoning", "text": text},
             {"type": "tool-result", "toolCallId": text, "toolName": text, "output": text},
             {"type": text, "x": text}], {}, now()))):
        assert_inert(html)
        assert "\x00" not in html
        html.encode("utf-8")  # no lone surrogate reaches the page


def test_nul_is_shown_as_replacement_character():
    assert "a\ufffdb" in render_markdown("a\x00b")


def test_malformed_parts_do_not_crash():
    msg = Message("m", None, "assistant",
                  [{"type": "text"}, {"type": "text", "text": 3}, {"no": "type"}, "str", None,
                   {"type": "tool-call"}, {"type": "tool-result", "output": None}],
                  {}, now())
    assert_inert(render_parts(msg))
