"""Markdown renders as the chat UI shows it: structure, links, highlighted code."""

from __future__ import annotations

from sessions_app.rendering import MARKDOWN_MAX_CHARS, render_markdown

from .markup import assert_inert


def test_headings_lists_emphasis_and_strikethrough():
    html = render_markdown("# Title\n\n## Part\n\n- one\n- **two**\n\n3. three\n4. *four*\n\n~~gone~~")
    doc = assert_inert(html)
    assert [t for t, _ in doc.tags if t in ("h1", "h2", "ul", "ol", "li")] == [
        "h1", "h2", "ul", "li", "li", "ol", "li", "li"]
    assert doc.named("ol")[0]["start"] == "3"
    assert "<strong>two</strong>" in html and "<em>four</em>" in html
    assert "<s>gone</s>" in html or "<del>gone</del>" in html


def test_tables_keep_their_alignment():
    html = render_markdown("| name | price |\n|:-----|------:|\n| tea | 3 |")
    doc = assert_inert(html)
    assert [t for t, _ in doc.tags if t in ("table", "thead", "tbody", "tr", "th", "td")] == [
        "table", "thead", "tr", "th", "th", "tbody", "tr", "td", "td"]
    assert doc.named("td")[1]["style"] == "text-align:right"


def test_links_are_marked_noopener_and_bare_urls_become_links():
    doc = assert_inert(render_markdown(
        "[docs](https://example.com/a?b=1&c=2) see https://arbor.example/x and "
        "<mailto:me@example.com>"))
    links = doc.named("a")
    assert [a["href"] for a in links] == [
        "https://example.com/a?b=1&c=2", "https://arbor.example/x", "mailto:me@example.com"]
    for a in links:
        assert set(a["rel"].split()) == {"noopener", "noreferrer", "nofollow"}
        assert a["target"] == "_blank"


def test_file_names_are_not_links():
    doc = assert_inert(render_markdown("see memory_core/search.py and README.md"))
    assert doc.named("a") == []


# A code block: its head (the language and a Copy button), then the code.
CODE_DIVS = [{"class": "codeblock"}, {"class": "code-head"}, {"class": "highlight"}]


def test_a_code_block_names_its_language_and_has_a_copy_button():
    doc = assert_inert(render_markdown("```python\nx = 1\n```\n\n```\nplain\n```"))
    assert [a["class"] for a in doc.named("button")] == ["copy-code", "copy-code"]
    assert "python" in doc.text and "code" in doc.text
    # A fence's word is shown only when it looks like a language name, always escaped;
    # the head's markup typed into a message stays text.
    doc = assert_inert(render_markdown('```"><img src=x>\nx\n```\n\n<div class="code-head">'))
    assert doc.named("img") == [] and len(doc.named("button")) == 1
    assert '<div class="code-head">' in doc.text


def test_python_fence_is_highlighted_with_classes_not_styles():
    html = render_markdown('```python\ndef greet(name):\n    return f"hi {name}"\n```')
    doc = assert_inert(html)
    assert doc.named("div") == CODE_DIVS
    classes = {a.get("class") for a in doc.named("span")}
    assert {"k", "nf", "code-lang"} <= classes  # keyword `def`/`return`, function name
    assert "style" not in html
    assert 'def greet(name):\n    return f"hi {name}"' in doc.text


def test_unknown_language_fence_is_escaped_plain_text():
    html = render_markdown("```nosuchlang\nif a < b && c > d: <b>x</b>\n```")
    doc = assert_inert(html)
    assert doc.named("div") == CODE_DIVS
    assert doc.named("span") == [{"class": "code-lang"}]
    assert "if a &lt; b &amp;&amp; c &gt; d: &lt;b&gt;x&lt;/b&gt;" in html
    assert "if a < b && c > d: <b>x</b>" in doc.text


def test_indented_code_is_a_plain_code_block():
    doc = assert_inert(render_markdown("text\n\n    <b>code</b>\n"))
    assert doc.named("div") == CODE_DIVS
    assert "<b>code</b>" in doc.text


def test_huge_fence_is_shown_plain():
    code = "x = 1\n" * 10_000  # over HIGHLIGHT_MAX_CHARS, under MARKDOWN_MAX_CHARS
    doc = assert_inert(render_markdown(f"# Code\n\n```python\n{code}```"))
    assert doc.named("h1") and doc.named("div") == CODE_DIVS
    assert doc.named("span") == [{"class": "code-lang"}]
    assert doc.text.count("x = 1") == 10_000


def test_text_over_the_markdown_limit_is_plain_escaped_text():
    text = "# not a heading <script>alert(1)</script>\n" * 5_000
    assert len(text) > MARKDOWN_MAX_CHARS
    html = render_markdown(text)
    doc = assert_inert(html)
    assert [t for t, _ in doc.tags] == ["pre"] and doc.named("pre") == [{"class": "plain-text"}]
    assert doc.text == text + "\n" or doc.text == text
