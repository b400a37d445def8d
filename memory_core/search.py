"""Text to search words, the same way for documents and queries on every database.

Words are cased-folded, stripped of Latin diacritics and stemmed with one Snowball
English stemmer (PyStemmer). Scripts written without spaces (Chinese, Japanese,
Thai, Lao, Khmer, Myanmar) become overlapping character bigrams. User text is
always words: no character of it reaches a database as query syntax.
"""

from __future__ import annotations

import html
import re
import unicodedata
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from functools import lru_cache
from typing import Any

import Stemmer

from .messages import Mappable

# Runs of characters from scripts written without spaces between words.
_SPACELESS = (
    "\u0e00-\u0e7f\u0e80-\u0eff\u1000-\u109f\u1780-\u17ff"  # Thai, Lao, Myanmar, Khmer
    "\u3040-\u309f\u30a0-\u30ff\u31f0-\u31ff"  # Hiragana, Katakana
    "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"  # Han
    "\U00020000-\U0002fa1f"
)
# A word: word characters except '_' and the spaceless scripts; or a spaceless run.
_TOKEN = re.compile(f"([{_SPACELESS}]+)|[^\\W_{_SPACELESS}]+")
_DIACRITICS = re.compile("[\u0300-\u036f]")

MAX_TOKEN_CHARS = 64  # longer "words" (hashes, base64) are cut: Postgres caps lexemes
MAX_DOC_TOKENS = 20_000  # a tsvector holds at most 1 MB
MAX_QUERY_TERMS = 64  # a longer query searches with its first 64 distinct terms
# Only this much of a query is read: 64 terms never need more, and a 1 MB query stays cheap.
MAX_QUERY_SCAN_CHARS = MAX_QUERY_TERMS * (MAX_TOKEN_CHARS + 1) * 8
MAX_HIT_CHARS = 2_000  # a hit's `content` beyond this is cut unless the full text is asked for
SNIPPET_WORDS = 30  # a snippet is about this many words around the best match
SNIPPET_CHARS = 300  # and never longer than this (marks and escapes not counted)
SNIPPET_LEAD_WORDS = 5  # words shown before the first match, for context
ELLIPSIS = "\u2026"

STOP_WORDS = frozenset(
    """a about above after again against all am an and any are as at be because been
    before being below between both but by can could did do does doing down during each
    few for from further had has have having he her here hers herself him himself his how
    i if in into is it its itself just me more most my myself no nor not now of off on
    once only or other our ours ourselves out over own same she should so some such than
    that the their theirs them themselves then there these they this those through to too
    under until up very was we were what when where which while who whom why will with
    would you your yours yourself yourselves""".split()
)

_stemmer = Stemmer.Stemmer("english")


@lru_cache(maxsize=50_000)
def _stem(word: str) -> str:
    return str(_stemmer.stemWord(word))


def _normalise(text: str) -> str:
    text = text.casefold()
    if not text.isascii():
        text = unicodedata.normalize("NFKD", text)
        text = unicodedata.normalize("NFC", _DIACRITICS.sub("", text))
    return text


def _iter_words(text: str) -> Iterator[tuple[str, bool]]:
    """(word, is_spaceless) in order of appearance."""
    for match in _TOKEN.finditer(_normalise(text)):
        spaceless = match.group(1)
        yield (spaceless, True) if spaceless else (match.group(0), False)


def _words(text: str) -> list[tuple[str, bool]]:
    return list(_iter_words(text))


def _bigrams(run: str) -> list[str]:
    if len(run) == 1:
        return [run]
    return [run[i : i + 2] for i in range(len(run) - 1)]


def index_tokens(text: str) -> list[str]:
    """Tokens to index for a document, in order, duplicates kept (term frequency)."""
    tokens: list[str] = []
    for word, spaceless in _words(text):
        if spaceless:
            tokens.extend(_bigrams(word))
        else:
            tokens.append(_stem(word[:MAX_TOKEN_CHARS]))
        if len(tokens) >= MAX_DOC_TOKENS:
            return tokens[:MAX_DOC_TOKENS]
    return tokens


