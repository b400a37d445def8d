"""Re-ranking the word-ranked hits (search.py) in Python, so both databases agree: every
query concept first, identical texts collapsed (`copies`), and a newer hit that corrects
an older one on the same subject placed above it (`superseded_by`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from itertools import chain

from .candidate_text import (  # re-exported: the names re-ranking's readers have used
    CORRECTION_CUES,
    COVERAGE_SCAN_CHARS,
    _may_correct,
    _read,
    corrected_terms,
    facts_of,
    matched_terms,
)
from .search import HitCopy, SearchHit

__all__ = ["COVERAGE_SCAN_CHARS", "CORRECTION_CUES", "MAX_CANDIDATES", "_may_correct", "_read",
           "candidate_window", "corrected_terms", "matched_terms", "ranked", "rerank"]

CANDIDATE_FLOOR = 20  # re-ranking looks at this many word-ranked hits at least ...
CANDIDATE_FACTOR = 1  # ... or limit times this, up to MAX_CANDIDATES (more costs Postgres most)
MAX_CANDIDATES = 400


def ranked(fetch: Callable[[int], list[SearchHit]], concepts: Sequence[tuple[str, ...]],
           limit: int) -> list[SearchHit]:
    """The database's word-ranked hits (`fetch(window)`), re-ranked. One fetch of
    candidate_window(limit) as a rule; when collapsing identical texts leaves fewer than
    `limit` while the database had more, one more with a window four times as wide."""
    window = candidate_window(limit)
    hits = fetch(window)
    out = rerank(hits, concepts, limit)
    if len(out) < limit and len(hits) == window < MAX_CANDIDATES:
        out = rerank(fetch(min(MAX_CANDIDATES, window * 4)), concepts, limit)
    return out


def candidate_window(limit: int) -> int:
    """How many word-ranked hits to fetch so re-ranking and collapsing can fill `limit`."""
    return min(MAX_CANDIDATES, max(CANDIDATE_FLOOR, limit * CANDIDATE_FACTOR))


_BIT = (1).__lshift__  # concept n -> its bit in a mask


def sum_masks(masks: Iterable[int]) -> int:
    """The union of bit masks."""
    out = 0
    for m in masks:
        out |= m
    return out


def rerank(hits: Sequence[SearchHit], concepts: Sequence[tuple[str, ...]], limit: int
           ) -> list[SearchHit]:
    """The word-ranked candidates (best first, as the database ranked them) re-ranked for
    an agent, then cut to `limit` and numbered. A pure function of the candidates' order,
    texts and dates, so both databases give the same answer.

    1. Hits holding every concept of the query first (a concept is a word with its stem
       variants: the database only knows terms), otherwise the database's order.
    2. Identical texts (whitespace aside) collapse into the newest copy, at the place of
       the best-ranked one; `copies` counts them.
    3. Supersession: a newer hit on the same subject as an older one (they share two query
       concepts, counting those of the newer hit's session, or the query's rarest among
       the candidates) that corrects what it says about one the older holds
       (corrected_terms) marks the older one `superseded_by` it and moves just above it.
    """
    terms = frozenset(t for c in concepts for t in c)
    concepts_of: dict[str, list[int]] = {}  # term -> the concepts holding it
    for n, c in enumerate(concepts):
        for t in c:
            concepts_of.setdefault(t, []).append(n)
    # What each candidate's text says whatever the query, read once per text (facts_of).
    facts = [facts_of(hit.session_id, hit.id, hit.content) for hit in hits]
    covered = [frozenset(chain.from_iterable(map(concepts_of.__getitem__, f.stems & terms)))
               for f in facts]  # per candidate: mapped in C, where a loop over concepts is not
    order = list(range(len(hits)))
    # The database's all-terms tier is off with variants, and lost in an order fused with
    # search by meaning (hybrid.py: a hit that meaning found or moved).
    if any(len(c) > 1 for c in concepts) or any(h.matched != "words" for h in hits):
        everything = frozenset(range(len(concepts)))
        order.sort(key=lambda i: covered[i] != everything)

    # Collapse identical texts into the newest copy.
    keys: list[object] = [f.same for f in facts]  # the hash of the evened-out text ...
    if len(set(keys)) < len(keys):  # ... and the text itself where two hashes are alike
        alike = {k for k, n in Counter(keys).items() if n > 1}
        keys = [" ".join(h.content.split()) if k in alike else k
                for h, k in zip(hits, keys, strict=True)]
    groups: dict[object, list[int]] = {}
    for i in order:
        groups.setdefault(keys[i], []).append(i)
    kept: list[tuple[int, int]] = []  # (index of the shown copy, copies)
    copies_of: dict[int, list[int]] = {}  # the shown copy -> its group, best-ranked first
    placed = {i: p for p, i in enumerate(order)}
    for i in order:
        group = groups[keys[i]]
        if group[0] != i:
            continue
        newest = i if len(group) == 1 else max(
            group, key=lambda j: (hits[j].created_at, -placed[j]))
        kept.append((newest, len(group)))
        copies_of[newest] = group

    # Supersession: corrections climb above what they correct. Concept sets as bit masks.
    mask = [sum(map(_BIT, cov)) for cov in covered]
    held = Counter(chain.from_iterable(covered[i] for i, _ in kept))
    df = [held[c] for c in range(len(concepts))]
    least = min((n for n in df if n), default=0)
    rarest = sum(1 << c for c, n in enumerate(df) if n and n == least)
    said: dict[int, int] = {}  # hit -> the concepts it says something new about (lazily)

    def fixed(i: int) -> int:
        if i not in said:
            new_terms = facts[i].said(hits[i].content) & terms
            said[i] = sum(1 << c for c in covered[i] if new_terms.intersection(concepts[c]))
        return said[i]

    # The candidates of each session: "Sandra is leading it now" is about Bluefin when its
    # session spoke of Bluefin since the statement it corrects.
    by_session: dict[str, list[int]] = {}
    for i, _n in kept:
        by_session.setdefault(hits[i].session_id, []).append(i)

    def context(new: int, old: int) -> int:
        since = hits[old].created_at
        return sum_masks(mask[j] for j in by_session[hits[new].session_id]
                         if hits[j].created_at > since)
    # Hits that may read as corrections: a cue's key word somewhere (a quick test).
    maybe = [i for i, _ in kept if mask[i] and facts[i].cue]
    superseded: dict[int, int] = {}
    position = {i: p for p, (i, _) in enumerate(kept)}
    for old, _n in kept[:limit] if maybe else ():  # only shown hits can be superseded
        best: int | None = None
        for new in maybe:
            # Same subject: two query concepts in common (the newer hit's own or its
            # session's), or the query's rarest; newer; and its correction is about a
            # concept the older hit holds.
            direct = mask[new] & mask[old]
            if (not direct or hits[new].created_at <= hits[old].created_at
                    or not direct & fixed(new)):
                continue
            shared = direct if direct.bit_count() >= 2 else context(new, old) & mask[old]
            if shared.bit_count() < 2 and not shared & rarest:
                continue
            if best is None or (hits[new].created_at, -position[new]) > (
                    hits[best].created_at, -position[best]):
                best = new
        if best is not None:
            superseded[old] = best
    result = list(kept)
    # Each superseding hit moves above the best-placed hit it supersedes, once, in the order
    # of the hits it supersedes (so chains of corrections end newest first).
    moved: set[int] = set()
    for old, _n in kept:
        newer = superseded.get(old)
        if newer is None or newer in moved:
            continue
        at = next(p for p, (i, _) in enumerate(result) if i == old)
        now = next(p for p, (i, _) in enumerate(result) if i == newer)
        if now > at:
            result.insert(at, result.pop(now))
        moved.add(newer)

    out = []
    words = tuple(t for c in concepts for t in c)  # the query's terms: for the snippets
    for rank, (i, copies) in enumerate(result[:limit], start=1):
        h, newer = hits[i], superseded.get(i)
        # The others stay reachable: a fork's copy must not hide its original's session.
        others = tuple(HitCopy(hits[j].session_id, hits[j].id) for j in copies_of[i] if j != i)
        out.append(SearchHit(h.id, h.session_id, h.role, h.content, h.created_at, rank,
                             h.score, h.truncated, None if newer is None else hits[newer].id,
                             copies, words, h._text, h.matched, other_copies=others))
    return out


