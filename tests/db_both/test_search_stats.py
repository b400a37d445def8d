"""Postgres keeps each word's document count, the message count and the token total in
arbor_term_df, counters per (term, slot) updated in place (migration 0005); searches
read them instead of counting over the GIN index, so they must stay exact through every
kind of write, and the table must hold the vocabulary, not a row per write."""

from __future__ import annotations

import pytest
from django.db import connection

from tests.conftest import assistant_msg, user_msg

pytestmark = pytest.mark.postgres_only

# What the counts should be, worked out from the messages themselves.
TRUTH = """
    SELECT lexeme, count(*) FROM arbor_message, unnest(tsvector_to_array(search_vector)) lexeme
    WHERE lexeme NOT LIKE '§%%' GROUP BY lexeme
    UNION ALL SELECT '§n', count(*) FROM arbor_message
    UNION ALL SELECT '§t', coalesce(sum(search_len + 2), 0) FROM arbor_message"""
KEPT = "SELECT term, sum(df) FROM arbor_term_df GROUP BY term"


def counts(sql: str) -> dict[str, int]:
    with connection.cursor() as cur:
        cur.execute(sql)
        return {term: int(n) for term, n in cur.fetchall() if int(n)}


def stored_rows() -> int:
    with connection.cursor() as cur:
        cur.execute("SELECT count(*) FROM arbor_term_df")
        return int(cur.fetchone()[0])


def assert_exact() -> None:
    assert counts(KEPT) == counts(TRUTH)


def test_counts_stay_exact_through_every_write(manager, session):
    words = [f"word{i}" for i in range(400)]
    texts = [" ".join(words[(i * 7) % 400 : (i * 7) % 400 + 40]) for i in range(150)]
    for text in texts:
        session.append_message(user_msg(text))
    assert_exact()
    assert stored_rows() <= 400 + 2  # one row per word (and the two totals), not per write
    history = session.get_history()
    session.delete_messages([m.id for m in history[:20]])
    assert_exact()
    target = history[30]
    session.update_message(assistant_msg("entirely different zebra words", id=target.id))
    assert_exact()
    fork = manager.fork(session.id, history[100].id, "fork")  # copied vectors, bulk
    assert_exact()
    manager.delete(fork.id)
    assert_exact()
    session.clear_messages()
    assert_exact()


def test_a_new_word_is_searchable_at_once(manager, session):
    session.append_messages([user_msg("the rare quokka"), user_msg("a common word")])
    hits = manager.search("quokka")
    assert [h.content for h in hits] == ["the rare quokka"]
    assert hits[0].score > 0


def test_counts_stay_exact_through_an_import_of_whole_trees(manager):
    # Postgres writes an imported tree in one statement (vendors/postgres.py _insert_at_once).
    import orjson

    from memory_core.imports import conversations, import_conversations, read
    from tests.imports import exports as ex

    for body in (orjson.dumps(ex.chatgpt()), ex.pi_jsonl(), orjson.dumps(ex.claude())):
        fmt, value = read(body)
        import_conversations(manager, fmt, conversations(fmt, value))
    assert_exact()
    assert {h["id"] for h in manager.search("evening flight")} >= {"a2"}  # vectors hold words


@pytest.mark.django_db(transaction=True)
def test_writers_of_the_same_words_do_not_wait_for_each_other(manager):
    """A transaction that appended common words and is still open holds its own slot's
    counters only: another session's append of the same words commits meanwhile, and
    both are counted once they are done."""
    import threading

    from django.db import transaction

    first = manager.get_session(manager.create("first").id)
    second = manager.get_session(manager.create("second").id)
    appended, release = threading.Event(), threading.Event()
    errors: list[BaseException] = []

    def slow_writer() -> None:
        try:
            with transaction.atomic():
                first.append_message(user_msg("the shared words of every chat"))
                appended.set()
                release.wait(30)
        except BaseException as exc:  # asserted on below
            errors.append(exc)
        finally:
            connection.close()

    thread = threading.Thread(target=slow_writer)
    thread.start()
    try:
        assert appended.wait(30)
        with connection.cursor() as cur:
            cur.execute("SET lock_timeout = '2s'")  # waiting on the open one would fail
        second.append_message(user_msg("the shared words of every chat, again"))
        with connection.cursor() as cur:
            cur.execute("SET lock_timeout = 0")
    finally:
        release.set()
        thread.join(30)
    assert errors == []
    assert_exact()
    with connection.cursor() as cur:
        cur.execute("SELECT count(DISTINCT slot) FROM arbor_term_df WHERE term = 'share'")
        assert cur.fetchone()[0] == 2


def test_a_tsvector_literal_reads_back_as_its_counts(db, monkeypatch):
    """The literal's pieces, cached per (lexeme, count) and dropped at the bound, give
    Postgres each lexeme (quotes and backslashes kept) with as many positions as its count."""
    from collections import Counter

    from sessions_app.storage.vendors import postgres_vector as vector

    monkeypatch.setattr(vector, "_MAX_PIECES", 2)
    counts = Counter({"it's": 3, "back\\slash": 1, "plain": 2})
    for _ in range(2):  # (the second time from the cache, emptied on the way)
        text = vector.literal(counts, vector.scope_tail(["§a1"]))
        with connection.cursor() as cur:
            cur.execute("SELECT lexeme, array_length(positions, 1) "
                        "FROM unnest(%s::tsvector) ORDER BY lexeme", [text])
            assert dict(cur.fetchall()) == {**counts, "§a1": 1}
    assert len(vector._PIECES) <= 2


def test_scoring_the_rare_words_first_or_everything_at_once_gives_the_same_hits(
        manager, monkeypatch):
    """Postgres scores the rows holding the query's rarest words first only when the scope
    is expected to match many rows (PRUNE_FROM_ROWS); either way the answer is the same,
    scores and order included."""
    from sessions_app.storage.vendors import postgres_search

    s = manager.get_session(manager.create("deploys").id)
    for i in range(120):  # "deploy" everywhere, "staging" in a few, "rollback" in one
        words = ["deploy", "notes", f"item{i}"]
        if i % 15 == 0:
            words.append("staging")
        if i == 45:
            words.append("rollback")
        s.append_message(user_msg(" ".join(words)) if i % 2 else assistant_msg(" ".join(words)))
    answers = []
    for rows in (10**9, 0):
        monkeypatch.setattr(postgres_search, "PRUNE_FROM_ROWS", rows)
        for query in ("deploy staging rollback", "deploy staging", "notes deploy item7"):
            answers.append((rows, query, [(h.id, h.score) for h in manager.search(query, 5)]))
    never, always = answers[:3], answers[3:]
    assert [a[2] for a in never] == [a[2] for a in always]
    assert all(a[2] for a in never)
