"""Hybrid search: the database's word-ranked candidates (BM25) and the nearest by meaning
(an Embedder's vectors), fused by reciprocal rank, then re-ranked as words alone are
(rerank.py: hits holding every query word first, corrections above what they correct,
identical texts collapsed).

Reciprocal-rank fusion scores a candidate 1/(RRF_K + rank) in each list that holds it, so
neither list's scale matters (BM25 is unbounded, cosine is not). A rank counts distinct
texts: copies of one text share its rank (re-ranking collapses them anyway), so a note
saved six times does not push the next answer six places down. A candidate the words found
gets from meaning only what its rank stands above the end of the meaning list, halved
(BOTH_WEIGHT): a word hit meaning did not reach (in a large agent, most of them) is not
made to lose to every word hit meaning did reach, so meaning confirms the words' order
more than it overturns it. A candidate found by meaning alone must come within the
embedder's `margin` of the best cosine (DENSE_MARGIN when it has none) and reach its
`floor` (an absolute cosine); models spread their cosines differently, so both are the
model's own:
the nearest messages of an agent are near in some sense whatever the question, and only
those about as near as the best, and near enough, are worth showing beside the word
matches (a question nothing answers then gets none). Nor is a message that ends by asking
(asks(): "How many people are coming?"): a question is near a question by its form, so
an agent's own questions were the nearest messages to many questions they do not answer.

When the embedder fails (unreachable, slow, wrong size) the search answers by words and
says so: SearchResults.semantic == "unavailable".
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Collection, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from typing import Any, Literal

from .candidate_text import facts_of
from .embedding import Embedder, EmbedderUnavailable, Vector, WrongDimension
from .rerank import MAX_CANDIDATES, candidate_window, rerank
from .search import SearchHit
from .storage import DenseScan

# Measured on the recall set (benchmarks/recall): k 10 to 100 tie; weighting meaning 0.7,
# 1.2 or 1.5 times loses facts; a margin of 0.1 beats 0.05 and 0.2; meaning's rank counting
# half for what the words found (0.4 and 0.5 tie) instead of fully put the split facts
# and the corrected facts back above 90% and 75%, 0.25 lost R@1 and 0 duplicates.
# With 3,000 distractors (--distractors 3000) a full share let sentences holding only a
# generic word of the question ("user", "number") pass the words' answers (an earlier
# draw: R@5 90.0; facts, tools, duplicates below words alone); the share above the list's
# end and ranks by distinct text give the same figures as before on the plain set and
# 92.1 there (facts and duplicates still a question or two below words alone; README).
# Capping word hits by the query concepts they hold (or the rarest) lost corrected-first
# and tool R@1 on the plain set; BOTH_WEIGHT 0.3 or 0.4 lost duplicates.
# Issue 28's query side: complete function-word lists per language (stop_words.py) and
# leaving out messages that ask (asks()) took hybrid R@5 95.8 -> 96.2 and vocabulary
# 69.6 -> 73.9 with unrelated questions' hits by meaning 3 -> 2 of 21 (USE); R@1 stays
# 72.1, corrected-first 76.7 -> 74.4 (the German question whose answer shared only "die"
# with it). With 3,000 distractors R@5 stays 92.1 (hits by meaning 8 -> 7), facts and
# duplicates a question or two below words alone as before. Measured and left out: a margin
# of 0.25 (vocabulary +1: one Japanese question), or the floor also for what the words
# found (lost facts and duplicates on the plain set); meaning's share for a word hit
# weighted by the IDF (the database's counts) of the query concepts it holds (distractors
# level with words alone at a cut of 0.75 of the rarest concept's IDF, but the plain set
# lost 2 questions, tools and duplicates: in 292 messages IDF is noise), RRF_K 10, 20 or
# 120, a word hit climbing at most 2 to 8 places by meaning, "user" as a stop word (+0.8
# with distractors, nothing on the plain set), embedding only the question's content words
# (vocabulary 47.8).
# Later (USE+MiniLM): re-ranking puts the hits holding every query word first again
# (fusion's order is not the database's, whose all-terms tier had been lost: "Wer leitet
# Nordlicht?" answered by a message naming only the project), corrected-first 74.4 ->
# 76.7; and a reply to a message that asks is embedded after it (embedding.in_context),
# R@5 97.5 -> 98.3 (split facts and the newsletter's order); tool inputs and outputs
# embedded with their keys (messages.labelled), tool R@5 94.1 -> 100, R@5 98.8.
RRF_K = 60
DENSE_WEIGHT = 1.0
DENSE_MARGIN = 0.1
BOTH_WEIGHT = 0.5
Semantic = Literal["on", "off", "unavailable"]


QUERY_CACHE = 512  # questions' vectors kept (an agent asks the same things again)
_queries: OrderedDict[tuple[int, str, str], Vector] = OrderedDict()
_queries_lock = threading.Lock()
# The question is embedded on this pool while the database ranks its words: the model and
# the database both release the GIL, so on two cores the two costs overlap.
_pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="arbor-query-embed")


def embed_query(embedder: Embedder, query: str) -> Vector:
    """The question's vector, from the cache when it was asked lately."""
    key = (id(embedder), embedder.model, query)
    with _queries_lock:
        cached = _queries.get(key)
        if cached is not None:
            _queries.move_to_end(key)
            return cached
    vector = embedder.embed_query(query)
    with _queries_lock:
        _queries[key] = vector
        while len(_queries) > QUERY_CACHE:
            _queries.popitem(last=False)
    return vector


