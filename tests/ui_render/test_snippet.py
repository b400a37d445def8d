"""Search snippets keep their <mark>s and nothing else (SPEC §11: hits mark matches)."""

from __future__ import annotations

import pytest

from memory_core.search import query_terms, snippet
from sessions_app.rendering import snippet_html

from .markup import assert_inert, parse


def test_engine_snippet_passes_through_unchanged():
    text = "Booked the <b>Lisbon</b> flight & hotel <script>alert(1)</script> for May 3"
    marked = snippet(text, query_terms("lisbon flight"))
    html = snippet_html(marked)
    assert html == marked
    doc = assert_inert(html)
    assert [t for t, _ in doc.tags] == ["mark", "mark"]
    assert "<script>alert(1)</script>" in doc.text


@pytest.mark.parametrize(("raw", "expected"), [
    ("<script>alert(1)</script> <mark>x</mark>",
     "&lt;script&gt;alert(1)&lt;/script&gt; <mark>x</mark>"),
    ("<img src=x onerror=alert(1)><mark>a</mark>",
     "&lt;img src=x onerror=alert(1)&gt;<mark>a</mark>"),
    ('<mark onclick="alert(1)">a</mark>', "&lt;mark onclick=&quot;alert(1)&quot;&gt;a"),
    ("</mark>a<mark>b", "a<mark>b</mark>"),
    ("<mark><mark>a</mark></mark>", "<mark>a</mark>"),
    ("&lt;mark&gt;typed&lt;/mark&gt;", "&lt;mark&gt;typed&lt;/mark&gt;"),
    ("AT&T <MARK>x</MARK>", "AT&amp;T &lt;MARK&gt;x&lt;/MARK&gt;"),
    ("a\x00b", "a\ufffdb"),
])
def test_only_exact_balanced_marks_become_tags(raw, expected):
    html = snippet_html(raw)
    assert html == expected
    doc = assert_inert(html)
    assert {t for t, _ in doc.tags} <= {"mark"}


def test_snippet_text_reads_the_same():
    doc = parse(snippet_html("x &amp; y &lt;z&gt; <mark>w</mark>…"))
    assert doc.text == "x & y <z> w…"


def test_markdown_syntax_is_left_out_of_snippets():
    text = "Try this:\n```python\nprint(1)\n```\n| city | days |\n|---|---|\n| **Lisbon** | 3 |"
    doc = assert_inert(snippet_html(snippet(text, query_terms("lisbon"))))
    for syntax in ("```", "|", "**", "---"):
        assert syntax not in doc.text
    assert "Try this: print(1) city days" in " ".join(doc.text.split())
    assert doc.named("mark") and "Lisbon" in doc.text
