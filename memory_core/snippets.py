"""Snippets: the short excerpt of a hit's text around its best match, with the matched
words marked, found the way the index files words (words.py)."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator, Sequence

from .words import (
    _TOKEN,
    MAX_DOC_TOKENS,
    MAX_TOKEN_CHARS,
    _bigrams,
    _candidates,
    _stem,
    index_tokens,
)

_SPACE = re.compile(r"\s")

SNIPPET_CHARS = 300  # a snippet's length (about 30 words; marks and escapes not counted)
SNIPPET_LEAD_CHARS = 40  # text shown before the first match, for context
MAX_SNIPPET_ANCHORS = 1_000  # the best window is looked for among this many matches
ELLIPSIS = "\u2026"


def _marked_spans(text: str, terms: frozenset[str]) -> Iterator[tuple[int, int, bool]]:
    """(start, end, matched) of each word of `text` in order, indexed the way the index
    tokenises (so a word is matched when its stem, or a bigram of it, is a query term);
    at most MAX_DOC_TOKENS words, like the index."""
    for count, match in enumerate(_TOKEN.finditer(text)):
        if count >= MAX_DOC_TOKENS:
            return
        start, end = match.span()
        word = match.group(0)
        if match.group(1):  # a spaceless run: mark the characters its matching bigrams cover
            # (the index keeps at most MAX_DOC_TOKENS bigrams, so no more are looked at)
            yield from _bigram_spans(word[: MAX_DOC_TOKENS + 1], start, terms)
            continue
        if word.isascii():  # the common case, cheaply: casefold is lower() for ASCII
            yield start, end, _stem(word[:MAX_TOKEN_CHARS].lower()) in terms
            continue
        tokens = index_tokens(word)  # normalised and stemmed as the index does it
        yield start, end, any(t in terms for t in tokens)


def _bigram_spans(run: str, offset: int, terms: frozenset[str]) -> Iterator[tuple[int, int, bool]]:
    hit = [False] * len(run)
    for i, gram in enumerate(_bigrams(run)):
        if gram in terms:
            hit[i : i + len(gram)] = [True] * len(gram)
    i = 0
    while i < len(run):  # runs of marked and unmarked characters
        j = i
        while j < len(run) and hit[j] == hit[i]:
            j += 1
        yield offset + i, offset + j, hit[i]
        i = j



def _matched(text: str, terms: frozenset[str]) -> list[tuple[int, int]]:
    """(start, end) of each word of `text` the index would file under one of `terms`."""
    if not text.isascii():
        return [(s, e) for s, e, hit in _marked_spans(text, terms) if hit]
    pattern = _candidates(terms)  # fast path: the regex scans in C, few words get stemmed
    if pattern is None:
        return []
    return [m.span() for m in pattern.finditer(text)
            if _stem(m.group(0)[:MAX_TOKEN_CHARS].lower()) in terms]


def _best_anchor(text: str, matched: list[tuple[int, int]]) -> int:
    """Where the best window starts: the one of SNIPPET_CHARS characters, led in by
    SNIPPET_LEAD_CHARS before a match, holding the most distinct matched words (then the
    most matches); earliest wins ties. Among the first MAX_SNIPPET_ANCHORS matches, in one
    pass (the window's end only moves forward)."""
    words = [text[s:e].casefold() for s, e in matched]
    counts: dict[str, int] = {}
    best, best_key, end = 0, (0, 0), 0  # matched[i:end] lie in the current window
    for i, (start, _e) in enumerate(matched[:MAX_SNIPPET_ANCHORS]):
        begin = max(0, start - SNIPPET_LEAD_CHARS)
        end = max(end, i)
        while end < len(matched) and matched[end][1] <= begin + SNIPPET_CHARS:
            counts[words[end]] = counts.get(words[end], 0) + 1
            end += 1
        key = (len(counts), end - i)
        if key > best_key:
            best, best_key = begin, key
        if end > i:  # match i leaves before the next window
            counts[words[i]] -= 1
            if not counts[words[i]]:
                del counts[words[i]]
    return best


def _snap(text: str, start: int, end: int) -> tuple[int, int]:
    """Move a cut start forward and a cut end back to whitespace, so no word is split
    (unless one word is longer than the window)."""
    if start > 0 and not text[start - 1].isspace():
        space = _SPACE.search(text, start, end)
        start = space.end() if space else start
    if end < len(text) and not text[end].isspace():
        cut = max(text.rfind(c, start, end) for c in " \n\t")
        end = cut if cut > start else end
    return start, end


def snippet(text: str, terms: Sequence[str], *, html_marks: bool = True) -> str:
    """A short excerpt of `text` (at most SNIPPET_CHARS characters, about 30 words) around
    its best match for `terms` (query terms, from query_terms()).

    html_marks=True: every character is HTML-escaped and each matched word is wrapped in
    <mark></mark>, safe to insert as HTML. False: plain text for a model. Whitespace runs
    become one space; an ELLIPSIS shows where the text was cut.
    """
    matched = _matched(text, frozenset(terms))
    start = _best_anchor(text, matched) if len(text) > SNIPPET_CHARS else 0
    start, end = _snap(text, start, min(len(text), start + SNIPPET_CHARS))
    pieces: list[tuple[str, bool]] = []
    at = start
    for s, e in matched:
        if s < start or e > end:
            continue
        pieces += [(text[at:s], False), (text[s:e], True)]
        at = e
    pieces.append((text[at:end], False))
    return _finish(pieces, end < len(text), start > 0, html_marks)


def plain_text(marked: str) -> str:
    """A snippet as plain text for a model: marks gone, entities decoded. Safe because
    every '<' of the text itself was escaped, so only the marks are tags."""
    return html.unescape(marked.replace("<mark>", "").replace("</mark>", ""))


def _finish(pieces: list[tuple[str, bool]], cut_end: bool, cut_start: bool,
            html_marks: bool) -> str:
    out = []
    for piece, matched in pieces:
        piece = html.escape(piece, quote=True) if html_marks else piece
        out.append(f"<mark>{piece}</mark>" if matched and html_marks else piece)
    body = " ".join("".join(out).split())
    return (ELLIPSIS if cut_start else "") + body + (ELLIPSIS if cut_end else "")
