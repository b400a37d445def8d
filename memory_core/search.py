"""Search hits: what a search returns (SearchHit), shaped for its caller (shape_hits), and
how many (clamp_limit).

Words (words.py: text to stems, query concepts) and snippets (snippets.py) have their own
modules; their public names are re-exported here, the path callers have always used.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from .limits import MAX_SEARCH_LIMIT
from .messages import Mappable
from .snippets import (
    ELLIPSIS,
    MAX_SNIPPET_ANCHORS,
    SNIPPET_CHARS,
    SNIPPET_LEAD_CHARS,
    plain_text,
    snippet,
)
from .stop_words import QUERY_STOP_WORDS, STOP_WORDS
from .words import (
    FRAGMENTS,
    IRREGULAR,
    MAX_DOC_TOKENS,
    MAX_QUERY_SCAN_CHARS,
    MAX_QUERY_TERMS,
    MAX_TOKEN_CHARS,
    index_tokens,
    query_concepts,
    query_terms,
    stem_variants,
)

__all__ = [
    "ELLIPSIS", "FRAGMENTS", "IRREGULAR", "MAX_DOC_TOKENS", "MAX_HIT_CHARS",
    "MAX_QUERY_SCAN_CHARS", "MAX_QUERY_TERMS", "MAX_SNIPPET_ANCHORS", "MAX_TOKEN_CHARS",
    "QUERY_STOP_WORDS", "SNIPPET_CHARS", "SNIPPET_LEAD_CHARS", "STOP_WORDS", "HitCopy", "SearchHit",
    "clamp_limit", "index_tokens", "make_snippet", "plain_text", "query_concepts",
    "query_terms", "shape_hits", "snippet", "stem_variants",
]

MAX_HIT_CHARS = 2_000  # a hit's `content` beyond this is cut unless the full text is asked for


@dataclass(frozen=True, slots=True)
class HitCopy(Mappable):
    """Where another copy of a hit's very text is (a fork's copy, say, or its original)."""

    session_id: str
    message_id: str

    def to_dict(self) -> dict[str, Any]:
        return {"session_id": self.session_id, "message_id": self.message_id}


@dataclass(frozen=True, slots=True)
class SearchHit(Mappable):
    """One search result. `rank` is the 1-based position; `score` the word relevance
    (BM25); `snippet` the excerpt around the best match (see snippet()), made when first
    read so callers that never read it do not pay for it; `truncated` whether content was
    cut; `superseded_by` the id of a newer hit on the same subject that reads as a
    correction (see rerank()); `copies` how many hits had this very text (the newest is
    shown), `other_copies` where the others are, best-ranked first: collapsing hides no
    session's copy; `matched` how it was found: by its "words", its "meaning" (search by
    meaning, hybrid.py: its snippet is then its start) or "both"."""

    id: str
    session_id: str
    role: str
    content: str
    created_at: datetime
    rank: int
    score: float
    truncated: bool = False
    superseded_by: str | None = None
    copies: int = 1
    _terms: tuple[str, ...] = field(default=(), repr=False, compare=False)
    _text: str | None = field(default=None, repr=False, compare=False)  # before any cut
    matched: str = "words"
    _snippet: str | None = field(default=None, init=False, repr=False, compare=False)
    other_copies: tuple[HitCopy, ...] = ()

    @property
    def snippet(self) -> str:
        if self._snippet is None:
            text = self.content if self._text is None else self._text
            object.__setattr__(self, "_snippet", make_snippet(text, self._terms))
        assert self._snippet is not None
        return self._snippet

    def __getitem__(self, key: str) -> Any:
        return self.snippet if key == "snippet" else Mappable.__getitem__(self, key)

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
            "superseded_by": self.superseded_by,
            "copies": self.copies,
            "other_copies": [c.to_dict() for c in self.other_copies],
            "matched": self.matched,
        }


make_snippet = snippet  # the name SearchHit.snippet would shadow in the class body


def shape_hits(hits: Sequence[SearchHit], terms: Sequence[str], *, full: bool) -> list[SearchHit]:
    """Hits that make their snippet from `terms`; unless `full`, content cut to
    MAX_HIT_CHARS (`truncated`)."""
    shaped = []
    kept_terms = tuple(terms)
    for h in hits:  # the constructor: dataclasses.replace costs several times more
        cut = not full and len(h.content) > MAX_HIT_CHARS
        if not cut and h._terms == kept_terms:  # shaped already (re-ranking's own hits)
            shaped.append(h)
            continue
        shaped.append(SearchHit(
            h.id, h.session_id, h.role, h.content[:MAX_HIT_CHARS] if cut else h.content,
            h.created_at, h.rank, h.score, cut, h.superseded_by, h.copies, kept_terms,
            h.content, h.matched, other_copies=h.other_copies))
    return shaped


def clamp_limit(limit: Any, default: int) -> int:
    try:
        value = int(limit)
    except (TypeError, ValueError):
        return default
    return max(1, min(value, MAX_SEARCH_LIMIT))