def forget_queries() -> None:
    """Empty the question cache (tests)."""
    with _queries_lock:
        _queries.clear()


class SearchResults(list[SearchHit]):
    """Search hits, with how search by meaning went: `semantic` "on", "off" (no embedder,
    or nothing to embed) or "unavailable" (the embedder failed: words only), and
    `pending`: the agent's messages still waiting for a vector (found by words only)."""

    __slots__ = ("semantic", "pending")

    def __init__(self, hits: Any = (), semantic: Semantic = "off", pending: int = 0) -> None:
        super().__init__(hits)
        self.semantic: Semantic = semantic
        self.pending = pending


Best = list[tuple[int, float]]  # (message key, cosine), best first: DenseScan.scan's


def fuse(lexical: Sequence[SearchHit], dense: Sequence[SearchHit], *,
         floor: float = 0.0, margin: float = DENSE_MARGIN) -> list[SearchHit]:
    """Both candidate lists as one, by reciprocal rank, each hit saying which list(s) held
    it (`matched`) and scored by its fused score. Dense hits below `floor` (cosine) or
    asking a question (asks()) are dropped when the words did not find them too (the
    words' finds are never dropped), as are those not within `margin` of the best."""
    end = RRF_K + len(dense) + 1  # just past the meaning list: a share of 0
    if dense:
        near = dense[0].score - margin
        lexical_ids = {(h.session_id, h.id) for h in lexical}
        dense = [h for h in dense if h.score >= near and (
            (h.session_id, h.id) in lexical_ids or (h.score >= floor and not asks(h.content)))]
    scores: dict[tuple[str, str], float] = {}
    first: dict[tuple[str, str], SearchHit] = {}
    found: dict[tuple[str, str], set[str]] = {}
    for kind, hits, weight in (("words", lexical, 1.0), ("meaning", dense, DENSE_WEIGHT)):
        for rank, hit in zip(_text_ranks(hits), hits, strict=True):
            key = (hit.session_id, hit.id)  # a fork's copy keeps its message's id
            share = weight / (RRF_K + rank)
            if kind == "meaning" and key in found:
                share = BOTH_WEIGHT * (share - weight / end)
            scores[key] = scores.get(key, 0.0) + share
            first.setdefault(key, hit)
            found.setdefault(key, set()).add(kind)
    order = sorted(scores, key=lambda i: -scores[i])  # stable: words first on a tie
    out = []
    for i in order:
        kinds = found[i]
        matched = "both" if len(kinds) == 2 else next(iter(kinds))
        out.append(replace(first[i], score=round(scores[i], 6), matched=matched))
    return out


QUESTION_MARKS = ("?", "\uff1f")  # and the full-width one of Chinese and Japanese


def asks(text: str) -> bool:
    """Whether a message ends by asking ("How many people are coming?"): found by meaning
    alone, it is near a question by its form, and it answers nothing."""
    return text.rstrip().endswith(QUESTION_MARKS)


def _text_ranks(hits: Sequence[SearchHit]) -> list[int]:
    """Each hit's rank counting distinct texts (whitespace aside, as re-ranking collapses
    them: its cached facts_of): copies share the first's."""
    first: dict[int, int] = {}
    return [first.setdefault(facts_of(h.session_id, h.id, h.content).same, len(first) + 1)
            for h in hits]


