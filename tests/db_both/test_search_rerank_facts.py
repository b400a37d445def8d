"""Re-ranking reads each candidate's text once and keeps what it read (candidate_text.py):
what a search answers must still follow each message's current text, on the current
database (SQLite and Postgres passes)."""

from __future__ import annotations

from memory_core import candidate_text
from tests.conftest import user_msg
from tests.db_both.test_search import fill, ids


def test_an_edited_message_is_read_again(manager):
    old = manager.get_session(manager.create("new flat").id)
    fill(old)
    old.append_message(user_msg("I signed the lease. Rent is €1,650 a month.", id="rent-old"))
    new = manager.get_session(manager.create("later").id)
    new.append_message(user_msg("The rent office downtown has a nice garden.", id="rent-new"))
    first = manager.search("what's my rent now?")
    assert all(h.superseded_by is None for h in first)
    assert {"rent-old", "rent-new"} <= set(ids(first))

    new.update_message(user_msg("Actually the rent went up to €1,740 from April.", id="rent-new"))
    hits = manager.search("what's my rent now?")
    assert ids(hits)[:2] == ["rent-new", "rent-old"]
    assert {h.id: h.superseded_by for h in hits}["rent-old"] == "rent-new"

    # ... and back: the correction gone, the old statement stands alone again.
    new.update_message(user_msg("The rent office downtown has a nice garden.", id="rent-new"))
    assert all(h.superseded_by is None for h in manager.search("what's my rent now?"))


def test_an_edit_that_makes_two_texts_alike_collapses_them(session):
    session.append_messages([
        user_msg("Backup job for the billing database runs at 02:00.", id="a"),
        user_msg("Backup job for the invoices runs at 03:00.", id="b"),
    ])
    assert [h.copies for h in session.search("backup job")] == [1, 1]
    session.update_message(user_msg("Backup job for the billing   database\nruns at 02:00.",
                                    id="b"))
    hits = session.search("backup job")
    assert [(h.id, h.copies) for h in hits] == [("b", 2)]
    assert [c.message_id for c in hits[0].other_copies] == ["a"]


def test_the_same_search_answers_the_same_with_what_was_read_kept(manager):
    s = manager.get_session(manager.create("notes").id)
    fill(s)
    s.append_messages([
        user_msg("The deploy window is Tuesday at 10:00.", id="deploy-old"),
        user_msg("Update: the deploy window moved to Thursday at 14:00.", id="deploy-new"),
        user_msg("Deploy notes are in the wiki.", id="notes"),
    ])
    candidate_text._FACTS.clear()
    cold = [h.to_dict() for h in manager.search("when is the deploy window?")]
    warm = [h.to_dict() for h in manager.search("when is the deploy window?")]
    assert cold == warm
    assert cold[0]["id"] == "deploy-new"


def test_what_is_kept_stays_bounded(monkeypatch, session):
    monkeypatch.setattr(candidate_text, "MAX_FACTS", 5)
    session.append_messages([user_msg(f"inventory item number {i}") for i in range(12)])
    for _ in range(2):
        hits = session.search("inventory item", limit=12)
        assert len(hits) == 12
        assert len(candidate_text._FACTS) <= 5


def test_a_question_asked_again_gives_the_same_words():
    from memory_core.words import query_concepts

    first = query_concepts("What's the rent of the flat now?")
    assert first == [("rent",), ("flat",)]
    first.append(("changed",))  # a caller's copy: the next asker gets the words again
    assert query_concepts("What's the rent of the flat now?") == [("rent",), ("flat",)]
    long = "rent " * 200  # read, not kept
    assert query_concepts(long) == [("rent",)]
