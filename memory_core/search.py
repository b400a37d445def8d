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
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache
from typing import Any

import Stemmer

from .limits import MAX_SEARCH_LIMIT
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
_SPACE = re.compile(r"\s")

MAX_TOKEN_CHARS = 64  # longer "words" (hashes, base64) are cut: Postgres caps lexemes
MAX_DOC_TOKENS = 20_000  # a tsvector holds at most 1 MB
MAX_QUERY_TERMS = 64  # a longer query searches with its first 64 distinct terms
# Only this much of a query is read: 64 terms never need more, and a 1 MB query stays cheap.
MAX_QUERY_SCAN_CHARS = MAX_QUERY_TERMS * (MAX_TOKEN_CHARS + 1) * 8
MAX_HIT_CHARS = 2_000  # a hit's `content` beyond this is cut unless the full text is asked for
SNIPPET_CHARS = 300  # a snippet's length (about 30 words; marks and escapes not counted)
SNIPPET_LEAD_CHARS = 40  # text shown before the first match, for context
MAX_SNIPPET_ANCHORS = 1_000  # the best window is looked for among this many matches
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

# Query words that are never terms: contraction and elision fragments ("what's",
# "they're", "l'appartement") and negated auxiliaries, which say nothing about a subject.
FRAGMENTS = frozenset("s re ll ve t d m l j n c qu don doesn didn isn aren wasn weren "
                      "haven hasn hadn wouldn shouldn couldn mustn needn".split())
# Function words of the other languages the recall set covers, and words asking for the
# current state ("still", "now"): dropped from queries (unless nothing else is left), never
# from the index. Written casefolded, without diacritics, as _normalise leaves them.
QUERY_STOP_WORDS = STOP_WORDS | frozenset(
    """still current currently latest anymore
    der das den dem des ein eine einen einem einer und ist sind ich du er sie es wir ihr
    mein meine meinen meiner dein deine nicht mit von zu auf fur wie wo wer wann welche
    welcher welches noch schon jetzt habe haben im ins am aus bei nach uber aktuell derzeit
    le la les un une des du de et est sont je tu il elle nous vous ils elles mon ma mes ton
    ta tes sa ses ce cette ces qui que quoi quel quelle quels quelles ou au aux en dans pour
    par avec pas ne maintenant actuel actuelle actuellement encore desormais
    el los las una unos unas y es yo mi mis su sus cual cuando donde como del al con por
    para se lo le ahora esta este esto estan hay muy ya actual actualmente todavia aun""".split()
)
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


_ASCII_WORD = re.compile(r"[^\W_]+")  # _TOKEN's words where no spaceless script can occur


def index_tokens(text: str) -> list[str]:
    """Tokens to index for a document, in order, duplicates kept (term frequency)."""
    normal = _normalise(text)
    if normal.isascii():  # every append: one findall, no per-word matches (same tokens)
        return [_stem(w[:MAX_TOKEN_CHARS]) for w in _ASCII_WORD.findall(normal)[:MAX_DOC_TOKENS]]
    tokens: list[str] = []
    for word, spaceless in _words(text):
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


def query_concepts(query: str) -> list[tuple[str, ...]]:
    """The words of a natural-language query as search concepts: each a tuple of stems
    (stem_variants) or one CJK bigram, in order, at most MAX_QUERY_TERMS terms in all.
    Stop words (QUERY_STOP_WORDS) are dropped unless nothing else is left; FRAGMENTS
    (what's, we'll, l'appartement, c'est) never count. Tokenising stops once enough are
    found, so any length is cheap."""
    if not isinstance(query, str):
        return []
    concepts: list[tuple[str, ...]] = []
    stopped: list[tuple[str, ...]] = []  # used only when the query has nothing else
    seen: set[str] = set()
    seen_stop: set[str] = set()
    count = 0
    for word, spaceless in _iter_words(query[:MAX_QUERY_SCAN_CHARS]):
        if not spaceless and word in FRAGMENTS:
            continue
        is_stop = not spaceless and word in QUERY_STOP_WORDS
        if is_stop:
            if len(stopped) < MAX_QUERY_TERMS and _stem(word) not in seen_stop:
                seen_stop.add(_stem(word))
                stopped.append((_stem(word),))
            continue
        for group in [(g,) for g in _bigrams(word)] if spaceless else [stem_variants(word)]:
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


@lru_cache(maxsize=256)
def _candidates(terms: frozenset[str]) -> re.Pattern[str] | None:
    """ASCII words that may stem to one of `terms`: Snowball English never changes a word's
    first two letters, so only words starting like a term need stemming."""
    starts = sorted({t[:2] for t in terms if t.isascii()})
    if not starts:
        return None
    return re.compile("(?<![^\\W_])(?:" + "|".join(map(re.escape, starts)) + ")[^\\W_]*", re.I)


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


@dataclass(frozen=True, slots=True)
class SearchHit(Mappable):
    """One search result. `rank` is the 1-based position; `score` the word relevance
    (BM25); `snippet` the excerpt around the best match (see snippet()), made when first
    read so callers that never read it do not pay for it; `truncated` whether content was
    cut; `superseded_by` the id of a newer hit on the same subject that reads as a
    correction (see rerank()); `copies` how many hits had this very text (the newest is
    shown)."""

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
    _snippet: str | None = field(default=None, init=False, repr=False, compare=False)

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
        }


make_snippet = snippet  # the name SearchHit.snippet would shadow in the class body


def shape_hits(hits: Sequence[SearchHit], terms: Sequence[str], *, full: bool) -> list[SearchHit]:
    """Hits that make their snippet from `terms`; unless `full`, content cut to
    MAX_HIT_CHARS (`truncated`)."""
    shaped = []
    kept_terms = tuple(terms)
    for h in hits:  # the constructor: dataclasses.replace costs several times more
        cut = not full and len(h.content) > MAX_HIT_CHARS
        shaped.append(SearchHit(
            h.id, h.session_id, h.role, h.content[:MAX_HIT_CHARS] if cut else h.content,
            h.created_at, h.rank, h.score, cut, h.superseded_by, h.copies, kept_terms,
            h.content))
    return shaped


def clamp_limit(limit: Any, default: int) -> int:
    try:
        value = int(limit)
    except (TypeError, ValueError):
        return default
    return max(1, min(value, MAX_SEARCH_LIMIT))
