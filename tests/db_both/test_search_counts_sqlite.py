"""SQLite ranks by BM25 worked out from counts kept beside the FTS5 index (migrations
0009 and 0010, storage/vendors/sqlite_counts.py and sqlite_rank.py) instead of FTS5's bm25(),
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
        cur.execute("SELECT j.key, t.id, j.value FROM arbor_search_tf t, json_each(t.tf) j")
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


def _export(conversations: int, length: int) -> bytes:
    """A ChatGPT export whose messages repeat their words (as long answers do), with a
    regenerated answer in each conversation: every message has repeat counts."""
    words = "deploy rollout kubernetes cluster canary gateway ledger invoice".split()
    out = []
    for c in range(conversations):
        mapping: dict[str, dict] = {}
        parent = None
        for i in range(length):
            nid = f"c{c}m{i}"
            text = " ".join(words[(c + i + k) % len(words)] for k in range(2 + i % 5)) * 3
            mapping[nid] = {"id": nid, "parent": parent, "children": [], "message": {
                "id": nid, "author": {"role": "user" if i % 2 == 0 else "assistant"},
                "create_time": 1_700_000_000 + i,
                "content": {"content_type": "text", "parts": [f"{text} note{i}"]}}}
            if parent is not None:
                mapping[parent]["children"].append(nid)
            parent = nid
        alt = f"c{c}alt"  # a regenerated last answer beside it
        mapping[alt] = dict(mapping[parent], id=alt, children=[], parent=mapping[parent]["parent"],
                            message=dict(mapping[parent]["message"], id=alt))
        mapping[mapping[parent]["parent"]]["children"].append(alt)
        out.append({"title": f"c{c}", "conversation_id": f"rep{c}", "current_node": parent,
                    "create_time": 1_700_000_000, "update_time": 1_700_000_100,
                    "mapping": mapping})
    return orjson.dumps(out)


def _ranked_as_bm25(manager, session_ids) -> None:
    for query in ("deploy rollout", "kubernetes canary ledger", "invoice", "gateway note3"):
        terms = query_terms(query)
        for session_id in (*session_ids, None):
            with connection.cursor() as cur:
                mine = sqlite_messages(cur, agent_id=manager.agent_id, session_id=session_id,
                                       exclude_session_id=None, terms=terms, limit=15)
                fts5 = bm25_messages(cur, agent_id=manager.agent_id, session_id=session_id,
                                     exclude_session_id=None, terms=terms, limit=15)
            assert mine and mine == fts5, (query, session_id)


def test_counts_stay_exact_through_an_import_then_edits_and_deletes(manager, monkeypatch):
    """An import files each message's repeat counts as one row (migration 0010), and edits,
    deletes and a session's deletion keep them exact; the ranking stays bm25()'s."""
    from memory_core.imports import conversations, import_conversations, read

    monkeypatch.setattr(sqlite_rank, "WHOLE_SHARE", 0)  # always ranked from the counts
    fmt, value = read(_export(3, 12))
    summary = import_conversations(manager, fmt, conversations(fmt, value))
    ids = [s["id"] for s in summary.sessions]
    assert_exact()
    with connection.cursor() as cur:
        cur.execute("SELECT count(*) FROM arbor_search_tf")
        assert cur.fetchone()[0] == 3 * 13  # one row a message, however many repeats
    _ranked_as_bm25(manager, ids)
    first = manager.get_session(ids[0])
    history = first.get_history()
    first.update_message(assistant_msg("ledger ledger ledger canary", id=history[3].id))
    first.update_message(assistant_msg("no repeats here at all", id=history[5].id))
    first.update_message(user_msg("gateway gateway twice", id=history[6].id))
    assert_exact()
    first.delete_messages([history[1].id, history[8].id])
    assert_exact()
    _ranked_as_bm25(manager, ids)
    manager.delete(ids[1])
    fold_all()
    assert_exact()
    _ranked_as_bm25(manager, [ids[0], ids[2]])


@pytest.mark.django_db(transaction=True)
def test_migrating_the_repeat_counts_back_and_forward_keeps_them(manager, session,
                                                                 monkeypatch):
    """Migration 0010 packs 0009's rows (term, id) into one row per index row, and back."""
    from django.core.management import call_command

    monkeypatch.setattr(sqlite_rank, "WHOLE_SHARE", 0)
    session.append_messages([user_msg(f"deploy deploy rollout {i} {i}") for i in range(20)])
    session.append_message(assistant_msg("canary canary canary deploy"))
    session.append_message(assistant_msg("nothing repeated in this one"))
    before = kept()
    assert before == truth() and len(before[1]) == 2 * 20 + 1
    with connection.cursor() as cur:
        rankings = [sqlite_rank.ranked(cur, agent_id=manager.agent_id, terms=query_terms(q),
                                       matches=[f'body : "{t}"' for t in query_terms(q)],
                                       limit=10) for q in ("deploy", "canary rollout", "rollout 7")]
    assert all(rankings)
    call_command("migrate", "sessions_app", "0009_sqlite_search_counts", verbosity=0)
    with connection.cursor() as cur:
        cur.execute("SELECT term, id, tf FROM arbor_search_repeat")
        assert set(cur.fetchall()) == before[1]
    call_command("migrate", "sessions_app", verbosity=0)
    assert kept() == before
    with connection.cursor() as cur:
        assert rankings == [sqlite_rank.ranked(
            cur, agent_id=manager.agent_id, terms=query_terms(q),
            matches=[f'body : "{t}"' for t in query_terms(q)], limit=10)
            for q in ("deploy", "canary rollout", "rollout 7")]


def pending() -> int:
    with connection.cursor() as cur:
        cur.execute("SELECT count(*) FROM arbor_search_pending")
        return int(cur.fetchone()[0])


def test_deleting_a_session_folds_the_counts_it_leaves_pending(manager, session):
    # One pending row a message would make every search after it add them all up.
    other = manager.get_session(manager.create("kept").id)
    other.append_message(user_msg("kept alpha words"))
    for i in range(sqlite_counts.FOLD_AT + 10):
        session.append_message(user_msg(f"alpha beta {i}"))
    assert pending() >= sqlite_counts.FOLD_AT  # (the WAL thread cannot fold in this test)
    manager.delete(session.id)
    assert pending() == 0
    assert_exact()
    assert [h.content for h in other.search("alpha")] == ["kept alpha words"]


def test_deleting_a_few_messages_leaves_them_for_the_wal_thread(manager, session):
    ids = [session.append_message(user_msg(f"gamma {i}")).id for i in range(3)]
    session.delete_messages(ids[:1])
    assert pending() == 4  # three appends, one deletion: not worth a fold of their own
    assert_exact()
