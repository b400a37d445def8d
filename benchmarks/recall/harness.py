"""Loads the recall set into a fresh agent through the engine and scores agent-wide search.

Each question names the messages that answer it (`a`), or, for a corrected fact, the
current statement (`current`) and what it corrects (`stale`). Arbor's ranking is measured
beside the plain word ranking (BM25 from the database, all-terms matches first: the
ranking before re-ranking, with the query words split as before query hygiene) in the
same run, on the same data.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memory_core import SessionManager
from memory_core.stop_words import STOP_WORDS
from memory_core.words import _iter_words, _stem

HERE = Path(__file__).resolve().parent
K = 10  # hits asked for per question
TARGET_R5 = 90.0
TARGET_CORRECTED_FIRST = 50.0
MAX_CATEGORY_LOSS = 2.0  # points of R@5 or R@1 a category may lose to plain BM25
CATEGORIES = ("fact", "correction", "duplicate", "tool", "date", "split", "cjk", "wordform",
              "vocabulary")
# With search by meaning (an embedder configured): hybrid's targets; every category and
# language at least as good as Arbor's words alone. Without, the vocabulary category (the
# same thing said in other words) is left out of the word targets.
TARGET_HYBRID_R5 = 98.0
TARGET_VOCABULARY_R5 = 90.0
TARGET_HYBRID_CORRECTED_FIRST = 75.0
# `make bench` runs the set a second time beside this many real sentences that answer
# nothing (a larger agent, where meaning finds many near sentences): a line, no target.
GROWTH_DISTRACTORS = 3000
MEANING_ONLY = ("vocabulary",)


@dataclass
class Question:
    text: str
    category: str
    language: str
    answers: frozenset[str]
    stale: frozenset[str] = frozenset()


@dataclass
class Scores:
    """Per-question first relevant rank (None: not in the top K) and corrected-first flags."""

    ranks: list[int | None] = field(default_factory=list)
    first_is_current: list[bool] = field(default_factory=list)

    def recall(self, k: int) -> float:
        return 100.0 * sum(r is not None and r <= k for r in self.ranks) / max(len(self.ranks), 1)

    def mrr(self) -> float:
        return sum(1.0 / r for r in self.ranks if r) / max(len(self.ranks), 1)

    def corrected_first(self) -> float:
        flags = self.first_is_current
        return 100.0 * sum(flags) / max(len(flags), 1)


@dataclass
class Report:
    vendor: str
    questions: int
    sessions: int
    messages: int
    seconds: float
    arbor: dict[str, Scores]  # "all", each category, each language
    plain: dict[str, Scores]
    misses: list[str]
    words: dict[str, Scores] | None = None  # Arbor by words alone, when `arbor` is hybrid
    embedder: str = ""
    details: list[tuple[Question, list[str], list[str]]] = field(default_factory=list)
    # Questions nothing in the set answers (unrelated.json) that got a hit found by meaning
    # alone (false hits; with an embedder only), of how many.
    unrelated: tuple[int, int] | None = None

    def below_words(self) -> list[str]:
        """The categories and languages whose R@5 is below Arbor's words alone (hybrid)."""
        if self.words is None:
            return []
        return [f"{k} {self.arbor[k].recall(5):.1f} < {self.words[k].recall(5):.1f}"
                for k in below_words(self.arbor, self.words)]

    def growth_line(self, distractors: int) -> str:
        """One line on the set beside `distractors` sentences that answer nothing."""
        below = self.below_words()
        return (f"with {distractors:,} distractors ({self.messages:,} messages, "
                f"{self.seconds:.0f}s): R@5 {self.arbor['all'].recall(5):.1f}"
                + (f" (words alone {self.words['all'].recall(5):.1f})" if self.words else "")
                + (f"; below words alone (R@5): {', '.join(below)}" if below else
                   "; no category or language below words alone (R@5)"))

    def misses_text(self) -> str:
        """Questions whose top hit is not an answer: Arbor's and plain BM25's top 3."""
        lines = []
        for q, new, old in self.details:
            if new[:1] and _relevant(new[0], q.answers):
                continue
            lines.append(f"[{q.category}] {q.text}  answers={sorted(q.answers)}\n"
                         f"    arbor: {new[:3]}\n    bm25:  {old[:3]}")
        return "\n".join(lines)

    def table(self) -> str:
        hybrid = self.words is not None
        title = (f"Recall set on {self.vendor}: {self.questions} questions over "
                 f"{self.sessions} sessions ({self.messages} messages), agent-wide search, "
                 f"{self.seconds:.1f}s" + (f", by words and meaning ({self.embedder})"
                                           if hybrid else ", by words (no embedder)"))
        head = "hybrid/words/bm25" if hybrid else "arbor/bm25"
        width = 17 if hybrid else 11
        rows = [title, f"{'':<16}{'n':>4}  {'R@1':>{width}}  {'R@5':>{width}}  "
                f"{'MRR':>{width}}  {'fixed first':>{width}}",
                f"{'':<16}{'':>4}  " + "  ".join([f"{head:>{width}}"] * 4)]
        for key in ("all", *CATEGORIES, *sorted(k for k in self.arbor if k.startswith("lang:"))):
            if key not in self.arbor:
                continue
            sets = [self.arbor[key], *([self.words[key]] if self.words else []),
                    self.plain[key]]

            def cell(fn: Callable[[Scores], float], fmt: str,
                     sets: list[Scores] = sets) -> str:
                return f"{'/'.join(format(fn(x), fmt) for x in sets):>{width}}"

            fixed = (cell(Scores.corrected_first, "5.1f") if self.arbor[key].first_is_current
                     else f"{'':>{width}}")
            rows.append(f"{key:<16}{len(self.arbor[key].ranks):>4}  "
                        f"{cell(lambda x: x.recall(1), '5.1f')}  "
                        f"{cell(lambda x: x.recall(5), '5.1f')}  "
                        f"{cell(Scores.mrr, '5.3f')}  {fixed}")
        if self.unrelated is not None:
            rows.append(f"unrelated questions with a hit by meaning: {self.unrelated[0]} of "
                        f"{self.unrelated[1]}")
        if hybrid:
            rows.append(f"targets: hybrid R@5 >= {TARGET_HYBRID_R5:.0f}, vocabulary R@5 >= "
                        f"{TARGET_VOCABULARY_R5:.0f}, corrected fact first >= "
                        f"{TARGET_HYBRID_CORRECTED_FIRST:.0f}%, no category or language below "
                        f"words alone (R@5), none more than {MAX_CATEGORY_LOSS:.0f} points "
                        f"below plain BM25 (R@1, R@5)")
        else:
            rows.append(f"targets: R@5 >= {TARGET_R5:.0f} (the vocabulary category aside), "
                        f"corrected fact first >= {TARGET_CORRECTED_FIRST:.0f}%, no category "
                        f"more than {MAX_CATEGORY_LOSS:.0f} points below plain BM25 (R@1, R@5)")
        rows.append("recall targets: " + ("all met" if not self.misses else
                                          "MISSED: " + "; ".join(self.misses)))
        return "\n".join(rows)


