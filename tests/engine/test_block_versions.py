"""Block versions (issue 32): every write kept, with its actor and source; history, diff,
restore and the context as of a message; bounded; deletes; query counts."""

from __future__ import annotations

import json

import pytest

from memory_core import InvalidInput, NotFound, OverBudget, ReadOnly, SessionManager
from tests.conftest import assistant_msg, user_msg
from tests.engine.test_chat import make_manager, openai
from tests.llm.fakes import FakeServer, Reply, openai_completion, openai_tool_call


@pytest.fixture
def blocks_manager(agent):
    return (
        SessionManager.for_agent(agent)
        .with_context("soul", content="You are Arbor.", kind="readonly")
        .with_context("memory", description="Learned facts", max_tokens=50)
        .with_context("profile", scope="agent")
        .with_context("skills", kind="skill")
        .with_context("knowledge", kind="search")
    )


@pytest.fixture
def s(blocks_manager):
    return blocks_manager.get_session(blocks_manager.create("v").id)


def numbers(session, label):
    return [v.number for v in session.block_versions(label).items]


def test_every_write_is_a_numbered_version_newest_first(s):
    s.replace_context_block("memory", "one")
    s.append_context_block("memory", "two")
    page = s.block_versions("memory")
    assert [(v.number, v.action, v.content) for v in page.items] == [
        (2, "append", "one\ntwo"), (1, "replace", "one")]
    assert page.next_cursor is None
    v = page.items[0]
    assert (v.actor, v.actor_id, v.message_id, v.session_id) == ("system", None, None, s.id)


def test_write_that_changes_nothing_makes_no_version(s):
    s.replace_context_block("memory", "same")
    s.replace_context_block("memory", "same")
    s.replace_context_block("memory", "")  # back to the declared empty value: a change
    s.replace_context_block("memory", "")
    assert numbers(s, "memory") == [2, 1]
    other = s.context  # a block never written, written with its declared value
    assert other.replace_context_block("memory", "") is not None
    assert numbers(s, "memory") == [2, 1]


def test_first_write_equal_to_declared_content_makes_no_version(agent):
    manager = SessionManager.for_agent(agent).with_context("notes", content="start")
    session = manager.get_session(manager.create("x").id)
    session.replace_context_block("notes", "start")
    assert numbers(session, "notes") == []


def test_leaf_is_the_latest_leaf_and_actor_comes_from_acting(s):
    s.append_message(user_msg("hi"))
    leaf = s.append_message(assistant_msg("hello"))
    with s.acting("api", 7):
        s.replace_context_block("memory", "x")
    v = s.block_version("memory", 1)
    assert (v.actor, v.actor_id, v.leaf_id, v.message_id) == ("api", "7", leaf.id, None)
    s.replace_context_block("memory", "y")
    assert s.block_version("memory", 2).actor == "system"


def test_pages_follow_the_cursor(s):
    for i in range(5):
        s.replace_context_block("memory", f"v{i}")
    first = s.block_versions("memory", limit=2)
    assert [v.number for v in first.items] == [5, 4] and first.next_cursor == 4
    second = s.block_versions("memory", limit=2, before=first.next_cursor)
    assert [v.number for v in second.items] == [3, 2]
    third = s.block_versions("memory", limit=2, before=second.next_cursor)
    assert [v.number for v in third.items] == [1] and third.next_cursor is None


def test_diff_restore_and_bad_input(s):
    s.replace_context_block("memory", "a\nb")
    s.replace_context_block("memory", "a\nc")
    diff = s.block_diff("memory", 2)
    assert "-b" in diff and "+c" in diff and diff.startswith("--- memory v1")
    assert s.block_diff("memory", 2, 2) == ""
    assert "+a" in s.block_diff("memory", 1)
    restored = s.restore_block("memory", 1)
    assert (restored.number, restored.action, restored.restored_from) == (3, "restore", 1)
    assert s.get_context_block("memory").content == "a\nb"
    with pytest.raises(NotFound):
        s.block_version("memory", 9)
    with pytest.raises(NotFound):
        s.block_versions("nope")
    with pytest.raises(InvalidInput):
        s.block_diff("memory", 1, 2)
    with pytest.raises(ReadOnly):
        s.restore_block("soul", 1)


