"""The one place a tsvector literal is spelled: built from Arbor's tokens, so Postgres'
parser never re-splits them. Only counts matter (BM25 needs term frequency): positions
are 1..n per lexeme. A bulk write builds many rows' literals, so the pieces (a lexeme
quoted, a run of positions) are made once and reused."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache

from . import MAX_POSITIONS


class _Positions(dict[int, str]):
    """k -> "1,2,...,k", the positions of a lexeme seen k times (at most MAX_POSITIONS)."""

    def __missing__(self, k: int) -> str:
        return self[MAX_POSITIONS]


_POSITIONS = _Positions((k, ",".join(str(i) for i in range(1, k + 1)))
                        for k in range(1, MAX_POSITIONS + 1))


@lru_cache(maxsize=50_000)
def _quoted(lexeme: str) -> str:
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "':"


class _Pieces(dict[tuple[str, int], str]):
    """(lexeme, k) -> its quoted form and positions; kept as a dict (read in C, by map
    over a row's counts: half the time of a cached call and a concatenation per lexeme),
    emptied when it reaches _MAX_PIECES."""

    def __missing__(self, key: tuple[str, int]) -> str:
        if len(self) >= _MAX_PIECES:
            self.clear()
        lexeme, k = key
        piece = self[key] = _quoted(lexeme) + _POSITIONS[k]
        return piece


_MAX_PIECES = 100_000
_PIECES = _Pieces()


def scope_tail(scope_tokens: Iterable[str]) -> str:
    """The literal's part for the scope tokens (each once), to end every row's."""
    return " ".join(_quoted(t) + "1" for t in dict.fromkeys(scope_tokens))


def literal(counts: Mapping[str, int], tail: str) -> str:
    """The literal of a text's token counts (no scope token among them) and `tail`."""
    body = " ".join(map(_PIECES.__getitem__, counts.items()))
    return f"{body} {tail}" if body and tail else body or tail


def tsvector(tokens: Sequence[str], scope_tokens: Sequence[str]) -> str:
    """A tsvector literal of `tokens` (term frequency kept) and the scope tokens (once)."""
    counts = Counter(tokens)
    for token in scope_tokens:  # a scope token is never a text token ('§…')
        counts.pop(token, None)
    return literal(counts, scope_tail(scope_tokens))