def load_set(paths: Iterable[Path] | None = None) -> tuple[list[dict[str, Any]], list[Question]]:
    sessions: list[dict[str, Any]] = []
    questions: list[Question] = []
    for path in paths or sorted(HERE.glob("sessions_*.json")):
        for s in json.loads(path.read_text(encoding="utf-8"))["sessions"]:
            sessions.append(s)
            for q in s["questions"]:
                answers = q.get("current") or q["a"]
                questions.append(Question(q["q"], q["cat"], q.get("lang", s.get("lang", "en")),
                                          frozenset(answers), frozenset(q.get("stale", ()))))
    return sessions, questions


def _messages(entries: Sequence[Any]) -> list[dict[str, Any]]:
    """The set's compact entries as engine messages: [id, role, text(, copies)] (copies get
    ids id-dup1, id-dup2, ...), or a tool call with its result ({id, tool, input, output}:
    the result message gets the id, the call id-call)."""
    out: list[dict[str, Any]] = []
    for e in entries:
        if isinstance(e, dict):
            call = f"call_{e['id']}"
            out.append({"id": f"{e['id']}-call", "role": "assistant", "parts": [
                {"type": "tool-call", "toolCallId": call, "toolName": e["tool"],
                 "input": e["input"]}]})
            out.append({"id": e["id"], "role": "tool", "parts": [
                {"type": "tool-result", "toolCallId": call, "toolName": e["tool"],
                 "output": e["output"]}]})
            continue
        copies = e[3] if len(e) > 3 else 1
        for n in range(copies):
            mid = e[0] if copies == 1 else f"{e[0]}-dup{n + 1}"
            out.append({"id": mid, "role": e[1], "content": e[2]})
    return out


