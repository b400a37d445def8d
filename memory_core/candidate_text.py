"""What re-ranking (rerank.py) reads from a candidate's text: the stems the index files it
under, whether it may correct an earlier message (a cue's key word), the stems of what it
corrects, and its text with whitespace evened out (to collapse copies). None of it depends
on the query, so it is worked out once per message text and kept (facts_of): a search reads
twenty candidates or more, and the same messages are candidates of search after search.
"""

from __future__ import annotations

import re

from .words import MAX_TOKEN_CHARS, _normalise, _stem, index_tokens

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


def corrected_stems(text: str) -> frozenset[str]:
    """The stems of what `text` says something new about: those of each clause holding a
    correction cue (CORRECTION_CUES: "actually", "no longer", "switched", ...; or WEAK_CUES
    in a statement), or of the whole text after a lead-in such as "Update:". Empty: not a
    correction."""
    text = _normalise(text[:COVERAGE_SCAN_CHARS])
    lead_in = _CLAUSE.split(text[:LEAD_IN_CHARS], maxsplit=1)
    if len(lead_in) > 1 and lead_in[0].strip() in LEAD_IN_CUES:
        return stems_of(text)
    if not _cue_in(text):  # the common case, in one pass
        return frozenset()
    found: set[str] = set()
    for clause in _CLAUSE.split(text):
        if _cue_in(clause):
            found |= stems_of(clause)
    return frozenset(found)


def corrected_terms(text: str, terms: frozenset[str]) -> frozenset[str]:
    """The `terms` that `text` says something new about (corrected_stems). Empty: not a
    correction."""
    return corrected_stems(text) & terms


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


def _stems(words: set[bytes]) -> frozenset[str]:
    """The stems of lower-cased ASCII words."""
    global _STEMS
    stems = _STEMS
    new = words.difference(stems)
    if new:
        if len(stems) > MAX_STEMS:
            stems = _STEMS = {}
            new = words
        for w in new:
            stems[w] = _stem(w[:MAX_TOKEN_CHARS].decode())
    return frozenset(map(stems.__getitem__, words))


def stems_of(text: str) -> frozenset[str]:
    """The terms the index files `text` under (read from its first COVERAGE_SCAN_CHARS)."""
    text = text[:COVERAGE_SCAN_CHARS]
    if text.isascii():
        return _stems(_ascii_words(text))
    return frozenset(index_tokens(text))


def matched_terms(text: str, terms: frozenset[str]) -> frozenset[str]:
    """The `terms` the index files `text` under (read from its first COVERAGE_SCAN_CHARS)."""
    return stems_of(text) & terms


def _reading(text: str) -> tuple[frozenset[str], bool]:
    """stems_of(text) and _may_correct(text), an ASCII text's words read once."""
    text = text[:COVERAGE_SCAN_CHARS]
    if not text.isascii():
        return frozenset(index_tokens(text)), _may_correct(text)
    words = _ascii_words(text)
    return _stems(words), not _cue_free(words)


def _read(text: str, terms: frozenset[str]) -> tuple[frozenset[str], bool]:
    """matched_terms(text, terms) and _may_correct(text), an ASCII text's words read once."""
    stems, cue = _reading(text)
    return stems & terms, cue


class Facts:
    """What re-ranking reads from one text: `stems` (stems_of), `cue` (whether it may hold
    a correction cue: _reading), `same` (the hash of its words joined by single spaces:
    texts alike but for whitespace share it) and, when first asked, said() (its
    corrected_stems)."""

    __slots__ = ("check", "stems", "cue", "same", "_said")

    def __init__(self, text: str, check: int) -> None:
        self.check = check  # hash(text): the text these facts are about
        self.stems, self.cue = _reading(text)
        self.same = hash(" ".join(text.split()))
        self._said: frozenset[str] | None = None

    def said(self, text: str) -> frozenset[str]:
        if self._said is None:
            self._said = corrected_stems(text)
        return self._said


# (session id, message id) -> the Facts of its text, checked against the text's hash (a
# message's text may change under its id: an edit, a test's fabricated hits). Bounded by
# entries and by the stems held; replaced, never cleared, when full (like _STEMS).
_FACTS: dict[tuple[str, str], Facts] = {}
_HELD = [0]  # stems held by _FACTS, roughly (threads may race on it: a bound, not a count)
MAX_FACTS = 4_096
MAX_HELD_STEMS = 400_000  # a few tens of MB at most, for texts of thousands of words


def facts_of(session_id: str, message_id: str, text: str) -> Facts:
    """The Facts of a message's text, worked out at most once while kept."""
    global _FACTS, _HELD
    cache = _FACTS
    check = hash(text)
    key = (session_id, message_id)
    found = cache.get(key)
    if found is not None and found.check == check:
        return found
    facts = Facts(text, check)
    if len(cache) >= MAX_FACTS or _HELD[0] > MAX_HELD_STEMS:
        cache = _FACTS = {}
        _HELD = [0]
    cache[key] = facts
    _HELD[0] += len(facts.stems)
    return facts