def test_restore_over_budget_is_refused_and_changes_nothing(agent):
    big = SessionManager.for_agent(agent).with_context("memory", max_tokens=500)
    session = big.get_session(big.create("b").id)
    session.replace_context_block("memory", "word " * 100)
    session.replace_context_block("memory", "short")
    tight = SessionManager.for_agent(agent).with_context("memory", max_tokens=50)
    again = tight.get_session(session.id)
    with pytest.raises(OverBudget):
        again.restore_block("memory", 1)
    assert numbers(again, "memory") == [2, 1]
    assert again.get_context_block("memory").content == "short"


def test_restore_emits_context_updated(agent):
    from tests.engine.test_events import Recorder

    sink = Recorder()
    manager = SessionManager.for_agent(agent).with_events(sink).with_context("memory")
    session = manager.get_session(manager.create("e").id)
    session.replace_context_block("memory", "one")
    session.replace_context_block("memory", "two")
    sink.take()
    session.restore_block("memory", 1)
    assert [(e.type, e.data) for e in sink.take()] == [
        ("context.updated", {"label": "memory", "action": "restore", "number": 1})]


def test_keyed_blocks_keep_entries_with_their_sources(s):
    s.append_message(user_msg("teach me"))
    carrier = s.append_message(assistant_msg("saving"))
    with s.acting("model", message_id=carrier.id, leaf_id=carrier.id):
        s.set_context_entry("knowledge", "deploy", "use make deploy")
    s.set_context_entry("knowledge", "tests", "run make test")
    newest = s.block_version("knowledge", 2)
    assert [e["key"] for e in newest.entries] == ["deploy", "tests"]
    assert newest.entries[0]["source"] == {"message_id": carrier.id, "leaf_id": carrier.id}
    assert newest.entries[1]["source"]["message_id"] is None
    entry = s.get_context_entry("knowledge", "deploy")
    assert entry.source == {"message_id": carrier.id, "leaf_id": carrier.id}
    s.set_context_entry("knowledge", "tests", "run make test")  # unchanged
    assert numbers(s, "knowledge") == [2, 1]
    s.restore_block("knowledge", 1)
    with pytest.raises(NotFound):
        s.get_context_entry("knowledge", "tests")
    assert [e["key"] for e in s.block_version("knowledge", 3).entries] == ["deploy"]


def test_skill_load_and_unload_are_versions(s):
    s.set_context_entry("skills", "git", "how to git", "Git basics")
    s.load_skill("skills", "git")
    s.unload_skill("skills", "git")
    page = s.block_versions("skills").items
    assert [(v.action, v.key, v.loaded) for v in page] == [
        ("unload", "git", []), ("load", "git", ["git"]), ("set_entry", "git", [])]
    s.restore_block("skills", 2)
    assert [k["key"] for k in s.get_loaded_skills()] == ["git"]


def test_memory_tool_in_a_chat_turn_is_the_models_write(agent):
    with FakeServer() as server:
        args = json.dumps({"label": "memory", "content": "- likes tea"})
        server.script(
            Reply(body=openai_completion(None, tool_calls=[
                openai_tool_call("call_1", "set_context", args)], finish_reason="tool_calls")),
            Reply(body=openai_completion("Saved.")))
        manager = make_manager(agent, openai(server))
        session = manager.get_session(manager.create("c").id)
        session.chat("Remember that I like tea")
    carrier = session.get_history()[1]
    v = session.block_version("memory", 1)
    assert (v.actor, v.message_id, v.leaf_id, v.content) == (
        "model", carrier.id, carrier.id, "- likes tea")


def test_context_as_of_a_message_on_any_branch(s):
    first = s.append_message(user_msg("one"))
    s.replace_context_block("memory", "before branch")
    second = s.append_message(user_msg("two"))
    s.replace_context_block("memory", "after two")
    other = s.append_message(user_msg("other branch"), parent_id=first.id)
    at = {b.label: b.content for b in s.context_as_of(first.id)}
    assert at["memory"] == "" and at["soul"] == "You are Arbor."
    assert {b.label: b.content for b in s.context_as_of(second.id)}["memory"] == "before branch"
    assert {b.label: b.content for b in s.context_as_of(other.id)}["memory"] == "after two"
    with pytest.raises(NotFound):
        s.context_as_of("missing")


def test_as_of_a_message_of_another_session_is_not_found(s, blocks_manager):
    elsewhere = blocks_manager.get_session(blocks_manager.create("o").id)
    foreign = elsewhere.append_message(user_msg("x"))
    with pytest.raises(NotFound):
        s.context_as_of(foreign.id)


