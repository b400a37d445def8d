"""Search by words and by meaning, fused: a hit found only by meaning says so and shows
its start; a failing embedder leaves words; scope=path recalls one branch."""

from __future__ import annotations

import pytest
from django.db import connection

from memory_core import InvalidInput
from sessions_app.semantic.embed import embed_all
from tests.conftest import assistant_msg, user_msg


def _fill(session, texts):
    return [session.append_message(user_msg(t)) for t in texts]


def test_a_question_finds_the_answer_by_meaning(manager, session, fake_embeddings):
    skoda, *_ = _fill(session, ["picked up the new Skoda yesterday",
                                "I could eat tiramisu every day",
                                "the meeting moved to Thursday"])
    embed_all(fake_embeddings)
    hits = manager.search("What car do I drive now?", 5)
    assert hits.semantic == "on" and hits.pending == 0
    assert hits[0].id == skoda.id
    assert hits[0].matched == "meaning"
    assert hits[0].snippet.startswith("picked up the new Skoda")
    assert hits[0].to_dict()["matched"] == "meaning"


def test_words_and_meaning_together_are_both(session, fake_embeddings):
    car, _ = _fill(session, ["my car is a Skoda", "the weather is fine"])
    embed_all(fake_embeddings)
    hits = session.search("car")
    assert (hits[0].id, hits[0].matched) == (car.id, "both")
    assert "<mark>car</mark>" in hits[0].snippet


def test_a_failing_embedder_falls_back_to_words(manager, session, fake_embeddings):
    car, _ = _fill(session, ["my car is a Skoda", "picked up the new Skoda yesterday"])
    embed_all(fake_embeddings)
    fake_embeddings.fail = True
    hits = manager.search("car")
    assert hits.semantic == "unavailable"
    assert [(h.id, h.matched) for h in hits] == [(car.id, "words")]


def test_off_is_words_only(manager, session):
    _fill(session, ["picked up the new Skoda yesterday"])
    hits = manager.search("What car do I drive now?")
    assert (list(hits), hits.semantic) == ([], "off")


def test_not_yet_embedded_messages_are_found_by_words_and_counted(manager, session,
                                                                   fake_embeddings):
    _fill(session, ["picked up the new Skoda yesterday"])
    embed_all(fake_embeddings)
    late = session.append_message(user_msg("the car needs new tyres"))
    hits = manager.search("car")
    assert hits.pending == 1
    assert late.id in [h.id for h in hits]


@pytest.mark.parametrize("query", ["", "   ", "\n\t"])
def test_blank_query_is_a_clean_empty_answer(manager, session, fake_embeddings, query):
    _fill(session, ["picked up the new Skoda yesterday"])
    embed_all(fake_embeddings)
    assert list(manager.search(query)) == []
    assert list(session.search(query, scope="path")) == []


def test_path_scope_recalls_only_the_branch(session, fake_embeddings):
    root = session.append_message(user_msg("which car should I buy?"))
    first = session.append_message(assistant_msg("buy the Skoda"), parent_id=root.id)
    second = session.append_message(assistant_msg("buy the car from Toyota"), parent_id=root.id)
    embed_all(fake_embeddings)
    on_first = session.search("car", scope="path", leaf_id=first.id)
    assert {h.id for h in on_first} <= {root.id, first.id} and first.id in {h.id for h in on_first}
    on_latest = session.search("car", scope="path")
    assert {h.id for h in on_latest} == {root.id, second.id}
    everywhere = session.search("car", scope="session")
    assert {root.id, first.id, second.id} <= {h.id for h in everywhere}


def test_agent_scope_from_a_session(manager, session, fake_embeddings):
    other = manager.get_session(manager.create("other").id)
    there = other.append_message(user_msg("the car is blue"))
    assert there.id in [h.id for h in session.search("car", scope="agent")]
    assert there.id not in [h.id for h in session.search("car")]


def test_bad_scope_and_leaf_are_refused(session):
    with pytest.raises(InvalidInput, match="scope"):
        session.search("car", scope="branch")
    leaf = session.append_message(user_msg("x"))
    with pytest.raises(InvalidInput, match="leaf_id"):
        session.search("car", leaf_id=leaf.id)


def test_the_semantic_benchmark_runs_end_to_end(db, fake_embeddings):
    from benchmarks import semantic

    lines = semantic.run(400, lambda _m: None)
    assert "one agent of 400 messages (fake-hash-64, 64 dimensions" in lines[0]
    assert "hybrid search p50" in lines[1] and lines[-1].startswith("  target: p50 <=")


