"""Repeated history reads are served from the process's path cache (storage/path_cache.py)
after one query, and every kind of write is seen by the next read. Run outside a test
transaction: reads inside one bypass the cache."""

from __future__ import annotations

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from sessions_app.storage import path_cache, sql
from tests.conftest import assistant_msg, user_msg

pytestmark = [pytest.mark.django_db(transaction=True),
              pytest.mark.usefixtures("empty_path_cache")]


def _queries(read):
    with CaptureQueriesContext(connection) as captured:
        result = read()
    return result, len(captured.captured_queries)


def _texts(session, leaf_id=None):
    return [m.text for m in session.get_history(leaf_id)]


def test_a_repeated_read_is_one_query_and_returns_the_same_messages(session):
    for i in range(30):
        session.append_message(user_msg(f"m{i}") if i % 2 == 0 else assistant_msg(f"m{i}"))
    first, cold = _queries(session.get_history)
    again, warm = _queries(session.get_history)
    assert again == first and [m.text for m in again] == [f"m{i}" for i in range(30)]
    assert (cold, warm) == (2, 1)
    # A path to an explicit leaf is cached on its own.
    leaf = first[9].id
    assert _queries(lambda: session.get_history(leaf))[1] == 2
    partial, warm = _queries(lambda: session.get_history(leaf))
    assert warm == 1 and [m.id for m in partial] == [m.id for m in first[:10]]


def test_every_write_is_seen_by_the_next_read(session):
    q = session.append_message(user_msg("question"))
    a = session.append_message(assistant_msg("first answer"))
    assert _texts(session) == ["question", "first answer"]

    session.append_message(user_msg("follow-up"))  # append under the leaf
    assert _texts(session) == ["question", "first answer", "follow-up"]

    session.update_message({"id": a.id, "role": "assistant",  # rewrite in place
                            "parts": [{"type": "text", "text": "edited answer"}]})
    assert _texts(session) == ["question", "edited answer", "follow-up"]

    b = session.append_message(assistant_msg("second answer"), q.id)  # a branch
    assert _texts(session) == ["question", "second answer"]
    assert _texts(session, a.id) == ["question", "edited answer"]

    session.delete_messages([b.id])
    assert _texts(session) == ["question", "edited answer", "follow-up"]

    session.clear_messages()
    assert session.get_history() == []


def test_overlays_are_read_fresh_with_a_cached_path(session):
    ids = [session.append_message(user_msg(f"m{i}")).id for i in range(6)]
    session.get_history()
    overlay = session.add_compaction("the first three", ids[0], ids[2])
    assert _texts(session)[0].endswith("the first three") and len(session.get_history()) == 4
    session.remove_compaction(overlay.id)
    assert _texts(session) == [f"m{i}" for i in range(6)]


def test_a_row_written_around_the_engine_is_seen(session):
    session.append_message(user_msg("one"))
    last = session.append_message(assistant_msg("two"))
    session.get_history()
    with connection.cursor() as cur:  # an insert that moves no counter: max(seq) moves
        cur.execute("INSERT INTO arbor_message (session_key, message_id, parent_seq, "
                    "role, parts, metadata, search_len, created_at) "
                    "SELECT session_key, 'raw', seq, 'user', %s, '{}', 0, created_at "
                    f"FROM arbor_message WHERE {sql.ID_ANCHOR}",
                    ['[{"type": "text", "text": "three"}]', session.id, last.id])
    assert _texts(session) == ["one", "two", "three"]


def test_callers_may_change_what_they_read(session):
    session.append_message(user_msg("kept as stored", metadata={"note": "x"}))
    mine = session.get_history()
    mine[0].parts[0]["text"] = "changed by a caller"
    mine[0].metadata["note"] = "y"
    again = session.get_history()
    assert again[0].text == "kept as stored" and again[0].metadata == {"note": "x"}


def test_reads_inside_a_transaction_bypass_the_cache(session):
    session.append_message(user_msg("committed"))
    session.get_history()
    with transaction.atomic():
        session.append_message(user_msg("inside"))
        assert _texts(session) == ["committed", "inside"]
        assert _queries(session.get_history)[1] == 2  # read from the tables
        transaction.set_rollback(True)
    assert _texts(session) == ["committed"]


def test_the_cache_is_bounded_and_can_be_turned_off(session, manager, settings):
    settings.ARBOR_PATH_CACHE_MB = 5 * 300 / 2**20  # room for about five short messages
    other = manager.get_session(manager.create("other").id)
    for i in range(4):
        session.append_message(user_msg(f"a{i}"))
        other.append_message(user_msg(f"b{i}"))
    session.get_history()
    other.get_history()  # eight messages: the older path is dropped
    assert _queries(session.get_history)[1] == 2
    settings.ARBOR_PATH_CACHE_MB = 0
    assert _queries(session.get_history)[1] == 2 and _texts(session) == [f"a{i}" for i in range(4)]


def test_encoded_reads_share_the_cached_rows(session):
    import orjson

    session.append_message(user_msg("héllo", metadata={"lang": "fr", "n": [1, 2.5]}))
    plain = session.get_history()
    encoded = session.get_history(encoded=True)
    again, count = _queries(lambda: session.get_history(encoded=True))
    assert count == 1 and [m.id for m in again] == [m.id for m in encoded]
    assert orjson.loads(orjson.dumps(encoded[0].parts)) == plain[0].parts
    assert orjson.loads(orjson.dumps(encoded[0].metadata)) == plain[0].metadata


def test_a_kept_encoded_path_carries_its_json_until_an_overlay_applies(session):
    import orjson

    ids = [session.append_message(user_msg(f"m{i}", metadata={"i": i})).id for i in range(4)]
    expected = [m.to_dict() for m in session.get_history()]
    session.get_history(encoded=True)  # kept, with its JSON
    again = session.get_history(encoded=True)
    assert orjson.loads(again.json) == expected
    assert orjson.loads(session.get_history(raw=True, encoded=True).json) == expected
    session.add_compaction("the first three", ids[0], ids[2])
    shown = session.get_history(encoded=True)  # a summary replaces three: no carried JSON
    assert getattr(shown, "json", None) is None and len(shown) == 2
    assert orjson.loads(session.get_history(raw=True, encoded=True).json) == expected


def test_the_carried_json_counts_toward_the_bound(session):
    session.append_message(user_msg("x" * 1000))
    session.get_history()
    before = path_cache.paths._bytes
    session.get_history(encoded=True)
    assert path_cache.paths._bytes > before + 1000
