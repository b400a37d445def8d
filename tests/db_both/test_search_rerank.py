"""Ranking for an agent (issue 17), on the current database (SQLite and Postgres passes):
corrections rank above what they correct and point back (`superseded_by`), identical texts
collapse into their newest copy (`copies`), query words are words (no contraction
fragments), stem variants meet, every hit has a marked snippet and its date."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from memory_core.search import FRAGMENTS, query_concepts, query_terms
from tests.conftest import assistant_msg, user_msg
from tests.db_both.test_search import FILLER, fill, ids


def tool_line(manager, query: str) -> str:
    current = manager.get_session(manager.create("now").id)
    tool = {t.name: t for t in current.tools()}["session_search"]
    return tool.run({"query": query})


# ------------------------------------------------------------------ supersession
@pytest.fixture
def rent(manager):
    old = manager.get_session(manager.create("new flat").id)
    fill(old)
    old.append_messages([
        user_msg("I signed the lease. Rent is €1,650 a month, due on the 3rd.", id="rent-old"),
        user_msg("The landlord is called Mr. Okafor.", id="landlord"),
    ])
    new = manager.get_session(manager.create("later").id)
    new.append_messages([
        user_msg("Actually the rent went up to €1,740 from April; the landlord sent a letter.",
                 id="rent-new"),
    ])
    return manager


def test_the_correction_ranks_first_and_the_stale_fact_points_to_it(rent):
    hits = rent.search("what's my rent now?")
    assert ids(hits) == ["rent-new", "rent-old"]
    by_id = {h.id: h for h in hits}
    assert by_id["rent-old"].superseded_by == "rent-new"
    assert by_id["rent-new"].superseded_by is None
    # Without the correction, plain word ranking puts the shorter old statement first.
    assert by_id["rent-old"].score > by_id["rent-new"].score
    assert by_id["rent-new"].created_at > by_id["rent-old"].created_at


def test_a_correction_about_something_else_supersedes_nothing(rent):
    # The rent clause holds the cue; the landlord clause does not: the landlord's name stays.
    hits = rent.search("what is the landlord called?")
    assert ids(hits)[0] == "landlord"
    assert all(h.superseded_by is None for h in hits)


def test_the_session_search_tool_says_which_hit_was_corrected(rent):
    text = tool_line(rent, "how much is the rent?")
    first, second = text.splitlines()
    assert "[id rent-new]" in first and "1,740" in first and "corrected" not in first
    assert "[id rent-old]" in second and second.endswith("(later corrected by rent-new)")


def test_an_update_with_a_lead_in_corrects_every_word_it_holds(manager):
    s = manager.get_session(manager.create("project").id)
    fill(s)
    s.append_messages([
        user_msg("Project Driftwood: Marcus is leading Driftwood.", id="lead-old"),
        assistant_msg("Driftwood's budget is 80k.", id="budget"),
        user_msg("Update: Elena leads Driftwood from Monday.", id="lead-new"),
    ])
    hits = manager.search("who leads Driftwood?")
    assert ids(hits)[:2] == ["lead-new", "lead-old"]
    assert {h.id: h.superseded_by for h in hits} == {
        "lead-new": None, "lead-old": "lead-new", "budget": None}


def test_a_correction_that_names_its_subject_earlier_in_its_session(manager):
    old = manager.get_session(manager.create("kickoff").id)
    fill(old)
    old.append_message(user_msg("Ravi is leading Bluefin, the app rewrite.", id="ravi"))
    new = manager.get_session(manager.create("later").id)
    new.append_messages([user_msg("Quick news on Bluefin.", id="news"),
                         user_msg("Ravi left, so Sandra is leading it now.", id="sandra")])
    hits = manager.search("who is leading Bluefin?")
    assert ids(hits)[:2] == ["sandra", "ravi"]
    assert {h.id: h.superseded_by for h in hits}["ravi"] == "sandra"
    # "The rewrite" is never named in the correction's session: nothing is superseded.
    assert all(h.superseded_by is None for h in manager.search("who is leading the rewrite?"))


@pytest.mark.parametrize("text", ["Deploy now.", "Running the deploy now, hold on.",
                                  "Nobody deploys without a change ticket."])
def test_now_or_change_in_passing_is_no_correction(session, text):
    fill(session)
    session.append_messages([user_msg("We deploy on Thursdays.", id="rule"),
                             user_msg(text, id="later")])
    hits = session.search("deploy")
    assert all(h.superseded_by is None for h in hits)
    assert ids(hits) == ids(sorted(hits, key=lambda h: -h.score)) or ids(hits)[0] == "rule"


def test_a_chain_of_corrections_ends_with_the_newest_first(manager):
    s = manager.get_session(manager.create("gym").id)
    fill(s)
    s.append_messages([
        user_msg("My gym membership costs €54 a month.", id="g1"),
        user_msg("Actually the gym membership went up to €58.", id="g2"),
        user_msg("I switched gyms, the membership is €49 now.", id="g3"),
    ])
    hits = manager.search("how much is the gym membership?")
    assert ids(hits)[0] == "g3"
    assert {h.id: h.superseded_by for h in hits} == {"g1": "g3", "g2": "g3", "g3": None}


def test_german_french_spanish_and_chinese_corrections(manager):
    s = manager.get_session(manager.create("intl").id)
    fill(s)
    s.append_messages([
        user_msg("Die Miete beträgt 980 Euro.", id="de-old"),
        user_msg("Korrektur: die Miete ist jetzt 1.020 Euro.", id="de-new"),
        user_msg("Mon loyer est de 820 euros.", id="fr-old"),
        user_msg("En fait le loyer a augmenté, c'est désormais 865 euros.", id="fr-new"),
        user_msg("El vuelo sale el 3 de diciembre.", id="es-old"),
        user_msg("Ya no sale el 3: el vuelo sale el 4 de diciembre.", id="es-new"),
        user_msg("我的房租是每月四千五百元。", id="zh-old"),
        user_msg("更正一下，房租现在涨到四千八百元了。", id="zh-new"),
    ])
    for query, new, old in [("Wie hoch ist die Miete?", "de-new", "de-old"),
                            ("Quel est le loyer ?", "fr-new", "fr-old"),
                            ("¿Cuándo sale el vuelo?", "es-new", "es-old"),
                            ("房租多少钱？", "zh-new", "zh-old")]:
        hits = {h.id: h for h in manager.search(query)}
        assert ids(manager.search(query))[0] == new, query
        assert hits[old].superseded_by == new, query


# ------------------------------------------------------------------ collapse
def test_identical_texts_collapse_into_the_newest_copy(manager):
    s = manager.get_session(manager.create("flight").id)
    fill(s)
    s.append_message(user_msg("Lisbon flight TP 1337 on 14 May leaves at 07:40.", id="answer"))
    s.append_messages([
        assistant_msg("I've noted your  flight details and will remind you.", id=f"copy-{n}")
        for n in range(6)])
    hits = manager.search("what are my flight details?")
    assert ids(hits) == ["copy-5", "answer"]
    assert [h.copies for h in hits] == [6, 1]
    assert "(copies: 6)" in tool_line(manager, "flight details").splitlines()[0]
    # The copies crowd out nothing: the answer is second, not seventh.
    assert [h.rank for h in hits] == [1, 2]


def test_collapsing_still_fills_the_limit(session):
    session.append_messages([user_msg(f"status report number {i}") for i in range(12)])
    session.append_messages([user_msg("status report: all green") for _ in range(30)])
    hits = session.search("status report", limit=10)
    assert [h.copies for h in hits] == [30] + [1] * 9
    assert [h.content for h in hits[1:3]] == ["status report number 11", "status report number 10"]


# ------------------------------------------------------------------ query hygiene
@pytest.mark.parametrize("query, terms", [
    ("what's the host's status?", ["host", "status"]),
    ("they're sure we'll ship, I've said it", ["sure", "ship", "said", "say"]),
    ("don't, didn't, isn't, can't, wouldn't", ["can"]),  # only stop words left: kept
    ("l'appartement d'Anna qu'il loue", ["appart", "anna", "loue"]),
    # "die" is English too: a term only where the question reads as English
    ("Wie hoch ist die Miete jetzt?", ["hoch", "miet"]),
    ("Will the plant die?", ["plant", "die"]),
    ("¿Cuál es el número de la reserva?", ["numero", "reserva"]),
    ("Quel est le loyer actuel ?", ["loyer"]),
    ("what's it", ["what", "it"]),
])
def test_contraction_fragments_and_function_words_are_never_terms(query, terms):
    assert query_terms(query) == terms
    assert not FRAGMENTS & set(query_terms(query))


def test_other_single_letters_and_digits_stay_words():
    assert query_terms("plan B for the R package, 3 x") == ["plan", "b", "r", "packag", "3", "x"]


def test_fragment_letters_standing_alone_are_words():
    assert query_terms("vitamin D dose") == ["vitamin", "d", "dose"]
    assert query_terms("the T cell count, grade C") == ["t", "cell", "count", "grade", "c"]
    assert query_terms("rock ’n’ roll") == ["rock", "roll"]
    assert query_terms("D’Artagnan’s sword") == ["artagnan", "sword"]
    assert query_terms("L'utilisatrice a-t-elle des allergies ?") == [
        "utilisatric", "allergi", "allerg"]
    assert query_terms("T-cell count") == ["t", "cell", "count"]


def test_a_lone_fragment_letter_finds_its_message(manager):
    session = manager.get_session(manager.create("vitamins").id)
    # The D message is older and longer: on "vitamin" alone, C would rank first.
    session.append_message(user_msg("The doctor said my vitamin D is low"))
    session.append_message(user_msg("I take vitamin C every morning"))
    hits = session.search("vitamin D")
    assert [h.content for h in hits][:1] == ["The doctor said my vitamin D is low"]
    assert session.search("vitamin")[0].content == "I take vitamin C every morning"


def test_stem_variants_are_one_query_word():
    assert query_concepts("is she allergic to nuts?") == [("allerg", "allergi"), ("nut",)]
    assert query_concepts("any allergies?") == [("allergi", "allerg")]
    assert query_concepts("who organizes it") == [("organiz", "organis")]
    assert query_concepts("did the migration run") == [("migrat",), ("run", "ran")]


def test_a_query_of_only_fragments_searches_nothing(session):
    session.append_message(user_msg("it's what's left"))
    assert query_terms("'s 're 'll 've 't 'd 'm") == []
    assert session.search("'s 're 'll") == []


@pytest.mark.parametrize("text, query", [
    ("I'm allergic to peanuts.", "any allergies?"),
    ("She has a nut allergy.", "is she allergic to nuts"),
    ("I'm organising the flea market.", "who organizes the market"),
    ("The courier will deliver it on Monday.", "when is the delivery"),
    ("We ran the migration twice.", "did the migration run"),
    ("I paid the invoice.", "did I pay"),
])
def test_forms_a_reader_sees_as_one_word_meet(session, text, query):
    fill(session)
    session.append_message(user_msg(text, id="answer"))
    hits = session.search(query)
    assert ids(hits)[:1] == ["answer"]
    assert "<mark>" in hits[0].snippet


def test_stem_variants_still_put_hits_holding_every_word_first(session):
    fill(session)
    session.append_messages([
        user_msg("Peanuts peanuts peanuts.", id="one-word"),
        user_msg("The peanut allergy card is in my wallet, next to the allergy pass.", id="both"),
    ])
    assert ids(session.search("allergic to peanuts")) == ["both", "one-word"]


# ------------------------------------------------------------------ hit shape
def test_every_hit_has_its_date_a_marked_snippet_and_the_new_fields(rent):
    for hit in rent.search("rent landlord <b>"):
        assert hit.created_at.tzinfo is not None
        assert "<mark>" in hit.snippet and "<b>" not in hit.snippet
        data = hit.to_dict()
        assert data["created_at"] == hit.created_at.isoformat()
        assert {"superseded_by", "copies", "snippet"} <= set(data)


def test_re_ranking_adds_no_query(manager, session):

    fill(session, FILLER)
    session.append_messages([user_msg("Rent is €1,650."), user_msg("Actually the rent is €1,740.")])

    def count(fn) -> int:
        with CaptureQueriesContext(connection) as captured:
            assert fn()
        return len(captured.captured_queries)

    terms = query_terms("what's the rent now?")

    def words() -> list:
        return manager.storage.search(agent_id=manager.agent_id, session_id=None,
                                      terms=terms, limit=40)

    words()  # (SQLite's first search learns which ranking serves this agent: not counted)
    word_ranking = count(words)
    assert count(lambda: manager.search("what's the rent now?")) == word_ranking
    assert count(lambda: session.search("rent")) == word_ranking


def test_the_one_pass_read_of_a_hit_agrees_with_its_two_tests():
    """rerank reads each candidate once (_read): the terms it finds are those the index
    files the text under, and its cue test is a filter that never leaves out a text in
    which corrected_terms finds a cue (and passes no more than _may_correct), on ASCII
    and other texts."""
    from benchmarks.corpus import Corpus
    from memory_core.rerank import (
        COVERAGE_SCAN_CHARS,
        _may_correct,
        _read,
        corrected_terms,
        matched_terms,
    )
    from memory_core.words import index_tokens

    texts = [p["text"] for m in Corpus().conversation(400) for p in m["parts"]]
    texts += ["Actually the D train moved", "Update: it's now 5", "vitamin d, T-cells_x",
              "Die Miete ist jetzt höher", "改为周五", "don't stop; x",
              "We no longer ship on Fridays", "From now on the rent is due monthly",
              "mise a jour: le loyer", "the price went up", "Correction: train at 9",
              "it is now at noon", "no, any more rent?", "the rent is 5 now"]
    cued = 0
    for query in ("deploy schedule d", "rent landlord", "vitamin D train", "t cell miete"):
        terms = frozenset(query_terms(query))
        for text in texts:
            indexed = frozenset(index_tokens(text[:COVERAGE_SCAN_CHARS])) & terms
            found, cue = _read(text, terms)
            assert found == indexed
            assert matched_terms(text, terms) == indexed
            own = frozenset(index_tokens(text))  # a cue's clause holds some of these
            assert cue or not corrected_terms(text, own), text
            assert not cue or _may_correct(text), text
            cued += cue
    assert cued  # the filter passes the texts that hold a cue
