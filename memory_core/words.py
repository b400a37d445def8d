"""Text to search words, the same way for documents and queries on every database.

Words are cased-folded, stripped of Latin diacritics and stemmed with one Snowball
English stemmer (PyStemmer). Scripts written without spaces (Chinese, Japanese,
Thai, Lao, Khmer, Myanmar) become overlapping character bigrams. User text is
always words: no character of it reaches a database as query syntax. Snippets
(snippets.py) and re-ranking (rerank.py) match words the way this module makes them.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from functools import lru_cache
from itertools import islice

import Stemmer

from .stop_words import function_bigram, stop_words_for

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

# Query words that are never terms: contraction and elision fragments ("what's",
# "they're", "l'appartement") and negated auxiliaries, which say nothing about a subject.
FRAGMENTS = frozenset("s re ll ve t d m l j n c qu don doesn didn isn aren wasn weren "
                      "haven hasn hadn wouldn shouldn couldn mustn needn".split())
# Forms a stemmer cannot join to their base word; both directions are searched.
IRREGULAR = {
    "ran": "run", "children": "child", "people": "person", "women": "woman", "men": "man",
    "went": "go", "gone": "go", "bought": "buy", "paid": "pay", "flew": "fly", "flown": "fly",
    "said": "say", "spent": "spend", "sold": "sell", "wrote": "write", "written": "write",
    "taught": "teach", "kept": "keep", "chose": "choose", "chosen": "choose", "gave": "give",
    "given": "give", "took": "take", "taken": "take", "came": "come", "began": "begin",
    "begun": "begin", "broke": "break", "broken": "break", "ate": "eat", "eaten": "eat",
    "drove": "drive", "driven": "drive", "thought": "think", "brought": "bring",
    "caught": "catch", "felt": "feel", "heard": "hear", "held": "hold", "sent": "send",
    "slept": "sleep", "spoke": "speak", "spoken": "speak", "stood": "stand", "won": "win",
}

_stemmer = Stemmer.Stemmer("english")


@lru_cache(maxsize=50_000)
def _stem(word: str) -> str:
    return str(_stemmer.stemWord(word))


# A document's words' stems by the word itself (cut to MAX_TOKEN_CHARS first), looked up
# by map(dict.get) over the words: a loop in C (through lru_cache's wrapper, a call per
# word, 8 of an import's 16 µs to find 90 words); emptied when it reaches STEMS_KEPT.
STEMS_KEPT = 50_000
_stems: dict[str, str] = {}


def _stems_of(words: list[str]) -> list[str]:
    tokens: list[str | None] = list(map(_stems.get, words))
    if not all(tokens):  # (words not seen yet: stemmed once, then kept)
        if len(_stems) >= STEMS_KEPT:
            _stems.clear()
        for i, token in enumerate(tokens):
            if token is None:
                tokens[i] = _stems[words[i]] = _stem(words[i][:MAX_TOKEN_CHARS])
    return tokens  # type: ignore[return-value]  # (no None left)


def _normalise(text: str) -> str:
    text = text.casefold()
    if not text.isascii():
        text = unicodedata.normalize("NFKD", text)
        text = unicodedata.normalize("NFC", _DIACRITICS.sub("", text))
    return text


def _iter_words(text: str, *, normal: bool = False) -> Iterator[tuple[str, bool]]:
    """(word, is_spaceless) in order of appearance; normal: the text is _normalise()d."""
    for match in _TOKEN.finditer(text if normal else _normalise(text)):
        spaceless = match.group(1)
        yield (spaceless, True) if spaceless else (match.group(0), False)


def _words(text: str) -> list[tuple[str, bool]]:
    return list(_iter_words(text))


def _bigrams(run: str) -> list[str]:
    if len(run) == 1:
        return [run]
    return [run[i : i + 2] for i in range(len(run) - 1)]


_ASCII_WORD = re.compile(r"[^\W_]+")  # _TOKEN's words where no spaceless script can occur
# In ASCII text those words are the runs of letters and digits: every other byte becomes a
# space and split() cuts there (a third of findall's time on a 600-character message).
_ASCII_GAPS = bytes(c if chr(c).isalnum() and c < 128 else 32 for c in range(256))


def index_tokens(text: str) -> list[str]:
    """Tokens to index for a document, in order, duplicates kept (term frequency)."""
    normal = _normalise(text)
    if normal.isascii():  # every append: no per-word matches (same tokens as _ASCII_WORD)
        words = normal.encode("ascii").translate(_ASCII_GAPS).decode("ascii").split()
        return _stems_of(words[:MAX_DOC_TOKENS])
    tokens: list[str] = []
    for word, spaceless in _iter_words(normal, normal=True):
        if spaceless:
            tokens.extend(_bigrams(word))
        else:
            tokens.append(_stem(word[:MAX_TOKEN_CHARS]))
        if len(tokens) >= MAX_DOC_TOKENS:
            return tokens[:MAX_DOC_TOKENS]
    return tokens


_IRREGULAR_STEMS: dict[str, set[str]] = {}
for _form, _base in IRREGULAR.items():
    _IRREGULAR_STEMS.setdefault(_stem(_base), set()).add(_stem(_form))
    _IRREGULAR_STEMS.setdefault(_stem(_form), set()).add(_stem(_base))


def stem_variants(word: str) -> tuple[str, ...]:
    """The stems one query word is searched under: its own first, then the forms Snowball
    English files apart although a reader sees one word: allergy/allergic ("allergi",
    "allerg"), delivery/deliver, organise/organize, analyse/analyze, and IRREGULAR."""
    word = word[:MAX_TOKEN_CHARS]
    stem = _stem(word)
    out = [stem]
    if len(stem) >= 6 and stem.endswith("i"):  # a final y: allergy -> allergi ~ allerg,
        out += [stem[:-1], _stem(stem[:-1])]  # delivery -> deliveri ~ deliver -> deliv
    if len(stem) >= 5 and word[len(stem):].startswith("ic") and word.startswith(stem):
        out.append(stem + "i")  # allergic -> allerg ~ allergi (allergy)
    if len(stem) >= 6 and stem[-2:] in ("is", "iz", "ys", "yz"):
        out.append(stem[:-1] + ("z" if stem[-1] == "s" else "s"))  # British/American
    out += sorted(_IRREGULAR_STEMS.get(stem, ()))
    return tuple(dict.fromkeys(out))


_APOSTROPHES = frozenset("'\u2019\u02bc`\u00b4")


def _elided(text: str, start: int, end: int) -> bool:
    """A word joined to its neighbour by an apostrophe (the s of what's, the l of
    l'appartement) or between two hyphens (the t of a-t-elle); alone, the same letters
    are words (vitamin D, plan B, T-cell)."""
    before = text[start - 1] if start > 0 else ""
    after = text[end] if end < len(text) else ""
    return before in _APOSTROPHES or after in _APOSTROPHES or before == after == "-"


def query_concepts(query: str) -> list[tuple[str, ...]]:
    """The words of a natural-language query as search concepts: each a tuple of stems
    (stem_variants) or one CJK bigram, in order, at most MAX_QUERY_TERMS terms in all.
    Function words (stop_words.py: QUERY_STOP_WORDS, and the false friends of the
    language the query reads as; Chinese and Japanese function bigrams) are dropped
    unless nothing else is left; FRAGMENTS
    never count when elided (what's, we'll, l'appartement, a-t-elle), though a lone
    letter does (vitamin D). Tokenising stops once enough are found, so any length is
    cheap."""
    if not isinstance(query, str):
        return []
    if len(query) <= MAX_CACHED_QUERY_CHARS:
        return list(_cached_concepts(query))
    return _concepts(query)


MAX_CACHED_QUERY_CHARS = 500  # a question asked again (an agent's search, a page reload)
LANGUAGE_WORDS = MAX_QUERY_TERMS  # the words of a query that say which language it reads as


@lru_cache(maxsize=1_024)
def _cached_concepts(query: str) -> tuple[tuple[str, ...], ...]:
    return tuple(_concepts(query))


def _concepts(query: str) -> list[tuple[str, ...]]:
    concepts: list[tuple[str, ...]] = []
    stopped: list[tuple[str, ...]] = []  # used only when the query has nothing else
    seen: set[str] = set()
    seen_stop: set[str] = set()
    count = 0
    normal = _normalise(query[:MAX_QUERY_SCAN_CHARS])
    stops = stop_words_for(islice((m.group(0) for m in _TOKEN.finditer(normal)
                                   if m.group(1) is None), LANGUAGE_WORDS))

    def stop(term: str) -> None:
        if len(stopped) < MAX_QUERY_TERMS and term not in seen_stop:
            seen_stop.add(term)
            stopped.append((term,))

    for match in _TOKEN.finditer(normal):
        spaceless = match.group(1) is not None
        word = match.group(0)
        if not spaceless and word in FRAGMENTS and _elided(normal, match.start(), match.end()):
            continue
        if not spaceless and word in stops:
            stop(_stem(word))
            continue
        for group in [(g,) for g in _bigrams(word)] if spaceless else [stem_variants(word)]:
            if spaceless and function_bigram(group[0]):
                stop(group[0])
                continue
            fresh = tuple(t for t in group if t not in seen)
            if not fresh or group[0] in seen:
                continue
            fresh = fresh[: MAX_QUERY_TERMS - count]
            if fresh:
                seen.update(fresh)
                concepts.append(fresh)
                count += len(fresh)
        if count >= MAX_QUERY_TERMS:
            break
    return concepts or stopped[:MAX_QUERY_TERMS]


def query_terms(query: str) -> list[str]:
    """The first MAX_QUERY_TERMS distinct search terms of a natural-language query: the
    stems of query_concepts(), in order. A query made only of stop words keeps them, so
    "to be or not to be" still finds the line. An empty result means: no search."""
    return [t for concept in query_concepts(query) for t in concept][:MAX_QUERY_TERMS]


@lru_cache(maxsize=256)
def _candidates(terms: frozenset[str]) -> re.Pattern[str] | None:
    """ASCII words that may stem to one of `terms`: Snowball English never changes a word's
    first two letters, so only words starting like a term need stemming."""
    starts = sorted({t[:2] for t in terms if t.isascii()})
    if not starts:
        return None
    return re.compile("(?<![^\\W_])(?:" + "|".join(map(re.escape, starts)) + ")[^\\W_]*", re.I)