def test_the_recall_harness_scores_hybrid_beside_words(db, fake_embeddings):
    from benchmarks.recall import harness

    report = harness.run(embedder=fake_embeddings)
    assert report.words is not None and report.embedder == "fake-hash-64"
    assert "hybrid/words/bm25" in report.table()
    assert report.arbor["vocabulary"].mrr() > report.words["vocabulary"].mrr()
    # Questions nothing in the set answers: how many got a (false) hit by meaning.
    assert report.unrelated is not None and report.unrelated[1] == len(harness.load_unrelated())
    assert f"unrelated questions with a hit by meaning: {report.unrelated[0]} of" in report.table()


def test_the_recall_harness_loads_distractors_beside_the_set(db, fake_embeddings):
    from benchmarks.recall import distractors, harness

    first = distractors.sentences(700)
    assert len(first) == len(set(first)) == 700 and first == distractors.sentences(700)
    plain = harness.run(embedder=fake_embeddings)
    wider = harness.run(embedder=fake_embeddings, distractors=700)
    assert (wider.messages, wider.sessions) == (plain.messages + 700, plain.sessions + 2)
    assert len(wider.arbor["all"].ranks) == len(plain.arbor["all"].ranks)


def test_a_question_nothing_answers_gets_no_hit_by_meaning(manager, session, fake_embeddings,
                                                            monkeypatch):
    """Below the embedder's floor a message found by meaning alone is no hit: the nearest
    messages of an agent are near in some sense whatever is asked."""
    skoda, *_ = _fill(session, ["picked up the new Skoda yesterday",
                                "the meeting moved to Thursday"])
    embed_all(fake_embeddings)
    assert [h.matched for h in manager.search("capital of Mongolia", 5)] == ["meaning"] * 2
    monkeypatch.setattr(fake_embeddings, "floor", 0.2, raising=False)
    hits = manager.search("capital of Mongolia", 5)
    assert (list(hits), hits.semantic) == ([], "on")
    hits = manager.search("What car do I drive now?", 5)  # cosine 0.29 here
    assert [(h.id, h.matched) for h in hits] == [(skoda.id, "meaning")]


def test_the_floor_never_drops_what_the_words_found():
    from datetime import UTC, datetime

    from memory_core.hybrid import fuse
    from memory_core.search import SearchHit

    def hit(mid, score):
        return SearchHit(id=mid, session_id="s", role="user", content=mid,
                         created_at=datetime(2026, 1, 1, tzinfo=UTC), rank=1, score=score)

    fused = fuse([hit("w", 3.0)], [hit("m", 0.5), hit("w", 0.4)], floor=0.6)
    assert [(h.id, h.matched) for h in fused] == [("w", "both")]
    fused = fuse([hit("w", 3.0)], [hit("m", 0.5), hit("w", 0.4)], floor=0.0)
    assert sorted((h.id, h.matched) for h in fused) == [("m", "meaning"), ("w", "both")]


@pytest.mark.parametrize("scope", ["session", "agent"])
def test_a_hybrid_search_takes_a_fixed_number_of_queries(manager, session, fake_embeddings,
                                                         scope, django_assert_num_queries):
    """The vectors' state and the pending count are one statement; the words' as words
    alone take (2; 1 on SQLite once bm25() is known to rank this agent); then the session's
    key when scoped (1) and the meaning hits' rows (1): the same however many messages
    the agent holds."""
    search = session.search if scope == "session" else manager.search
    for size in (3, 60):
        _fill(session, [f"picked up the new Skoda number {i}" for i in range(size)])
        embed_all(fake_embeddings)
        search("car")  # the agent's vectors read into memory, its bm25 choice learnt
        words = 1 if connection.vendor == "sqlite" else 2
        with django_assert_num_queries(words + 1 + (scope == "session") + 1):
            hits = search("What car do I drive now?")
        assert hits.semantic == "on" and hits.pending == 0 and hits


def _hit(mid, score):
    from datetime import UTC, datetime

    from memory_core.search import SearchHit

    return SearchHit(id=mid, session_id="s", role="user", content=mid,
                     created_at=datetime(2026, 1, 1, tzinfo=UTC), rank=1, score=score)


def test_a_meaning_match_outranks_all_but_the_first_one_word_match():
    """Reciprocal rank: the nearest by meaning scores as the words' first hit does (a tie
    goes to the words: an exact name or id), so it comes above every later word match,
    however many share one common word with the question."""
    from memory_core.hybrid import fuse

    lexical = [_hit(f"w{n}", 5.0 - n) for n in range(1, 6)]
    fused = fuse(lexical, [_hit("m", 0.6)], floor=0.25, margin=0.2)
    assert [h.id for h in fused] == ["w1", "m", "w2", "w3", "w4", "w5"]
    assert fused[1].matched == "meaning"


