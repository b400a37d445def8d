"""Reading rendered HTML back as a browser would: which tags and attributes it holds
(markup) and what text it shows."""

from __future__ import annotations

from html.parser import HTMLParser

# Every tag and attribute rendering.py may emit; anything else is a leak.
TAGS = {"p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "strong", "em", "del", "s",
        "code", "pre", "blockquote", "ul", "ol", "li", "a", "table", "thead", "tbody", "tr",
        "th", "td", "div", "span", "details", "summary", "mark", "button"}
ATTRIBUTES = {"href", "title", "rel", "target", "class", "start", "style", "type", "aria-label"}
# The one button: a code block's Copy, fixed markup added after sanitising.
COPY_BUTTON = {"type": "button", "class": "copy-code", "aria-label": "Copy code"}
SAFE_HREF = ("http://", "https://", "mailto:")


class Markup(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.chunks: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.chunks.append(data)

    @property
    def text(self) -> str:
        return "".join(self.chunks)

    def named(self, tag: str) -> list[dict[str, str | None]]:
        return [attrs for name, attrs in self.tags if name == tag]


def parse(html: str) -> Markup:
    doc = Markup()
    doc.feed(html)
    doc.close()
    return doc


def assert_inert(html: str) -> Markup:
    """No script, no event handler, no unsafe link target, no tag or attribute outside
    what the renderer makes. Returns the parsed document for further checks."""
    assert "<script" not in html.lower()
    doc = parse(html)
    for tag, attrs in doc.tags:
        assert tag in TAGS, f"unexpected <{tag}>"
        if tag == "button":
            assert attrs == COPY_BUTTON, attrs
        for name, value in attrs.items():
            assert not name.startswith("on"), f"an event handler {name}= on <{tag}>"
            assert name in ATTRIBUTES, f"unexpected {name}= on <{tag}>"
            if name == "href":
                assert value and value.lower().startswith(SAFE_HREF), value
    return doc
