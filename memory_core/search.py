"""Text to search words, the same way for documents and queries on every database.

Words are cased-folded, stripped of Latin diacritics and stemmed with one Snowball
English stemmer (PyStemmer). Scripts written without spaces (Chinese, Japanese,
Thai, Lao, Khmer, Myanmar) become overlapping character bigrams. User text is
always words: no character of it reaches a database as query syntax.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
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
MAX_QUERY_WORDS = 32

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


def _words(text: str) -> list[tuple[str, bool]]:
    """(word, is_spaceless) in order of appearance."""
    out: list[tuple[str, bool]] = []
    for match in _TOKEN.finditer(_normalise(text)):
        spaceless = match.group(1)
        if spaceless:
            out.append((spaceless, True))
        else:
            out.append((match.group(0), False))
    return out


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
    """Distinct search terms of a natural-language query, stop words dropped.

    A query made only of stop words keeps them, so "to be or not to be" still finds
    the line. An empty result means: no search, no results.
    """
    if not isinstance(query, str):
        return []
    words = _words(query)
    kept = [w for w in words if w[1] or w[0] not in STOP_WORDS] or words
    terms: list[str] = []
    for word, spaceless in kept:
        for term in _bigrams(word) if spaceless else [_stem(word[:MAX_TOKEN_CHARS])]:
            if term not in terms:
                terms.append(term)
    return terms[:MAX_QUERY_WORDS]


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

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "session_id": self.session_id,
            "role": self.role,
            "content": self.content,
            "created_at": self.created_at.isoformat(),
            "rank": self.rank,
            "score": self.score,
        }


def clamp_limit(limit: Any, default: int) -> int:
    try:
        value = int(limit)
    except (TypeError, ValueError):
        return default
    return max(1, min(value, 200))