def test_a_message_that_asks_is_no_hit_by_meaning_alone():
    """An agent's own question ("How many people are coming?") is near many questions by
    its form and answers none: found by meaning alone it is left out; found by the words
    too, it stays."""
    from dataclasses import replace

    from memory_core.hybrid import fuse

    asking = replace(_hit("q", 0.6), content="Great choice. How many people are coming? ")
    full_width = replace(_hit("z", 0.6), content="明天要带伞吗？")
    answer = replace(_hit("a", 0.5), content="Twenty-two people, and we need a room.")
    fused = fuse([], [asking, full_width, answer], floor=0.25, margin=0.2)
    assert [(h.id, h.matched) for h in fused] == [("a", "meaning")]
    fused = fuse([replace(asking, score=3.0)], [asking, answer], floor=0.25, margin=0.2)
    assert [(h.id, h.matched) for h in fused] == [("q", "both"), ("a", "meaning")]


def test_the_margin_is_the_embedders_own(manager, session, fake_embeddings, monkeypatch):
    """A message found by meaning alone must come within the embedder's margin of the best
    cosine (hybrid.DENSE_MARGIN when it has none): models spread their cosines differently."""
    from memory_core.hybrid import fuse

    dense = [_hit("a", 0.60), _hit("b", 0.45), _hit("c", 0.35)]
    assert [h.id for h in fuse([], dense)] == ["a"]  # DENSE_MARGIN 0.1
    assert [h.id for h in fuse([], dense, margin=0.2)] == ["a", "b"]
    skoda, tiramisu = _fill(session, ["picked up the new Skoda yesterday, car is great",
                                      "I could eat tiramisu every day, the car is parked"])
    embed_all(fake_embeddings)
    narrow = [h.id for h in manager.search("skoda", 5)]
    monkeypatch.setattr(fake_embeddings, "margin", 1.0, raising=False)
    wide = [h.id for h in manager.search("skoda", 5)]
    assert narrow == [skoda.id] and wide == [skoda.id, tiramisu.id]


def test_meaning_lifts_a_word_hit_only_by_its_rank_above_the_meaning_lists_end():
    """A large agent: the nearest by meaning is a sentence sharing one generic word with the
    question, 12th by words; the words' answer (2nd) is past the meaning list's 20. Meaning's
    share for a word hit is what its rank stands above the list's end, so the sentence
    climbs past later word hits but not past the words' answer (a full half share put it
    first)."""
    from memory_core.hybrid import fuse

    lexical = [_hit(f"w{n}", 20.0 - n) for n in range(1, 13)]
    dense = [_hit("w12", 0.6)] + [_hit(f"m{n}", 0.3) for n in range(19)]  # m: below margin
    fused = fuse(lexical, dense, floor=0.25, margin=0.2)
    assert [h.id for h in fused][:4] == ["w1", "w2", "w12", "w3"]
    assert fused[2].matched == "both"


def test_copies_of_one_text_share_a_rank():
    """A note saved three times is one candidate: the next hit ranks second, as re-ranking
    (which collapses the copies) shows it."""
    from dataclasses import replace

    from memory_core.hybrid import RRF_K, fuse

    lexical = [replace(_hit(f"c{n}", 5.0), content="saved to your notes") for n in range(3)]
    fused = fuse([*lexical, _hit("a", 4.0)], [])
    assert [(h.id, h.score) for h in fused][-1] == ("a", round(1 / (RRF_K + 2), 6))


def test_the_recall_report_says_what_falls_below_words_alone_in_a_larger_agent(
        db, fake_embeddings):
    from benchmarks.recall import harness

    wider = harness.run(embedder=fake_embeddings, distractors=50)
    line = wider.growth_line(50)
    assert line.startswith("with 50 distractors (") and "words alone" in line
    below = wider.below_words()
    assert all(k.split()[0] in line for k in below)
    wider.arbor["fact"] = harness.Scores(ranks=[None])  # nothing found: below words alone
    assert wider.below_words()[0].startswith("fact 0.0 < ")


def test_a_hit_holding_every_word_of_the_question_stays_above_one_meaning_lifted():
    """The database ranks hits holding every query word first; fusion's order is not the
    database's, so re-ranking applies that tier again: "Wer leitet Nordlicht?" answers
    with the message that says who leads it, not with one that only names the project
    and reads more like the question."""
    from dataclasses import replace

    from memory_core.rerank import rerank

    named = replace(_hit("named", 0.02), content="Notiert: Release von Nordlicht am 15.")
    both = replace(_hit("both", 0.01), content="Nordlicht leitet jetzt Jens Albers.")
    concepts = [("leitet",), ("nordlicht",)]
    lifted = replace(named, matched="both")  # meaning moved it up: a fused order
    assert [h.id for h in rerank([lifted, both], concepts, 5)] == ["both", "named"]
    # Words alone: the database's order already holds the tier, and is kept.
    assert [h.id for h in rerank([named, both], concepts, 5)] == ["named", "both"]
