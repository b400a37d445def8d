"""Re-ranking the word-ranked hits (search.py) in Python, so both databases agree: every
query concept first, identical texts collapsed (`copies`), and a newer hit that corrects
an older one on the same subject placed above it (`superseded_by`)."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from itertools import chain

from .search import HitCopy, SearchHit
from .words import MAX_TOKEN_CHARS, _normalise, _stem, index_tokens

CANDIDATE_FLOOR = 20  # re-ranking looks at this many word-ranked hits at least ...
CANDIDATE_FACTOR = 1  # ... or limit times this, up to MAX_CANDIDATES (more costs Postgres most)
MAX_CANDIDATES = 400
COVERAGE_SCAN_CHARS = 20_000  # what a candidate's subject is read from (its start)

# Words and phrases with which a message corrects or updates an earlier one. Latin ones
# are matched as whole words of the normalised text (casefolded, no diacritics); CJK ones
# as substrings.
CORRECTION_CUES = (
    "actually", "no longer", "anymore", "any more", "not any more", "changed",
    "switched", "moved", "updated", "correction",
    "corrected", "instead", "raised", "increased", "went up", "went down", "dropped",
    "lowered", "reduced", "rescheduled", "postponed", "replaced", "sold", "from now on",
    "slipped", "delayed", "pushed back", "brought forward", "cancelled", "canceled",
    "turns out", "inzwischen", "mittlerweile", "nicht mehr", "korrektur",
    "geandert", "anderung", "gewechselt", "verschoben", "stattdessen", "erhoht",
    "en fait", "desormais", "ne plus", "n'est plus", "changement",
    "augmente", "demenage", "au lieu", "mis a jour", "en realidad", "ya no",
    "cambio", "cambiado", "movio", "actualizado", "correccion", "subio", "en vez",
)
CJK_CORRECTION_CUES = ("现在", "更正", "改成", "改为", "变成", "涨到", "换成", "不再", "其实",
                       "変更", "訂正", "今は", "実は", "になりました", "に変わ")
# "Now" and its equivalents: a cue only in a clause that states something ("is now",
# "it's now on 5 July", "ahora es"), not in "deploy now" or "running the probe now".
WEAK_CUES = frozenset({"now", "jetzt", "nun", "maintenant", "ahora"})
_STATEMENT_WORDS = frozenset(
    "is are am s m re ist sind est sont es son esta estan".split())
_CUE_WORDS = frozenset(c for c in CORRECTION_CUES if " " not in c and "'" not in c)
_CJK_CUE = re.compile("|".join(CJK_CORRECTION_CUES))
_PLAIN_WORD = re.compile(r"[^\W_]+")
# Each phrase cue spaced as a clause's words are joined, with its words: a clause lacking
# one of them cannot hold it, and is not searched for it.
_CUE_PHRASES = tuple((" " + " ".join(words) + " ", frozenset(words)) for c in CORRECTION_CUES
                     if " " in c or "'" in c for words in [_PLAIN_WORD.findall(c)])
_HAS_DIGIT = re.compile(r"\d")


def _cue_in(clause: str) -> bool:
    """Whether a normalised clause holds a correction cue (a weak one only in a statement)."""
    words = _PLAIN_WORD.findall(clause)
    present = set(words)
    if present & _CUE_WORDS or (not clause.isascii() and _CJK_CUE.search(clause)):
        return True
    phrases = [p for p, needs in _CUE_PHRASES if needs <= present] if len(words) > 1 else ()
    if phrases:
        spaced = " " + " ".join(words) + " "
        if any(p in spaced for p in phrases):
            return True
    return bool(present & WEAK_CUES) and bool(
        present & _STATEMENT_WORDS or _HAS_DIGIT.search(clause))


# Text between these is one clause: a cue corrects what its own clause says.
_CLAUSE = re.compile(r"[.;!?\n\u3002\uff01\uff1f\uff1b]+(?:\s|$)|[:\uff1a](?:\s|$)|[\u3002\uff1f\uff01]")
# A short lead-in ending in a colon ("Update:", "Korrektur:") marks the whole message.
LEAD_IN_CHARS = 24  # a lead-in is looked for here
LEAD_IN_CUES = frozenset({"update", "updated", "correction", "korrektur", "anderung", "cambio",
                          "correccion", "changement", "mise a jour", "更正", "訂正", "変更"})


# Every Latin cue holds one of these words: a text holding none is no correction.
_CUE_KEYS = frozenset(max(_PLAIN_WORD.findall(c), key=len)
                      for c in (*CORRECTION_CUES, *LEAD_IN_CUES) if c.isascii()) | WEAK_CUES


# An ASCII text can hold a cue (corrected_terms) only if its words include one of these,
# or all the words of a phrase cue or of a lead-in of several words.
# (As bytes: _ascii_words gives bytes.)
_CUE_WORD_SET = frozenset(w.encode() for w in (
    *_CUE_WORDS, *WEAK_CUES, *(c for c in LEAD_IN_CUES if " " not in c)) if w.isascii())
_CUE_WORD_GROUPS = tuple(frozenset(w.encode() for w in group) for group in (
    *(needs for _, needs in _CUE_PHRASES),
    *(c.split() for c in LEAD_IN_CUES if c.isascii() and " " in c)))
_CUE_GROUP_KEYS = frozenset(max(group, key=len) for group in _CUE_WORD_GROUPS)  # one each


def _cue_free(words: set[bytes]) -> bool:
    """True when an ASCII text whose lower-cased words are `words` surely holds no cue:
    corrected_terms would find nothing in it."""
    if not words.isdisjoint(_CUE_WORD_SET):
        return False
    return words.isdisjoint(_CUE_GROUP_KEYS) or not any(g <= words for g in _CUE_WORD_GROUPS)


def _may_correct(text: str) -> bool:
    """False when `text` surely holds no correction cue (a quick first test)."""
    text = text[:COVERAGE_SCAN_CHARS]
    if text.isascii():
        return not _CUE_KEYS.isdisjoint(_PLAIN_WORD.findall(text.lower()))
    text = _normalise(text)
    return not _CUE_KEYS.isdisjoint(_PLAIN_WORD.findall(text)) or bool(_CJK_CUE.search(text))


def corrected_terms(text: str, terms: frozenset[str]) -> frozenset[str]:
    """The `terms` that `text` says something new about: those in a clause holding a
    correction cue (CORRECTION_CUES: "actually", "no longer", "switched", ...; or WEAK_CUES
    in a statement), or all of them after a lead-in such as "Update:". Empty: not a
    correction."""
    text = _normalise(text[:COVERAGE_SCAN_CHARS])
    lead_in = _CLAUSE.split(text[:LEAD_IN_CHARS], maxsplit=1)
    if len(lead_in) > 1 and lead_in[0].strip() in LEAD_IN_CUES:
        return matched_terms(text, terms)
    if not _cue_in(text):  # the common case, in one pass
        return frozenset()
    clauses = _CLAUSE.split(text)
    found: set[str] = set()
    for clause in clauses:
        if _cue_in(clause):
            found |= matched_terms(clause, terms)
    return frozenset(found)


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


# Every byte that is not an ASCII letter or digit, as a space: bytes.split then finds an
# ASCII text's words (what _PLAIN_WORD finds), in C; as bytes, a third cheaper than str.
_ASCII_SPACES = bytes(c if chr(c).isascii() and chr(c).isalnum() else 32 for c in range(256))
# Word -> its stem, for the words of candidates: re-ranking reads every candidate's words,
# and a dictionary maps a set of them in C where a call per word costs ten times more.
# Replaced, never cleared, when full: a thread still reading the old one keeps it whole.
_STEMS: dict[bytes, str] = {}
MAX_STEMS = 50_000  # as many as words._stem's own cache


def _ascii_words(text: str) -> set[bytes]:
    """The distinct words of an ASCII text, lower-cased."""
    return set(text.encode().translate(_ASCII_SPACES).lower().split())


def _terms_among(words: set[bytes], terms: frozenset[str]) -> frozenset[str]:
    """The `terms` among the stems of lower-cased ASCII words."""
    global _STEMS
    stems = _STEMS
    new = words.difference(stems)
    if new:
        if len(stems) > MAX_STEMS:
            stems = _STEMS = {}
            new = words
        for w in new:
            stems[w] = _stem(w[:MAX_TOKEN_CHARS].decode())
    return terms.intersection(map(stems.__getitem__, words))


def matched_terms(text: str, terms: frozenset[str]) -> frozenset[str]:
    """The `terms` the index files `text` under (read from its first COVERAGE_SCAN_CHARS)."""
    text = text[:COVERAGE_SCAN_CHARS]
    if text.isascii():
        return _terms_among(_ascii_words(text), terms)
    return frozenset(index_tokens(text)) & terms


def _read(text: str, terms: frozenset[str]) -> tuple[frozenset[str], bool]:
    """matched_terms(text, terms) and _may_correct(text), an ASCII text's words read once."""
    text = text[:COVERAGE_SCAN_CHARS]
    if not text.isascii():
        return matched_terms(text, terms), _may_correct(text)
    words = _ascii_words(text)
    return _terms_among(words, terms), not _cue_free(words)


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
    covered = []
    cued = []
    for hit in hits:  # per candidate: mapped in C, where a loop over the concepts is not
        found, cue = _read(hit.content, terms)
        covered.append(frozenset(chain.from_iterable(map(concepts_of.__getitem__, found))))
        cued.append(cue)
    order = list(range(len(hits)))
    if any(len(c) > 1 for c in concepts):  # variants: the database's all-terms tier is off
        everything = frozenset(range(len(concepts)))
        order.sort(key=lambda i: covered[i] != everything)

    # Collapse identical texts into the newest copy.
    keys = [" ".join(hit.content.split()) for hit in hits]
    groups: dict[str, list[int]] = {}
    for i in order:
        groups.setdefault(keys[i], []).append(i)
    kept: list[tuple[int, int]] = []  # (index of the shown copy, copies)
    copies_of: dict[int, list[int]] = {}  # the shown copy -> its group, best-ranked first
    placed = {i: p for p, i in enumerate(order)}
    for i in order:
        group = groups[keys[i]]
        if group[0] != i:
            continue
        newest = max(group, key=lambda j: (hits[j].created_at, -placed[j]))
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
            new_terms = corrected_terms(hits[i].content, terms)
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
    maybe = [i for i, _ in kept if mask[i] and cued[i]]
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
    for rank, (i, copies) in enumerate(result[:limit], start=1):
        h, newer = hits[i], superseded.get(i)
        # The others stay reachable: a fork's copy must not hide its original's session.
        others = tuple(HitCopy(hits[j].session_id, hits[j].id) for j in copies_of[i] if j != i)
        out.append(SearchHit(h.id, h.session_id, h.role, h.content, h.created_at, rank,
                             h.score, h.truncated, None if newer is None else hits[newer].id,
                             copies, h._terms, h._text, h.matched, other_copies=others))
    return out


