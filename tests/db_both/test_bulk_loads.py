"""Bulk loads (append_all and the batch endpoint, import, fork) on both databases: all or
nothing, their events emitted, search finding every message with the ranking one-by-one
appends give, and a fixed number of queries whatever the batch's size."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from memory_core import Conflict, SessionManager
from memory_core.imports import conversations, import_conversations, read
from memory_core.imports.tree import BadExport
from memory_core.transfer import export_session, import_session
from sessions_app.live import events as sink_module
from sessions_app.live.events import events_after
from sessions_app.models import Message, Session, SessionEvent
from tests.conftest import assistant_msg, make_agent, user_msg

WORDS = ("lisbon flight train porto budget hotel museum tram coffee river bridge castle "
         "garden market beach sunset dinner ticket station morning").split()
QUERIES = ["lisbon hotel", "porto train ticket", "coffee", "sunset beach dinner", "lookup_fare",
           "castle garden museum"]


def chat(n: int, tag: str = "") -> list[dict[str, Any]]:
    """n messages of varied words, with a tool call and its result (split form) every
    tenth pair: the result's index carries the call's name and input."""
    out: list[dict[str, Any]] = []
    for i in range(n):
        words = " ".join(WORDS[(i * 7 + k * 3) % len(WORDS)] for k in range(1 + i % 6))
        if i % 20 == 18:
            out.append(assistant_msg("", parts=[{"type": "tool-call", "toolCallId": f"c{tag}{i}",
                                                 "toolName": "lookup_fare",
                                                 "input": {"city": WORDS[i % 20]}}]))
        elif i % 20 == 19:
            out.append({"role": "tool", "parts": [{"type": "tool-result",
                                                   "toolCallId": f"c{tag}{i - 1}",
                                                   "toolName": "lookup_fare",
                                                   "output": f"{i} euros"}]})
        else:
            out.append(user_msg(f"{words} {i}") if i % 2 == 0 else assistant_msg(words))
    return out


def hits(found: Any) -> list[tuple[str, str, float]]:
    """A hit list as (role, text, score), comparable across sessions and agents."""
    return [(h.role, h.content, round(h.score, 6)) for h in found]


def count_queries(fn: Any) -> int:
    with CaptureQueriesContext(connection) as ctx:
        fn()
    return len([q for q in ctx.captured_queries
                if "SAVEPOINT" not in q["sql"] and not q["sql"].startswith("RELEASE")])


def stored_rows(session_id: str) -> int:
    return Message.objects.filter(session__id=session_id).count()


@pytest.fixture
def twins(db) -> tuple[SessionManager, SessionManager]:
    """Two agents of one user: the same messages loaded in bulk into one, one by one into
    the other."""
    return (SessionManager.for_agent(make_agent("bulk-a")),
            SessionManager.for_agent(make_agent("bulk-b")))


def test_append_all_ranks_as_one_by_one_appends(twins):
    bulk, single = twins
    messages = chat(120)
    b = bulk.get_session(bulk.create("bulk").id)
    s = single.get_session(single.create("single").id)
    b.append_message(messages[0])  # the batch continues a stored line (tool calls above it)
    s.append_message(messages[0])
    for start in range(1, len(messages), 50):
        b.append_messages(messages[start:start + 50])
    for m in messages[1:]:
        s.append_message(m)
    assert [m.text for m in b.get_history()] == [m.text for m in s.get_history()]
    for q in QUERIES:
        got = hits(b.search(q, limit=50))
        assert got and got == hits(s.search(q, limit=50)), q
        assert hits(bulk.search(q, limit=50)) == hits(single.search(q, limit=50)), q
    # a tool result is found by its call's name, the call being stored before the batch
    assert any(h.role == "tool" for h in b.search("lookup_fare", limit=50))


def test_imports_and_forks_rank_as_the_original(twins):
    bulk, single = twins
    source = single.get_session(single.create("source").id)
    for m in chat(80, "s"):
        source.append_message(m)
    copy = import_session(bulk, orjson.loads(orjson.dumps(export_session(single, source.id))))
    leaf = source.get_latest_leaf()
    fork = single.fork(source.id, leaf.id)
    for q in QUERIES:
        want = hits(source.search(q, limit=50))
        assert want and hits(bulk.get_session(copy.id).search(q, limit=50)) == want, q
        assert hits(single.get_session(fork.id).search(q, limit=50)) == want, q


def test_a_failure_mid_batch_stores_nothing(manager, session, monkeypatch):
    session.append_message(user_msg("before the batch"))
    before = session.get_history()

    def broken(events: Any) -> None:  # after the rows went in, inside the transaction
        raise RuntimeError("the outbox is full")

    monkeypatch.setattr(sink_module.ChannelsSink, "emit_many", lambda self, es: broken(es))
    with pytest.raises(RuntimeError):
        session.append_messages([user_msg("lost lisbon"), assistant_msg("lost porto")])
    monkeypatch.undo()
    # A chain whose third message clashes with its first: the whole chain is refused.
    with pytest.raises(Conflict):
        session.append_messages([user_msg("lost one", id="x1"), assistant_msg("lost two"),
                                 user_msg("other content", id="x1")])
    assert session.get_history() == before
    assert stored_rows(session.id) == 1 and manager.get(session.id).message_count == 1
    assert manager.search("lost") == [] and session.search("lisbon porto") == []
    assert len(SessionEvent.objects.filter(session__id=session.id, type="message.appended")) == 1


def test_a_bad_conversation_late_in_a_file_imports_nothing(manager):
    good = [{"title": f"trip {c}", "create_time": 1_700_000_000, "update_time": 1_700_000_100,
             "conversation_id": f"t{c}", "current_node": f"t{c}b", "mapping": {
                 f"t{c}a": {"id": f"t{c}a", "parent": None, "children": [f"t{c}b"],
                            "message": {"id": f"t{c}a", "author": {"role": "user"},
                                        "content": {"content_type": "text",
                                                    "parts": ["imported lisbon"]}}},
                 f"t{c}b": {"id": f"t{c}b", "parent": f"t{c}a", "children": [],
                            "message": {"id": f"t{c}b", "author": {"role": "assistant"},
                                        "content": {"content_type": "text",
                                                    "parts": ["imported porto"]}}}}}
            for c in range(3)]
    bad = dict(good[0], conversation_id="bad", current_node="zz",
               mapping={"zz": {"id": "zz", "parent": "missing", "children": [],
                               "message": None}})
    fmt, value = read(orjson.dumps([*good, bad]))
    with pytest.raises(BadExport):
        import_conversations(manager, fmt, conversations(fmt, value))
    assert manager.list() == [] and manager.search("imported") == []
    assert Message.objects.count() == 0


def test_append_all_emits_every_event_in_order(manager, session, monkeypatch,
                                                django_capture_on_commit_callbacks):
    first = session.append_message(user_msg("root"))
    session.append_message(assistant_msg("first answer"))
    published: list[dict[str, Any]] = []
    monkeypatch.setattr(sink_module, "publish", published.append)
    with django_capture_on_commit_callbacks(execute=True):
        stored = session.append_messages([assistant_msg("second answer"), user_msg("more"),
                                          assistant_msg("and more")], parent_id=first.id)
    frames = events_after(session.id, 3)  # (the session's status, then the two appends)
    assert [(f["type"], f["seq"]) for f in frames] == [
        ("message.appended", 4), ("branch.created", 5), ("message.appended", 6),
        ("message.appended", 7)]
    assert [f["data"]["message"]["id"] for f in frames if f["type"] == "message.appended"] == [
        m.id for m in stored]
    assert frames[1]["data"] == {"message_id": stored[0].id, "parent_id": first.id}
    assert [(f["type"], f["seq"]) for f in published] == [(f["type"], f["seq"]) for f in frames]
    assert Session.objects.get(id=session.id).branched  # read as a tree from now on


def test_append_all_replays_a_stored_batch(session):
    batch = [user_msg("same", id="r1"), assistant_msg("again", id="r2")]
    first = session.append_messages(batch)
    assert session.append_messages(batch) == first  # a retried batch: nothing new
    assert stored_rows(session.id) == 2


def test_a_batch_costs_the_same_queries_whatever_its_length(manager):
    def load(n: int) -> int:
        s = manager.get_session(manager.create(f"q{n}").id)
        s.append_message(user_msg("start"))
        return count_queries(lambda: s.append_messages(chat(n)))

    assert load(30) == load(400)  # (both with tool results: their calls are looked up once)


def test_imports_and_forks_cost_the_same_queries_whatever_their_size(manager):
    def sized(n: int) -> tuple[int, int]:
        source = manager.get_session(manager.create(f"src{n}").id)
        source.append_messages(chat(n, str(n)))
        document = orjson.loads(orjson.dumps(export_session(manager, source.id)))
        leaf = source.get_latest_leaf()
        return (count_queries(lambda: import_session(manager, document)),
                count_queries(lambda: manager.fork(source.id, leaf.id)))

    assert sized(10) == sized(150)


def test_an_import_costs_a_fixed_number_of_queries_per_conversation(manager):
    def file(conversations_: int, messages: int, tag: str) -> bytes:
        out = []
        for c in range(conversations_):
            ids = [f"{tag}{c}m{i}" for i in range(messages)]
            mapping = {nid: {"id": nid, "parent": ids[i - 1] if i else None,
                             "children": [ids[i + 1]] if i + 1 < messages else [],
                             "message": {"id": nid,
                                         "author": {"role": "user" if i % 2 == 0 else "assistant"},
                                         "content": {"content_type": "text",
                                                     "parts": [f"words {i}"]}}}
                       for i, nid in enumerate(ids)}
            out.append({"title": f"c{c}", "conversation_id": f"{tag}{c}", "mapping": mapping,
                        "current_node": ids[-1], "create_time": 1_700_000_000,
                        "update_time": 1_700_000_000})
        return orjson.dumps(out)

    def cost(body: bytes) -> int:
        fmt, value = read(body)
        return count_queries(lambda: import_conversations(manager, fmt, conversations(fmt, value)))

    one_short, one_long = cost(file(1, 4, "a")), cost(file(1, 120, "b"))
    five = cost(file(5, 30, "c"))
    assert one_short == one_long  # not per message
    per_conversation = (five - one_short) / 4
    assert per_conversation == int(per_conversation) and per_conversation <= 12


@pytest.mark.postgres_only
def test_term_statistics_stay_exact_through_bulk_loads(manager, session):
    from tests.db_both.test_search_stats import assert_exact

    session.append_messages(chat(60))
    source = manager.get_session(manager.create("src").id)
    source.append_messages(chat(40, "x"))
    import_session(manager, orjson.loads(orjson.dumps(export_session(manager, source.id))))
    manager.fork(source.id, source.get_latest_leaf().id)
    assert_exact()


@pytest.mark.postgres_only
def test_a_bulk_write_skips_only_its_own_copy_in_the_term_trigger(manager, session):
    """The flag that tells the insert trigger the batch was counted already is spent by
    the batch's own COPY: a write after it in the same transaction is counted, and the
    flag is clear again."""
    from django.db import transaction

    from tests.db_both.test_search_stats import assert_exact

    with transaction.atomic():
        session.append_messages(chat(30))
        with connection.cursor() as cur:
            cur.execute("SELECT current_setting('arbor.terms_counted', true)")
            assert cur.fetchone()[0] in ("", None)
        session.append_message(user_msg("zanzibar quokka after the batch"))
        session.append_messages(chat(10, "y"))
        session.append_message(user_msg("quokka again"))
    assert_exact()
    assert manager.search("zanzibar quokka")


@pytest.mark.postgres_only
def test_an_import_of_many_conversations_adds_its_term_counts_once(manager):
    """Each conversation's counts are held to the import's end and added by one statement
    (updating the same counter rows once per conversation left each later update more
    row versions to walk), and the counts are exact after it."""
    from tests.db_both.test_search_stats import assert_exact

    body = orjson.dumps([{"title": f"c{c}", "conversation_id": f"many{c}", "current_node": "b",
                          "create_time": 1_700_000_000, "update_time": 1_700_000_000,
                          "mapping": {"a": {"id": "a", "parent": None, "children": ["b"],
                                            "message": {"id": "a", "author": {"role": "user"},
                                                        "content": {"content_type": "text",
                                                                    "parts": [f"lisbon {c}"]}}},
                                      "b": {"id": "b", "parent": "a", "children": [],
                                            "message": {"id": "b",
                                                        "author": {"role": "assistant"},
                                                        "content": {"content_type": "text",
                                                                    "parts": ["porto train"]}}}}}
                         for c in range(6)])
    fmt, value = read(body)
    with CaptureQueriesContext(connection) as ctx:
        import_conversations(manager, fmt, conversations(fmt, value))
    added = [q for q in ctx.captured_queries if "INSERT INTO arbor_term_df" in q["sql"]]
    assert len(added) == 1
    assert_exact()


@pytest.mark.postgres_only
def test_a_bulk_write_in_a_savepoint_rolled_back_leaves_the_counts_exact(manager, session):
    """Counts held for the transaction's end are not those of a write undone by a rollback
    to a savepoint: writes within one count at once."""
    from django.db import transaction

    from tests.db_both.test_search_stats import assert_exact

    with manager.storage.transaction(bulk_writes=True):
        session.append_messages(chat(12))
        with pytest.raises(RuntimeError), transaction.atomic():
            session.append_messages(chat(8, "undone"))
            raise RuntimeError
        session.append_messages(chat(5, "after"))
    assert_exact()


@pytest.mark.parametrize("updated_at", ["2024-05-01T10:00:00.123456+02:00",
                                        "2024-05-01T08:00:00.123456Z"])
def test_a_restored_session_is_described_as_read_back(manager, updated_at):
    """restore_session describes the new row without reading it back: the same as a read,
    times included (given as text with an offset, as a JSON document has them)."""
    source = manager.get_session(manager.create("described").id)
    source.append_messages(chat(6))
    document = orjson.loads(orjson.dumps(export_session(manager, source.id)))
    document["session"]["updated_at"] = updated_at
    info = import_session(manager, document)
    assert info.to_dict() == manager.get(info.id).to_dict()
    fmt, value = read(orjson.dumps([{
        "title": "t", "conversation_id": "described", "current_node": "a",
        "create_time": 1_700_000_000.5, "update_time": 1_700_000_100.25,
        "mapping": {"a": {"id": "a", "parent": None, "children": [], "message": {
            "id": "a", "author": {"role": "user"},
            "content": {"content_type": "text", "parts": ["hello"]}}}}}]))
    summary = import_conversations(manager, fmt, conversations(fmt, value))
    imported = manager.get(summary.sessions[0]["id"])
    assert imported.message_count == 1