def load(manager: SessionManager, sessions: Sequence[dict[str, Any]]) -> int:
    """Append every session in order (so later sessions are newer); messages appended."""
    count = 0
    for s in sessions:
        session = manager.get_session(manager.create(s["name"]).id)
        messages = _messages(s["messages"])
        session.append_messages(messages)
        count += len(messages)
    return count


def _relevant(hit_id: str, ids: frozenset[str]) -> bool:
    return hit_id in ids or hit_id.split("-dup")[0] in ids


def plain_terms(query: str) -> list[str]:
    """Query words as Arbor split them before query hygiene: every word but English stop
    words, stemmed (contraction fragments included)."""
    terms: list[str] = []
    stopped: list[str] = []
    for word, spaceless in _iter_words(query):
        bucket = stopped if not spaceless and word in STOP_WORDS else terms
        grams = [word[i:i + 2] for i in range(max(len(word) - 1, 1))] if spaceless else [
            _stem(word[:64])]
        bucket.extend(g for g in grams if g not in bucket)
    return (terms or stopped)[:64]


def evaluate(manager: SessionManager, questions: Sequence[Question],
             details: list[tuple[Question, list[str], list[str]]] | None = None,
             words: dict[str, Scores] | None = None,
             ) -> tuple[dict[str, Scores], dict[str, Scores]]:
    """Arbor's search and plain BM25 per question; `words`, when given, is filled with
    Arbor's search by words alone (the manager's embedder left out)."""
    arbor: dict[str, Scores] = {}
    plain: dict[str, Scores] = {}
    lexical = None
    if words is not None:
        lexical = SessionManager(manager.agent_id, manager.storage)
        lexical.config.embedder = None
    for q in questions:
        new = [h.id for h in manager.search(q.text, K)]
        terms = plain_terms(q.text)
        old = [h.id for h in manager.storage.search(
            agent_id=manager.agent_id, session_id=None, terms=terms, limit=K)] if terms else []
        if details is not None:
            details.append((q, new, old))
        runs = [(arbor, new), (plain, old)]
        if lexical is not None and words is not None:
            runs.append((words, [h.id for h in lexical.search(q.text, K)]))
        for scores, ids in runs:
            rank = next((i + 1 for i, h in enumerate(ids) if _relevant(h, q.answers)), None)
            keys = ["all", q.category, f"lang:{q.language}"]
            if q.category not in MEANING_ONLY:
                keys.append("words-set")
            for key in keys:
                s = scores.setdefault(key, Scores())
                s.ranks.append(rank)
                if q.stale:
                    s.first_is_current.append(bool(ids) and _relevant(ids[0], q.answers))
    return arbor, plain


def load_unrelated(path: Path = HERE / "unrelated.json") -> list[str]:
    return [q["q"] for q in json.loads(path.read_text(encoding="utf-8"))["questions"]]


def false_hits(manager: SessionManager, questions: Sequence[str]) -> int:
    """How many of `questions` (which nothing answers) get a hit found by meaning alone."""
    return sum(any(h.matched == "meaning" for h in manager.search(q, K)) for q in questions)