def query_terms(query: str) -> list[str]:
    """The first MAX_QUERY_TERMS distinct search terms of a natural-language query, stop
    words dropped. Tokenising stops once that many are found, so any length is cheap.

    A query made only of stop words keeps them, so "to be or not to be" still finds
    the line. An empty result means: no search, no results.
    """
    if not isinstance(query, str):
        return []
    terms: list[str] = []
    stopped: list[str] = []  # used only when the query has nothing else
    for word, spaceless in _iter_words(query[:MAX_QUERY_SCAN_CHARS]):
        is_stop = not spaceless and word in STOP_WORDS
        bucket = stopped if is_stop else terms
        if is_stop and len(stopped) >= MAX_QUERY_TERMS:
            continue
        for term in _bigrams(word) if spaceless else [_stem(word[:MAX_TOKEN_CHARS])]:
            if term not in bucket:
                bucket.append(term)
        if len(terms) >= MAX_QUERY_TERMS:
            break
    return (terms or stopped)[:MAX_QUERY_TERMS]


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
            yield from _bigram_spans(word, start, terms)
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


def _best_window(spans: list[tuple[int, int, bool]], text: str) -> tuple[int, int]:
    """Indexes [first, last) of the SNIPPET_WORDS-word window holding the most distinct
    matched words (then the most matches), led in by SNIPPET_LEAD_WORDS words before a
    match; the earliest wins ties. One pass with running counts: a message may be huge."""
    words = [text[s:e].casefold() if m else None for s, e, m in spans]
    counts: Counter[str] = Counter()
    best, best_key = 0, (0, 0)
    for first in range(len(spans)):
        if first == 0:
            counts.update(w for w in words[:SNIPPET_WORDS] if w)
        else:  # slide by one word
            gone, new = words[first - 1], words[first + SNIPPET_WORDS - 1 : first + SNIPPET_WORDS]
            if gone:
                counts[gone] -= 1
                if not counts[gone]:
                    del counts[gone]
            counts.update(w for w in new if w)
        at = first + SNIPPET_LEAD_WORDS
        if first and (at >= len(words) or words[at] is None):
            continue  # windows start a few words before a match (or at the text's start)
        key = (len(counts), sum(counts.values()))
        if key > best_key:
            best, best_key = first, key
    return best, min(len(spans), best + SNIPPET_WORDS)


def snippet(text: str, terms: Sequence[str], *, html_marks: bool = True) -> str:
    """A short excerpt of `text` around its best match for `terms` (query terms).

    html_marks=True: every character is HTML-escaped and each matched word is wrapped in
    <mark></mark>, safe to insert as HTML. False: plain text for a model. Whitespace runs
    become one space; an ELLIPSIS shows where the text was cut.
    """
    spans = list(_marked_spans(text, frozenset(terms)))
    if not spans:
        return _finish([(text[:SNIPPET_CHARS], False)], len(text) > SNIPPET_CHARS, False,
                       html_marks)
    first, last = _best_window(spans, text)
    start, end = spans[first][0], spans[last - 1][1]
    if first == 0:
        start = 0
    if last == len(spans):
        end = len(text)
    if end - start > SNIPPET_CHARS:
        end = start + SNIPPET_CHARS
    pieces: list[tuple[str, bool]] = []
    at = start
    for s, e, matched in spans[first:last]:
        if s >= end:
            break
        if matched:
            pieces.append((text[at:s], False))
            pieces.append((text[s:min(e, end)], True))
            at = min(e, end)
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


@dataclass(frozen=True, slots=True)
class SearchHit(Mappable):
    """One search result. `rank` is the 1-based position; `score` the relevance."""

    id: str
    session_id: str
    role: str
    content: str
    created_at: datetime
    rank: int
    score: float
    snippet: str = ""
    truncated: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "session_id": self.session_id,
            "role": self.role,
            "content": self.content,
            "created_at": self.created_at.isoformat(),
            "rank": self.rank,
            "score": self.score,
            "snippet": self.snippet,
            "truncated": self.truncated,
        }


def shape_hits(hits: Sequence[SearchHit], terms: Sequence[str], *, full: bool) -> list[SearchHit]:
    """Hits with their snippet; unless `full`, content cut to MAX_HIT_CHARS (`truncated`)."""
    shaped = []
    for hit in hits:
        cut = not full and len(hit.content) > MAX_HIT_CHARS
        shaped.append(replace(
            hit, snippet=snippet(hit.content, terms),
            content=hit.content[:MAX_HIT_CHARS] if cut else hit.content, truncated=cut))
    return shaped


def clamp_limit(limit: Any, default: int) -> int:
    try:
        value = int(limit)
    except (TypeError, ValueError):
        return default
    return max(1, min(value, 200))