def test_versions_are_bounded_oldest_pruned(agent):
    manager = SessionManager.for_agent(agent).with_context("memory")
    manager.config.block_versions = 3
    session = manager.get_session(manager.create("p").id)
    for i in range(6):
        session.replace_context_block("memory", f"v{i}")
    assert numbers(session, "memory") == [6, 5, 4]
    assert session.block_diff("memory", 4).startswith("--- memory (empty)")


def test_deleting_the_writing_message_marks_the_source(s):
    s.append_message(user_msg("hi"))
    carrier = s.append_message(assistant_msg("noting"))
    with s.acting("model", message_id=carrier.id, leaf_id=carrier.id):
        s.replace_context_block("memory", "noted")
    s.delete_messages([carrier.id])
    v = s.block_version("memory", 1)
    assert v.message_id == carrier.id and v.to_dict()["source"]["deleted"] is True
    assert v.content == "noted"


def test_deleting_a_session_deletes_its_versions(s, blocks_manager):
    from sessions_app.models import BlockVersion

    s.replace_context_block("memory", "x")
    s.replace_context_block("profile", "agent-wide")
    blocks_manager.delete(s.id)
    assert not BlockVersion.objects.filter(session_id=s.id).exists()
    kept = BlockVersion.objects.get(key__endswith=":profile")
    assert kept.source_deleted is True


def test_fork_keeps_the_blocks_history(s, blocks_manager):
    m = s.append_message(user_msg("hi"))
    s.replace_context_block("memory", "one")
    s.replace_context_block("memory", "two")
    fork = blocks_manager.get_session(blocks_manager.fork(s.id, m.id, "f").id)
    assert numbers(fork, "memory") == [2, 1]
    fork.replace_context_block("memory", "three")
    assert numbers(fork, "memory") == [3, 2, 1] and numbers(s, "memory") == [2, 1]


@pytest.mark.parametrize("writes", [1, 30])
def test_set_context_query_count_does_not_grow(s, writes, vendor, django_assert_num_queries):
    for i in range(writes):
        s.replace_context_block("memory", f"v{i}")
    tool = {t.name: t for t in s.tools()}["set_context"]
    # blocks, savepoint, (Postgres: the session row lock), head (newest version and latest
    # leaf), value UPDATE, version INSERT, event, release
    with django_assert_num_queries(8 if vendor == "postgresql" else 7):
        assert tool.execute({"label": "memory", "content": "new"}).startswith("Updated")
    assert numbers(s, "memory")[0] == writes + 1


def test_export_import_export_carries_versions_byte_identical(s, blocks_manager):
    from memory_core.transfer import export_session, import_session
    from sessions_app.api.render import dumps

    s.add_context("notes", max_tokens=50)  # exports carry the session's own blocks
    s.add_context("kb", kind="search")
    s.append_message(user_msg("hi"))
    carrier = s.append_message(assistant_msg("noted"))
    with s.acting("model", 3, message_id=carrier.id, leaf_id=carrier.id):
        s.replace_context_block("notes", "one")
        s.set_context_entry("kb", "k", "v")
    with s.acting("api", 9):
        s.append_context_block("notes", "two")
    s.restore_block("notes", 1)
    document = export_session(blocks_manager, s.id)
    notes = next(b for b in document["blocks"] if b["label"] == "notes")
    assert [(v["number"], v["actor"], v["message_id"]) for v in notes["versions"]] == [
        (1, "model", carrier.id), (2, "api", None), (3, "system", None)]
    blocks_manager.delete(s.id)
    info = import_session(blocks_manager, document)
    again = export_session(blocks_manager, info.id)
    assert dumps(again) == dumps(document)
    imported = blocks_manager.get_session(info.id)
    assert imported.block_version("kb", 1).entries[0]["source"]["message_id"] == carrier.id
    assert [v.number for v in imported.block_versions("notes").items] == [3, 2, 1]


def test_importing_an_older_document_makes_import_versions(s, blocks_manager):
    from memory_core.transfer import export_session, import_session

    s.add_context("notes")
    s.replace_context_block("notes", "kept")
    document = export_session(blocks_manager, s.id)
    for block in document["blocks"]:
        block.pop("versions")
    info = import_session(blocks_manager, document)
    v = blocks_manager.get_session(info.id).block_version("notes", 1)
    assert (v.actor, v.action, v.content) == ("import", "replace", "kept")
