"""SQLite ranks by BM25 worked out from counts kept beside the FTS5 index (migration
0009, storage/vendors/sqlite_counts.py and sqlite_rank.py) instead of FTS5's bm25(),
whose term counts walk every agent's rows. The counts must stay exact through every kind
of write, and the ranking must be bm25()'s to the last bit."""

from __future__ import annotations

import sqlite3

import orjson
import pytest
from django.db import connection

from memory_core.search import query_terms
from sessions_app.storage.vendors import sqlite_counts, sqlite_rank
from sessions_app.storage.vendors.sqlite_index import search_tokens
from sessions_app.storage.vendors.sqlite_search import bm25_messages, sqlite_messages
from tests.conftest import assistant_msg, make_agent, user_msg

pytestmark = pytest.mark.sqlite_only


def kept() -> tuple[dict[str, int], set[tuple[str, int, int]]]:
    """The counts as a search reads them (counters plus pending) and the repeat counts."""
    with connection.cursor() as cur:
        cur.execute("SELECT DISTINCT j.value FROM arbor_search_pending p, json_each(p.terms) j "
                    "UNION SELECT term FROM arbor_search_df")
        terms = [t for (t,) in cur.fetchall()]
        cur.execute(sqlite_counts.STATS, [orjson.dumps(
            [*terms, sqlite_counts.N_TERM, sqlite_counts.TOKENS_TERM]).decode()])
        counts = {t: n for t, _, n in cur.fetchall() if n}
        cur.execute("SELECT term, id, tf FROM arbor_search_repeat")
        return counts, set(cur.fetchall())


def truth() -> tuple[dict[str, int], set[tuple[str, int, int]]]:
    """The same, worked out from FTS5's own records and the messages' texts."""
    with connection.cursor() as cur:
        cur.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.vocab "
                    "USING fts5vocab(main, arbor_message_fts, 'col')")
        cur.execute("SELECT term, doc FROM temp.vocab WHERE col = 'body'")
        counts = dict(cur.fetchall())
        cur.execute("SELECT count(*), coalesce(sum(m.search_len + 2), 0) FROM arbor_message m")
        counts[sqlite_counts.N_TERM], counts[sqlite_counts.TOKENS_TERM] = cur.fetchone()
        cur.execute("""SELECT (k.key << 36) | m.seq, m.parts, m.search_extra FROM arbor_message m
                       JOIN arbor_session s ON s.key = m.session_key
                       JOIN arbor_search_key k ON k.agent_id = s.agent_id""")
        repeats = {(term, rowid, n) for rowid, parts, extra in cur.fetchall()
                   for term, n in sqlite_counts.row_terms(search_tokens(parts, extra))[1]}
        return {t: n for t, n in counts.items() if n}, repeats


def assert_exact() -> None:
    assert kept() == truth()


def fold_all() -> None:
    connection.ensure_connection()
    raw: sqlite3.Connection = connection.connection
    raw.execute("SAVEPOINT fold")  # (fold_step's own BEGIN cannot run in the test's transaction)
    with connection.cursor() as cur:
        cur.execute("SELECT max(id) FROM arbor_search_pending")
        top = cur.fetchone()[0]
    if top is not None:
        sqlite_counts.fold(raw.cursor(), top)
    raw.execute("RELEASE fold")


def test_counts_stay_exact_through_every_write(manager, session):
    words = [f"word{i}" for i in range(300)]
    texts = [" ".join(words[(i * 7) % 300:(i * 7) % 300 + 30]) + " word1 word1" for i in range(120)]
    for text in texts[:60]:
        session.append_message(user_msg(text))
    session.append_messages([user_msg(t) for t in texts[60:]])  # the bulk path
    assert_exact()
    fold_all()
    assert_exact()
    history = session.get_history()
    session.delete_messages([m.id for m in history[:20]])
    assert_exact()
    session.update_message(assistant_msg("entirely different zebra zebra words", id=history[30].id))
    assert_exact()
    fork = manager.fork(session.id, history[100].id, "fork")
    assert_exact()
    fold_all()
    manager.delete(fork.id)
    assert_exact()
    session.clear_messages()
    assert_exact()
    fold_all()
    assert kept()[0] == {}  # nothing left: no word stays behind in the counters


@pytest.mark.parametrize("share", [0, 10**9])
def test_ranking_is_bm25s_to_the_last_bit(manager, session, monkeypatch, share):
    # share 0: always ranked from the counts; 10**9: always by bm25() (sqlite_rank.WHOLE_SHARE)
    monkeypatch.setattr(sqlite_rank, "WHOLE_SHARE", share)
    other = make_agent("someone-else")  # another agent's rows count in the statistics
    from memory_core import SessionManager

    SessionManager.for_agent(other).get_session(
        SessionManager.for_agent(other).create("theirs").id).append_messages(
        [user_msg(f"deploy the cluster {i} kubernetes") for i in range(40)])
    second = manager.get_session(manager.create("second").id)
    for i in range(60):
        target = session if i % 3 else second
        target.append_message(user_msg(
            f"deploy {'deploy ' * (i % 4)}note {i} about kubernetes and the rollout {i % 7}"))
    fold_all()
    session.append_message(assistant_msg("a pending deploy deploy rollout"))  # not folded
    for query in ("deploy rollout", "kubernetes note", "deploy", "rollout kubernetes note 5"):
        terms = query_terms(query)
        for session_id, exclude, limit in ((session.id, None, 10), (None, None, 40),
                                           (None, second.id, 20), (session.id, None, 1)):
            with connection.cursor() as cur:
                mine = sqlite_messages(cur, agent_id=manager.agent_id, session_id=session_id,
                                       exclude_session_id=exclude, terms=terms, limit=limit)
                fts5 = bm25_messages(cur, agent_id=manager.agent_id, session_id=session_id,
                                     exclude_session_id=exclude, terms=terms, limit=limit)
            assert mine and mine == fts5, (query, session_id, exclude, limit)
    with connection.cursor() as cur:
        assert (sqlite_rank.ranked(cur, agent_id=manager.agent_id,
                                   terms=["deploy"], matches=['body : "deploy"'], limit=5)
                is None) == bool(share)
