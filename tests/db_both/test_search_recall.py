"""The recall set (benchmarks/recall/) meets its targets on the current database, and is
what it says it is: enough sessions and questions, every category and language, answers
that exist."""

from __future__ import annotations

from benchmarks.recall import harness


def test_the_set_is_well_formed():
    sessions, questions = harness.load_set()
    assert len(sessions) >= 40 and len(questions) >= 200
    ids = {m["id"] for s in sessions for m in harness._messages(s["messages"])}
    for q in questions:
        named = q.answers | q.stale
        assert named and all(any(harness._relevant(i, {n}) for i in ids) for n in named), q
        assert not q.answers & q.stale, q
    assert {q.category for q in questions} == set(harness.CATEGORIES)
    assert {q.language for q in questions} >= {"en", "de", "fr", "es", "zh", "ja"}
    assert sum(bool(q.stale) for q in questions) >= 30


def test_recall_targets_are_met_beside_plain_bm25(db):
    report = harness.run()
    assert report.misses == [], report.table()
    # Words alone (the suite runs without an embedder): the vocabulary category aside.
    arbor, plain = report.arbor["words-set"], report.plain["words-set"]
    assert arbor.recall(5) >= 90 and arbor.corrected_first() >= 50
    assert arbor.corrected_first() > plain.corrected_first()
    assert arbor.mrr() >= plain.mrr()
    assert "fixed first" in report.table()


def test_a_missed_target_is_reported_and_fails_the_run():
    def scores(ranks, first=()):
        return harness.Scores(list(ranks), list(first))

    good = {"all": scores([1] * 10, [True] * 2), "fact": scores([1] * 10)}
    assert harness._misses(good, good) == []
    worse = {"all": scores([1] * 8 + [None] * 2, [False] * 2), "fact": scores([2] * 10)}
    misses = harness._misses(worse, good)
    assert any(m.startswith("R@5 80.0") for m in misses)
    assert any(m.startswith("corrected fact first 0.0%") for m in misses)
    assert any(m.startswith("fact R@1 0.0 is 100.0 points below") for m in misses)
