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
    arbor, plain = report.arbor["all"], report.plain["all"]
    assert arbor.recall(5) >= 90 and arbor.corrected_first() >= 50
    assert arbor.corrected_first() > plain.corrected_first()
    assert arbor.mrr() >= plain.mrr()
    assert "fixed first" in report.table()
