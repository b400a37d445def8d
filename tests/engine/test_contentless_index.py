"""SQLite: the message index keeps no bodies (migration 0002), so every removal or edit
must hand FTS5 exactly the tokens the row was indexed with. After every kind of write
(append, edit, upsert, a tool result whose call is deleted first, fork, deletes by the
engine, by cascade, and a flush that deletes sessions before their messages), the
index holds exactly the tokens of the messages that exist: checked term by term
through fts5vocab against tokens rebuilt from the rows."""

from __future__ import annotations

from collections import Counter

import pytest
from django.core.management import call_command
from django.db import connection

from memory_core import SessionManager
from sessions_app.models import Agent
from sessions_app.storage.rows import message_scope
from sessions_app.storage.vendors.sqlite_index import search_tokens
from tests.conftest import assistant_msg, make_agent, user_msg

pytestmark = [pytest.mark.sqlite_only, pytest.mark.django_db(transaction=True)]


def _indexed() -> Counter[str]:
    """Documents per term in the index (fts5vocab 'row')."""
    with connection.cursor() as cur:
        cur.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.arbor_vocab "
                    "USING fts5vocab(main, arbor_message_fts, 'row')")
        cur.execute("SELECT term, doc FROM temp.arbor_vocab")
        return Counter(dict(cur.fetchall()))


def _expected() -> Counter[str]:
    """Documents per term the existing messages should have in the index."""
    counts: Counter[str] = Counter()
    with connection.cursor() as cur:
        cur.execute("SELECT m.parts, m.search_extra, s.id, s.agent_id "
                    "FROM arbor_message m JOIN arbor_session s ON s.key = m.session_key")
        for parts, extra, session_id, agent_id in cur.fetchall():
            body = " ".join([*search_tokens(parts, extra), *message_scope(session_id, agent_id)])
            # FTS5's ascii tokenizer: lower-cased runs of letters and digits (and non-ASCII).
            words = "".join(c if c.isalnum() or ord(c) > 127 else " " for c in body).lower()
            counts.update(set(words.split()))
    return counts


def _rows() -> int:
    with connection.cursor() as cur:
        cur.execute("SELECT count(*) FROM arbor_message_fts_docsize")
        return cur.fetchone()[0]


def _assert_exact() -> None:
    assert _indexed() == _expected()
    with connection.cursor() as cur:
        cur.execute("SELECT count(*) FROM arbor_message")
        assert _rows() == cur.fetchone()[0]
        cur.execute("INSERT INTO arbor_message_fts(arbor_message_fts) VALUES ('integrity-check')")


def _exchange(session, tag: str) -> None:
    session.append_messages([
        user_msg(f"Is the {tag} gateway in eu-west healthy?", id=f"{tag}-ask"),
        {"id": f"{tag}-call", "role": "assistant", "parts": [
            {"type": "text", "text": "Running the probe now."},
            {"type": "tool-call", "toolCallId": f"{tag}-hc", "toolName": "health_check",
             "input": {"service": f"{tag}-gateway", "region": "eu-west"}},
        ]},
        {"id": f"{tag}-result", "role": "tool", "parts": [
            {"type": "tool-result", "toolCallId": f"{tag}-hc",
             "output": {"summary": "host gw-eu-3.internal answered 200 OK in 42 ms"}},
        ]},
        assistant_msg(f"The {tag} gateway answered in 42 milliseconds.", id=f"{tag}-answer"),
    ])


def test_the_index_holds_exactly_the_existing_messages_after_every_write(manager):
    session = manager.get_session(manager.create("main").id)
    _exchange(session, "alpha")
    session.append_message(user_msg("Café au lait, naïve résumé: 東京の天気"))
    _assert_exact()
    with connection.cursor() as cur:
        cur.execute("SELECT search_extra FROM arbor_message WHERE message_id = 'alpha-result'")
        assert "health" in cur.fetchone()[0]  # the call's words, kept for the row's body

    session.update_message({"id": "alpha-answer", "role": "assistant",
                            "parts": [{"type": "text", "text": "It answered slowly today."}]})
    session.upsert_message({"id": "alpha-result", "role": "tool", "parts": [
        {"type": "tool-result", "toolCallId": "alpha-hc", "output": "503 after 900 ms"}]})
    _assert_exact()
    assert [h.id for h in session.search("slowly")] == ["alpha-answer"]
    assert session.search("milliseconds") == []
    assert "alpha-result" in [h.id for h in session.search("health check 503")]

    fork = manager.fork(session.id, "alpha-result", "fork")
    _assert_exact()
    assert "alpha-result" in [h.id for h in manager.get_session(fork.id).search("503")]

    # The call goes first: its result is re-parented, its index row still has the
    # call's words, and its removal must name them.
    session.delete_messages(["alpha-call"])
    _assert_exact()
    session.delete_messages(["alpha-result"])
    _assert_exact()

    _exchange(session, "beta")
    session.clear_messages()
    _assert_exact()
    assert manager.delete(fork.id)
    _assert_exact()
    assert _rows() == 0


def test_deleting_an_agent_by_cascade_empties_its_index_rows():
    agent = make_agent("cascade")
    manager = SessionManager.for_agent(agent)
    for name in ("one", "two"):
        _exchange(manager.get_session(manager.create(name).id), name)
    kept = SessionManager.for_agent(make_agent("kept"))
    _exchange(kept.get_session(kept.create("kept").id), "kept")
    Agent.objects.filter(id=agent.id).delete()  # the ORM's cascade, as the admin does
    _assert_exact()
    assert _rows() == 4


def test_a_flush_that_empties_sessions_first_leaves_no_index_rows(manager, monkeypatch):
    """The message triggers cannot name the rows of a session already gone; the flush's
    post_migrate empties the index it leaves without messages."""
    _exchange(manager.get_session(manager.create("flushed").id), "gamma")
    introspection = connection.introspection
    tables = introspection.django_table_names
    monkeypatch.setattr(introspection, "django_table_names", lambda *a, **k: sorted(
        tables(*a, **k), key=lambda t: t != "arbor_session"))
    call_command("flush", interactive=False, verbosity=0)
    assert _rows() == 0
    assert _indexed() == Counter()