def _misses(arbor: dict[str, Scores], plain: dict[str, Scores],
            words: dict[str, Scores] | None = None) -> list[str]:
    misses = []
    overall = arbor.get("words-set", arbor["all"]) if words is None else arbor["all"]
    target = TARGET_R5 if words is None else TARGET_HYBRID_R5
    fixed_target = TARGET_CORRECTED_FIRST if words is None else TARGET_HYBRID_CORRECTED_FIRST
    if overall.recall(5) < target:
        misses.append(f"R@5 {overall.recall(5):.1f} < {target:.0f}")
    if arbor["all"].corrected_first() < fixed_target:
        misses.append(f"corrected fact first {arbor['all'].corrected_first():.1f}% < "
                      f"{fixed_target:.0f}%")
    if words is not None and "vocabulary" in arbor and (
            arbor["vocabulary"].recall(5) < TARGET_VOCABULARY_R5):
        misses.append(f"vocabulary R@5 {arbor['vocabulary'].recall(5):.1f} < "
                      f"{TARGET_VOCABULARY_R5:.0f}")
    for cat in CATEGORIES:
        if cat not in arbor or (words is None and cat in MEANING_ONLY):
            continue
        for k in (1, 5):
            loss = plain[cat].recall(k) - arbor[cat].recall(k)
            if loss > MAX_CATEGORY_LOSS:
                misses.append(f"{cat} R@{k} {arbor[cat].recall(k):.1f} is {loss:.1f} points "
                              f"below plain BM25")
    for key in sorted(below_words(arbor, words)) if words is not None else ():
        misses.append(f"{key} R@5 {arbor[key].recall(5):.1f} is below words alone "
                      f"({words[key].recall(5):.1f})")
    return misses


def below_words(arbor: dict[str, Scores], words: dict[str, Scores]) -> list[str]:
    """The categories and languages whose hybrid R@5 is below words alone's."""
    return [k for k in arbor if (k in CATEGORIES or k.startswith("lang:"))
            and arbor[k].recall(5) < words[k].recall(5)]


def run(progress: Callable[[str], None] = lambda _m: None, *,
        embedder: Any = None, distractors: int = 0) -> Report:
    """Load the set into a new agent of the current Django database and score it; with
    an `embedder`, embed it and score hybrid search beside words alone. `distractors`:
    as many real sentences that answer nothing (distractors.py) are loaded first, in
    sessions of their own, so the set's messages stay the newest."""
    from django.contrib.auth import get_user_model
    from django.db import connection

    from sessions_app.models import Agent

    started = time.perf_counter()
    sessions, questions = load_set()
    user, _ = get_user_model().objects.get_or_create(username="arbor-recall")
    manager = SessionManager.for_agent(Agent.objects.create(owner=user, name="recall set"))
    manager.config.embedder = (lambda: embedder)
    extra: list[int] = []  # the distractors' sessions, by their length
    if distractors:
        from .distractors import messages as distracting

        for n, batch in enumerate(distracting(distractors)):
            manager.get_session(manager.create(f"distractors {n}").id).append_messages(batch)
            extra.append(len(batch))
    progress(f"recall set: loading {len(sessions)} sessions")
    messages = load(manager, sessions) + sum(extra)
    words: dict[str, Scores] | None = None
    if embedder is not None:
        from sessions_app.semantic.embed import embed_all

        progress(f"recall set: embedding {messages} messages with {embedder.model}")
        embed_all(embedder, agent_id=manager.agent_id)
        words = {}
    progress(f"recall set: {len(questions)} questions")
    details: list[tuple[Question, list[str], list[str]]] = []
    arbor, plain = evaluate(manager, questions, details, words)
    unrelated = None
    if embedder is not None:
        others = load_unrelated()
        unrelated = (false_hits(manager, others), len(others))
    return Report(connection.vendor, len(questions), len(sessions) + len(extra), messages,
                  time.perf_counter() - started, arbor, plain, _misses(arbor, plain, words),
                  details=details, words=words, embedder=getattr(embedder, "model", ""),
                  unrelated=unrelated)
