"""Stored messages as safe HTML for the browser UI: Markdown, highlighted code, collapsed
reasoning and tool parts, search snippets.

Nothing from a message becomes markup except through markdown-it (raw HTML off) followed
by nh3's allow-list; every other string is escaped here. The highlight stylesheet is
static/arbor/highlight.css, made by write_pygments_css() (a test keeps the two equal):
    .venv/bin/python -c "from sessions_app.rendering import write_pygments_css as w; w()"
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import nh3
from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt
from markdown_it.token import Token
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexer import Lexer
from pygments.lexers import get_lexer_by_name
from pygments.token import STANDARD_TYPES
from pygments.util import ClassNotFound

from arbor_client.agents_items import ITEM_JSON_KEY, ITEM_KEY
from memory_core import Message

MAX_PRE_CHARS = 20_000  # a tool input, output or unknown part shown in <pre>; the rest is cut
# Longer texts are shown as plain text: markdown-it-py parses about 100-200 KB a second, so
# a megabyte paste would hold a page for several seconds.
MARKDOWN_MAX_CHARS = 100_000
HIGHLIGHT_MAX_CHARS = 50_000  # longer code blocks are shown plain (Pygments: ~1 MB/s)
LINK_REL = "noopener noreferrer nofollow"
LIGHT_STYLE, DARK_STYLE = "default", "github-dark"
HIGHLIGHT_CSS_PATH = Path(__file__).resolve().parent.parent / "static" / "arbor" / "highlight.css"

_FORMATTER = HtmlFormatter(cssclass="highlight", wrapcode=True)
_LANGUAGE = re.compile(r"[\w+#.-]{1,32}")
# A code block's head. Its Copy button is added after sanitising (nh3 allows no button):
# the head's exact markup can only come from _code_html, as the Markdown renderer shows
# any HTML in a message as text.
_CODE_HEAD = '<div class="code-head">'
_COPY_BUTTON = ('<button type="button" class="copy-code" aria-label="Copy code">Copy'
                '</button>')
_TOKEN_CLASSES = {c for c in STANDARD_TYPES.values() if c}
_SAFE_HREF = re.compile(r"(?:https?://|mailto:)", re.I)
_MARK = re.compile(r"(</?mark>)")
_ALIGN = {"style": {f"text-align:{side}" for side in ("left", "right", "center")}}

# What the Markdown renderer below can produce, and nothing else. Links: absolute http(s)
# and mailto only (a relative URL would point into Arbor itself), opened in a new tab.
_CLEANER = nh3.Cleaner(
    tags={"p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "strong", "em", "del", "s",
          "code", "pre", "blockquote", "ul", "ol", "li", "a", "table", "thead", "tbody",
          "tr", "th", "td", "div", "span"},
    clean_content_tags={"script", "style"},
    attributes={"a": {"href", "title"}, "ol": {"start"}},
    tag_attribute_values={"th": _ALIGN, "td": _ALIGN},
    set_tag_attribute_values={"a": {"target": "_blank"}},
    url_schemes={"http", "https", "mailto"},
    url_relative="deny",
    link_rel=LINK_REL,
    allowed_classes={"div": {"highlight", "codeblock", "code-head"},
                     "span": _TOKEN_CLASSES | {"code-lang"}},
    strip_comments=True,
)


def _text(value: str) -> str:
    """The string with NUL and lone surrogates as U+FFFD: neither may reach a page."""
    value = value.replace("\x00", "\ufffd")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        value = value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return value


def _esc(value: str) -> str:
    return html.escape(_text(value), quote=True)


# --- code blocks -------------------------------------------------------------------------


@lru_cache(maxsize=128)
def _lexer(language: str) -> Lexer | None:
    if not language:
        return None
    try:
        return get_lexer_by_name(language)  # by name only: guessing is slow and wrong
    except ClassNotFound:
        return None


def _code_html(code: str, language: str) -> str:
    """A code block: Pygments classes for a known language, plain escaped text otherwise,
    under a head naming the language (the fence's word, escaped; "code" when none)."""
    lexer = _lexer(language.lower()) if len(code) <= HIGHLIGHT_MAX_CHARS else None
    if lexer is None:
        body = f'<div class="highlight"><pre><code>{html.escape(code)}</code></pre></div>'
    else:
        body = str(highlight(code, lexer, _FORMATTER)).rstrip("\n")
    label = language if _LANGUAGE.fullmatch(language) else "code"
    return (f'<div class="codeblock">{_CODE_HEAD}<span class="code-lang">{_esc(label)}'
            f'</span></div>{body}</div>\n')


def _fence(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
    token = tokens[idx]
    info = token.info.split(maxsplit=1)
    return _code_html(token.content, info[0] if info else "")


def _code_block(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
    return _code_html(tokens[idx].content, "")


def _make_markdown() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "linkify": True})
    md.enable(["table", "strikethrough", "linkify"])
    # An image loads from anywhere as the page opens: a tracking pixel, or a way for a
    # prompt-injected answer to send data out in its URL. `![alt](url)` shows as a link.
    md.disable("image")
    # Bare names are not links: "see rendering.py" must not point at http://rendering.py.
    md.linkify.set({"fuzzy_link": False})
    md.add_render_rule("fence", _fence)
    md.add_render_rule("code_block", _code_block)
    return md


_MARKDOWN = _make_markdown()


# --- public API --------------------------------------------------------------------------


def render_markdown(text: str) -> SafeString:
    """CommonMark (with tables, strikethrough and bare links) as sanitized HTML.

    HTML in the text is shown as text; links keep only http(s)/mailto targets and get
    rel="noopener noreferrer nofollow"; fenced code is highlighted with Pygments classes
    inside <div class="highlight">. A text over MARKDOWN_MAX_CHARS is shown as it is,
    escaped, in <pre class="plain-text">.
    """
    text = _text(text)
    if len(text) > MARKDOWN_MAX_CHARS:
        return mark_safe(f'<pre class="plain-text">{html.escape(text, quote=True)}</pre>\n')
    rendered = _CLEANER.clean(_MARKDOWN.render(text))
    # nh3 just sanitized it; the Copy buttons are fixed markup
    return mark_safe(rendered.replace(_CODE_HEAD, _CODE_HEAD + _COPY_BUTTON))


# Markdown's syntax in a snippet of stored text: fences, table rules and pipes, emphasis,
# backticks, heading marks. A snippet reads as the words.
_MD_SYNTAX = re.compile(r"```[\w+#.-]*|:?-{3,}:?|\*\*|__|`|(?:^|(?<=\s))#{1,6}(?=\s)|\|")
_SPACES = re.compile(r"[ \t]{2,}")


def _unmarked(text: str) -> str:
    return _SPACES.sub(" ", _MD_SYNTAX.sub(" ", text))


def snippet_html(snippet: str) -> SafeString:
    """A search snippet (memory_core.search.snippet: escaped text, matches in <mark>) as
    HTML. Only the marks are kept as tags, balanced; everything else is escaped afresh, so
    even a snippet that was never escaped is safe."""
    out: list[str] = []
    open_mark = False
    for piece in _MARK.split(_text(snippet)):
        if piece in ("<mark>", "</mark>"):
            if (piece == "<mark>") != open_mark:
                out.append(piece)
                open_mark = not open_mark
        elif piece:
            out.append(html.escape(_unmarked(html.unescape(piece)), quote=True))
    if open_mark:
        out.append("</mark>")
    return mark_safe("".join(out))  # escaped text and <mark> only


def render_parts(message: Message | Mapping[str, Any]) -> SafeString:
    """The body of a memory_core.Message (or a dict of its shape) as safe HTML.

    Text parts are Markdown in <div class="message-text">; reasoning, tool calls, tool
    results and unknown parts are collapsed <details> (classes reasoning, tool-call,
    tool-result [tool-error], part-other). step-start parts show nothing. A message that
    answers a call shown in an earlier one shows its tool parts' results only.
    """
    parts = message["parts"]
    results_only = _answers_earlier_call(message)
    return mark_safe("".join(_part_html(p, results_only) for p in parts or ()))


def _answers_earlier_call(message: Message | Mapping[str, Any]) -> bool:
    """Whether the message is an Agents SDK `function_call_output` item as ArborSession
    stores it: a tool part repeating its call's name and input beside the output (so search
    and the model-input converter have them), after the call's own message, which already
    shows that input on the page."""
    metadata = message.get("metadata") if isinstance(message, Mapping) else message.metadata
    if not isinstance(metadata, Mapping):
        return False
    item = metadata.get(ITEM_KEY)
    if item is None and isinstance(metadata.get(ITEM_JSON_KEY), str):
        try:  # an item holding values JSON cannot (NaN, huge integers), kept as text
            item = json.loads(metadata[ITEM_JSON_KEY])
        except ValueError:
            return False
    return isinstance(item, Mapping) and item.get("type") == "function_call_output"


# --- parts -------------------------------------------------------------------------------


def _part_html(part: Any, results_only: bool = False) -> str:
    if not isinstance(part, Mapping):
        return _other_html("part", part)
    kind = part.get("type")
    if kind == "text" and isinstance(part.get("text"), str):
        return f'<div class="message-text">{render_markdown(part["text"])}</div>\n'
    if kind == "reasoning" and isinstance(part.get("text"), str):
        return _details("reasoning", "Reasoning",
                        f'<div class="reasoning-text">{render_markdown(part["text"])}</div>')
    if kind == "step-start":
        return ""
    if kind == "tool-call":
        return _call_html(part)
    if kind == "tool-result":
        output = part.get("output")
        return _result_html(part, _output_text(output),
                            bool(part.get("isError")) or _is_error_output(output))
    if _is_tool_part(kind):  # an AI SDK tool part: the call, and its result once done
        result = _inline_result_html(part)
        return result if results_only and result else _call_html(part) + result
    if kind == "source-url" and _SAFE_HREF.match(str(part.get("url", ""))):
        return _source_html(part)
    return _other_html(kind if isinstance(kind, str) else "part", part)


def _is_tool_part(kind: Any) -> bool:
    return isinstance(kind, str) and (kind == "dynamic-tool"
                                      or (kind.startswith("tool-") and len(kind) > 5))


def _details(css_class: str, summary: str, body: str) -> str:
    return (f'<details class="{css_class}"><summary>{_esc(summary)}</summary>'
            f"{body}</details>\n")


def _pre(css_class: str, text: str) -> str:
    """Escaped text in <pre>, cut at MAX_PRE_CHARS with a note saying how much is shown."""
    text = _text(text)
    note = ""
    if len(text) > MAX_PRE_CHARS:
        note = (f'<p class="truncated">Showing the first {MAX_PRE_CHARS:,} of '
                f"{len(text):,} characters.</p>")
        text = text[:MAX_PRE_CHARS]
    return f'<pre class="{css_class}">{html.escape(text, quote=True)}</pre>{note}'


def _tool_name(part: Mapping[str, Any]) -> str:
    name = part.get("toolName")
    if isinstance(name, str) and name:
        return name
    kind = part.get("type")
    if _is_tool_part(kind) and kind not in ("dynamic-tool", "tool-call", "tool-result"):
        return str(kind)[5:]
    return "tool"


def _json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def _input_text(value: Any) -> str:
    """Arguments as pretty JSON; a string holding JSON is parsed first, other strings kept."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return value
    return _json(value)


def _output_text(output: Any) -> str:
    """A tool output as text: strings as they are, AI SDK wrappers ({type, value})
    unwrapped, anything else pretty JSON."""
    if isinstance(output, Mapping) and set(output) <= {"type", "value", "providerOptions"}:
        kind, value = output.get("type"), output.get("value")
        if kind in ("text", "error-text") and isinstance(value, str):
            return value
        if kind in ("json", "error-json"):
            return _json(value)
        if kind == "content" and isinstance(value, list):
            return "\n".join(str(v.get("text", "")) for v in value
                             if isinstance(v, Mapping) and v.get("type") == "text")
    return output if isinstance(output, str) else _json(output)


def _call_html(part: Mapping[str, Any]) -> str:
    body = _pre("tool-input", _input_text(part.get("input"))) if "input" in part else ""
    return _details("tool-call", f"Tool call: {_tool_name(part)}", body)


def _is_error_output(output: Any) -> bool:
    return isinstance(output, Mapping) and output.get("type") in ("error-text", "error-json")


def _result_html(part: Mapping[str, Any], text: str, is_error: bool) -> str:
    css_class, label = ("tool-result", "Tool result")
    if is_error:
        css_class, label = "tool-result tool-error", "Tool error"
    return _details(css_class, f"{label}: {_tool_name(part)}", _pre("tool-output", text))


def _inline_result_html(part: Mapping[str, Any]) -> str:
    """The result an AI SDK tool part holds once its call finished, else nothing."""
    state = part.get("state")
    if state == "output-error" or (part.get("errorText") and "output" not in part):
        return _result_html(part, str(part.get("errorText") or "Error"), True)
    if state == "output-denied":
        return _result_html(part, "The call was denied.", True)
    if "output" in part:
        output = part["output"]
        return _result_html(part, _output_text(output), _is_error_output(output))
    return ""


def _source_html(part: Mapping[str, Any]) -> str:
    title = part.get("title") if isinstance(part.get("title"), str) else part["url"]
    link = f'<a href="{_esc(part["url"])}" rel="{LINK_REL}" target="_blank">{_esc(title)}</a>'
    return f'<p class="source">Source: {link}</p>\n'


def _other_html(kind: str, part: Any) -> str:
    return _details("part-other", kind, _pre("part-json", _json(part)))


# --- the highlight stylesheet ------------------------------------------------------------


def pygments_css() -> str:
    """The stylesheet for `.highlight` code blocks: LIGHT_STYLE, and DARK_STYLE under
    prefers-color-scheme: dark."""
    light = HtmlFormatter(style=LIGHT_STYLE)
    dark = HtmlFormatter(style=DARK_STYLE)
    # The dark rules are one step more specific (:root), so a reset placed between the two
    # clears the light colours of tokens the dark style leaves unstyled.
    reset = (":root .highlight span { color: inherit; background-color: transparent; "
             "font-weight: inherit; font-style: inherit; text-decoration: inherit; "
             "border: 0 }")
    dark_rules = [reset, *dark.get_background_style_defs(":root .highlight"),
                  *dark.get_token_style_defs(":root .highlight")]
    return "\n".join([
        "/* Generated by sessions_app.rendering.write_pygments_css(); do not edit. */",
        *light.get_background_style_defs(".highlight"),
        *light.get_token_style_defs(".highlight"),
        "@media (prefers-color-scheme: dark) {",
        *("  " + rule for rule in dark_rules),
        "}",
        "",
    ])


def write_pygments_css(*, path: Path = HIGHLIGHT_CSS_PATH) -> None:
    """Write pygments_css() to the static file the pages link."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(pygments_css(), encoding="utf-8")