def _embed_and_scan(embedder: Embedder, query: str, found: DenseScan, window: int) -> Best:
    return found.scan(embed_query(embedder, query), limit=window)


def hybrid(
    *, query: str, concepts: Sequence[tuple[str, ...]], limit: int,
    words: Callable[[int], list[SearchHit]], scan: Callable[[], DenseScan] | None,
    hits_of: Callable[[Best], list[SearchHit]], embedder: Embedder | None,
    only: Collection[str] | None = None,
) -> SearchResults:
    """Re-ranked hits for `query`: `words(window)` fetches word-ranked candidates;
    `scan()` reads the vectors to compare the question with (with the pending count) and
    `hits_of` turns what their scan found into hits; `only`: keep the candidates with
    these ids (a branch's path) from wider fetches. The question is embedded and the
    vectors scanned on another thread while the words are ranked on this one (which alone
    speaks to the database): the model, numpy and the database all leave Python's lock,
    so on two cores the costs overlap."""
    terms = [t for c in concepts for t in c]
    state: dict[str, Any] = {"semantic": "off", "pending": 0}
    use_meaning = embedder is not None and scan is not None and bool(query.strip())

    def fetch(window: int) -> list[SearchHit]:
        wide = MAX_CANDIDATES if only is not None else window
        ahead: Future[Best] | None = None
        if use_meaning and state["semantic"] != "unavailable":
            assert scan is not None and embedder is not None
            found = scan()
            state["pending"], state["semantic"] = found.pending, "on"
            if found.size:
                ahead = _pool.submit(_embed_and_scan, embedder, query, found, wide)
        lexical = _kept(words(wide), only) if terms else []
        dense: list[SearchHit] = []
        if ahead is not None:
            try:
                dense = _kept(hits_of(ahead.result()), only)
            except (EmbedderUnavailable, WrongDimension):
                state["semantic"] = "unavailable"
        if not dense:
            return lexical[:window] if only is not None else lexical
        return fuse(lexical[:window], dense[:window],
                    floor=float(getattr(embedder, "floor", 0.0) or 0.0),
                    margin=float(getattr(embedder, "margin", DENSE_MARGIN)))

    window = candidate_window(limit)
    hits = fetch(window)
    out = rerank(hits, concepts, limit)
    if len(out) < limit and len(hits) >= window and window < MAX_CANDIDATES:
        out = rerank(fetch(min(MAX_CANDIDATES, window * 4)), concepts, limit)
    return SearchResults(out, state["semantic"], state["pending"])


def _kept(hits: list[SearchHit], only: Collection[str] | None) -> list[SearchHit]:
    return hits if only is None else [h for h in hits if h.id in only]


Scope = Literal["path", "session", "agent"]
SCOPES: tuple[Scope, ...] = ("path", "session", "agent")


def search_messages(
    storage: Any, embedder: Embedder | None, *, agent_id: str, query: str, limit: int,
    full: bool, session_id: str | None, exclude_session_id: str | None = None,
    only: Collection[str] | None = None,
) -> SearchResults:
    """Session.search and SessionManager.search: words and meaning, fused and re-ranked,
    shaped (shape_hits). `session_id` None: all the agent's sessions but the excluded."""
    from .search import shape_hits
    from .words import query_concepts

    concepts = query_concepts(query)
    terms = [t for c in concepts for t in c]

    def words(window: int) -> list[SearchHit]:
        hits: list[SearchHit] = storage.search(
            agent_id=agent_id, session_id=session_id, terms=terms, limit=window,
            exclude_session_id=exclude_session_id)
        return hits

    def scan() -> DenseScan:
        assert embedder is not None
        found: DenseScan = storage.dense_scan(
            agent_id=agent_id, model=embedder.model, session_id=session_id,
            exclude_session_id=exclude_session_id)
        return found

    def hits_of(best: Best) -> list[SearchHit]:
        found: list[SearchHit] = storage.dense_hits(best)
        return found

    results = hybrid(query=query, concepts=concepts, limit=limit, words=words,
                     scan=scan if embedder is not None else None, hits_of=hits_of,
                     embedder=embedder, only=only)
    return SearchResults(shape_hits(results, terms, full=full), results.semantic,
                         results.pending)
