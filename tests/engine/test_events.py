"""The engine emits every write through one sink (SPEC §10): a write method that emits
nothing fails here, and so does a new public method nobody classified."""

from __future__ import annotations

import inspect
from typing import Any

import pytest

from memory_core import SessionManager
from memory_core.compaction import create_compact_function
from memory_core.errors import CompactionError, Conflict, NotFound
from memory_core.events import EVENT_TYPES, Event
from memory_core.llm.demo import DemoModel
from memory_core.session import Session
from memory_core.transfer import export_session, import_session
from tests.conftest import assistant_msg, user_msg


class Recorder:
    def __init__(self) -> None:
        self.events: list[Event] = []

    def emit(self, event: Event) -> None:
        assert event.type in EVENT_TYPES
        self.events.append(event)

    def types(self) -> list[str]:
        return [e.type for e in self.events]

    def take(self) -> list[Event]:
        taken, self.events = self.events, []
        return taken


@pytest.fixture
def sink() -> Recorder:
    return Recorder()


@pytest.fixture
def mgr(agent, sink) -> SessionManager:
    return (SessionManager.for_agent(agent).with_events(sink).with_llm(DemoModel())
            .with_context("memory", description="Learned facts", max_tokens=500)
            .on_compaction(create_compact_function(lambda prompt: "a summary", protect_head=1,
                                                   tail_token_budget=20)))


@pytest.fixture
def s(mgr, sink) -> Session:
    session = mgr.get_session(mgr.create("events").id)
    sink.take()  # its creation's session.status
    return session


def talk(session: Session, n: int) -> list[Any]:
    return [session.append_message(user_msg(f"line {i} " + "words " * 20)) for i in range(n)]


# Reads: public methods that write nothing a subscriber sees.
SESSION_READS = {
    "get_message", "get_history", "get_latest_leaf", "get_branches", "get_path_length",
    "get_newest_leaf_under", "get_path_page", "get_tree", "get_message_count", "search", "get_compactions", "compaction_status",
    "get_context_block", "get_context_blocks", "get_context_entry", "system_prompt_status",
    "preview_system_prompt",
    "get_loaded_skills", "tools",
    # Stores the prompt on first use only; the bytes are what a render gives, nothing changes.
    "freeze_system_prompt",
    # The emitting machinery itself.
    "emit", "writing",
    # Block versions (versions.py): reads, and who the writes inside a block are by.
    "block_versions", "block_version", "block_diff", "context_as_of", "acting",
}
MANAGER_READS = {
    "get", "list", "get_session", "bind", "tools", "get_history", "get_message_count",
    "get_compactions", "search",
    # Builders: configure this manager, write nothing.
    "with_context", "with_cached_prompt", "with_token_counter", "with_llm", "on_compaction",
    "compact_after", "on_compaction_error", "on_compacted", "with_searchable_history",
    "with_events", "for_agent", "announce_new",
}


def _session_writes(s: Session) -> dict[str, Any]:
    def prepared() -> None:
        s.add_context("skills", kind="skill")
        s.set_context_entry("skills", "deploy", "Run make deploy.", "How to deploy")

    first = s.append_message(user_msg("hello"))

    def compaction_id() -> str:
        msgs = talk(s, 6)
        return s.add_compaction("sum", msgs[1].id, msgs[3].id).id

    return {
        "append_message": lambda: s.append_message(assistant_msg("hi")),
        "upsert_message": lambda: s.upsert_message(assistant_msg("hi", id="u1")),
        "update_message": lambda: s.update_message(user_msg("hello again", id=first.id)),
        "append_messages": lambda: s.append_messages([user_msg("a"), assistant_msg("b")]),
        "delete_messages": lambda: s.delete_messages([first.id]),
        "clear_messages": lambda: s.clear_messages(),
        "add_compaction": lambda: compaction_id(),
        "remove_compaction": lambda: (lambda cid: (s.take_events(), s.remove_compaction(cid)))(
            compaction_id()),
        "chat": lambda: s.chat("remember that I like tea"),
        "achat": None,  # the async twin of chat: runs the same turn (test_async_twins)
        "regenerate": lambda: (lambda answer: (s.take_events(), s.regenerate(answer.id)))(
            s.chat("hello there")),
        "aregenerate": None,  # the async twin of regenerate (test_async_twins)
        "request_stop": lambda: (s.set_status("thinking"), s.take_events(), s.request_stop()),
        "compact": lambda: (talk(s, 12), s.take_events(), s.compact()),
        "replace_context_block": lambda: s.replace_context_block("memory", "x"),
        "append_context_block": lambda: s.append_context_block("memory", "y"),
        "set_context_entry": lambda: (s.add_context("notes", kind="search"), s.take_events(),
                                      s.set_context_entry("notes", "k", "v")),
        "add_context": lambda: s.add_context("extra", content="hi"),
        "remove_context": lambda: s.remove_context("memory"),
        "refresh_system_prompt": lambda: s.refresh_system_prompt(),
        "load_skill": lambda: (prepared(), s.take_events(), s.load_skill("skills", "deploy")),
        "unload_skill": lambda: (prepared(), s.load_skill("skills", "deploy"), s.take_events(),
                                 s.unload_skill("skills", "deploy")),
        "set_status": lambda: s.set_status("idle"),
        "restore_block": lambda: (s.replace_context_block("memory", "one"),
                                  s.replace_context_block("memory", "two"), s.take_events(),
                                  s.restore_block("memory", 1)),
    }


def public_functions(cls: type) -> set[str]:
    # Through the bases too: Session takes its context methods from the ContextMethods mixin.
    merged = {name: value for klass in reversed(cls.__mro__[:-1])
              for name, value in vars(klass).items()}
    return {name for name, value in merged.items()
            if not name.startswith("_") and (inspect.isfunction(value)
                                             or isinstance(value, classmethod))}


def test_every_public_session_method_is_a_classified_read_or_write(mgr, sink):
    s = mgr.get_session(mgr.create("x").id)
    s.take_events = sink.take  # type: ignore[attr-defined]
    writes = _session_writes(s)
    assert public_functions(Session) == SESSION_READS | set(writes), (
        "classify new public Session methods as reads or writes")


SESSION_WRITES = [
    "append_message", "upsert_message", "update_message", "append_messages",
    "delete_messages", "clear_messages", "add_compaction", "remove_compaction", "chat",
    "regenerate", "request_stop", "compact", "replace_context_block", "append_context_block", "set_context_entry",
    "add_context", "remove_context", "refresh_system_prompt", "load_skill", "unload_skill",
    "set_status", "restore_block"]


@pytest.mark.parametrize("method", SESSION_WRITES)
def test_every_session_write_emits(mgr, sink, method):
    s = mgr.get_session(mgr.create("x").id)
    s.take_events = sink.take  # type: ignore[attr-defined]
    call = _session_writes(s)[method]
    sink.take()
    call()
    assert sink.events, f"Session.{method} emitted nothing"
    assert all(e.session_id == s.id for e in sink.events)


def _manager_writes(mgr: SessionManager, sink: Recorder) -> dict[str, Any]:
    sid = mgr.create("m").id
    first = mgr.append(sid, user_msg("hello"))
    return {
        "create": lambda: mgr.create("new"),
        "rename": lambda: mgr.rename(sid, "renamed"),
        "delete": lambda: mgr.delete(sid),
        "delete_agent_sessions": lambda: mgr.delete_agent_sessions(),
        "end": lambda: mgr.end(sid, "done"),
        "update": lambda: mgr.update(sid, model="gpt"),
        "add_usage": lambda: mgr.add_usage(sid, 10, 5, 0.01),
        "append": lambda: mgr.append(sid, assistant_msg("hi")),
        "upsert": lambda: mgr.upsert(sid, assistant_msg("hi", id="u2")),
        "append_all": lambda: mgr.append_all(sid, [user_msg("a")]),
        "clear_messages": lambda: mgr.clear_messages(sid),
        "delete_messages": lambda: mgr.delete_messages(sid, [first.id]),
        "fork": lambda: mgr.fork(sid, first.id, "fork"),
        "add_compaction": lambda: (lambda ms: (sink.take(), mgr.add_compaction(
            sid, "sum", ms[0].id, ms[1].id)))([mgr.append(sid, user_msg(f"m{i}"))
                                               for i in range(3)]),
        "compact_and_split": lambda: mgr.compact_and_split(sid, summary="so far"),
    }


MANAGER_WRITES = ["create", "rename", "delete", "delete_agent_sessions", "end", "update",
                  "add_usage", "append", "upsert", "append_all", "clear_messages",
                  "delete_messages", "fork", "add_compaction", "compact_and_split"]


def test_every_public_manager_method_is_a_classified_read_or_write(mgr, sink):
    assert public_functions(SessionManager) == MANAGER_READS | set(MANAGER_WRITES)
    assert set(_manager_writes(mgr, sink)) == set(MANAGER_WRITES)


@pytest.mark.parametrize("method", MANAGER_WRITES)
def test_every_manager_write_emits(mgr, sink, method):
    call = _manager_writes(mgr, sink)[method]
    sink.take()
    call()
    assert sink.events, f"SessionManager.{method} emitted nothing"


def test_import_announces_the_new_session(mgr, sink):
    s = mgr.get_session(mgr.create("x").id)
    s.append_message(user_msg("hello"))
    document = export_session(mgr, s.id)
    sink.take()
    info = import_session(mgr, document)
    assert ("session.status", info.id) in [(e.type, e.session_id) for e in sink.events]


# ----------------------------------------------------------------- payloads
def test_append_carries_the_message_and_a_branch_is_announced(s, sink):
    a = s.append_message(user_msg("a"))
    b = s.append_message(assistant_msg("b"))
    assert [(e.type, e.data["message"]["id"], e.data["parent_id"]) for e in sink.take()] == [
        ("message.appended", a.id, None), ("message.appended", b.id, a.id)]
    c = s.append_message(assistant_msg("c"), parent_id=a.id)
    assert [e.type for e in sink.events] == ["message.appended", "branch.created"]
    assert sink.events[1].data == {"message_id": c.id, "parent_id": a.id}


def test_batch_emits_one_event_per_message(s, sink):
    stored = s.append_messages([user_msg("a"), assistant_msg("b"), user_msg("c")])
    assert [e.data["message"]["id"] for e in sink.events] == [m.id for m in stored]


def test_upsert_of_an_existing_message_is_an_update(s, sink):
    s.upsert_message(assistant_msg("one", id="x"))
    s.upsert_message(assistant_msg("two", id="x"))
    assert sink.types() == ["message.appended", "message.updated"]
    assert sink.events[1].data["message"]["parts"][0]["text"] == "two"


def test_delete_and_clear_name_what_went(s, sink):
    a = s.append_message(user_msg("a"))
    sink.take()
    s.delete_messages([a.id, "missing"])
    assert sink.take()[0].data == {"ids": [a.id, "missing"], "count": 1}
    s.delete_messages(["missing"])  # nothing deleted: nothing to announce
    assert sink.events == []
    s.clear_messages()
    assert [(e.type, e.data) for e in sink.events] == [("messages.deleted", {"all": True})]


def test_a_failed_write_emits_nothing(s, sink):
    s.append_message(user_msg("a", id="same"))
    sink.take()
    with pytest.raises(Conflict):
        s.append_message(user_msg("other", id="same"))
    with pytest.raises(NotFound):
        s.append_message(user_msg("x"), parent_id="nope")
    with pytest.raises(NotFound):
        s.remove_compaction("nope")
    assert sink.events == []


def test_context_writes_through_tools_emit(s, sink):
    s.chat("remember that I like tea")
    updated = [e.data for e in sink.events if e.type == "context.updated"]
    assert updated and updated[0]["label"] == "memory"


def test_a_turn_is_thinking_then_idle_and_streams_deltas(s, sink):
    events = list(s.chat("hello there", stream=True))
    types = sink.types()
    assert types[0] == "session.status" and sink.events[0].data == {"status": "thinking"}
    assert sink.events[-1].type == "session.status"
    assert sink.events[-1].data == {"status": "idle"}
    deltas = [e for e in sink.events if e.type == "message.delta"]
    assert deltas and "".join(d.data["text"] for d in deltas) == events[-1]["message"].text
    assert s.storage.get_session(s.agent_id, s.id).status == "idle"


def test_a_failing_turn_ends_in_error(mgr, sink):
    class Broken:
        model = "broken"

        def complete(self, **_: Any) -> Any:
            raise RuntimeError("model down")

    s = mgr.with_llm(Broken()).get_session(mgr.create("x").id)
    sink.take()
    with pytest.raises(RuntimeError):
        s.chat("hi")
    assert [e.data for e in sink.events if e.type == "session.status"] == [
        {"status": "thinking"}, {"status": "error"}]
    assert mgr.get(s.id).status == "error"


def test_compaction_is_started_then_completed_with_status(s, sink):
    talk(s, 12)
    sink.take()
    overlay = s.compact()
    assert overlay is not None
    assert [(e.type, e.data.get("status")) for e in sink.events] == [
        ("session.status", "compacting"), ("compaction.started", None),
        ("compaction.completed", None), ("session.status", "idle")]
    assert sink.events[2].data["compaction"]["id"] == overlay.id


def test_failed_compaction_is_announced(mgr, sink):
    def broken(prompt: str) -> str:
        raise RuntimeError("summariser down")

    m = mgr.on_compaction(create_compact_function(broken, protect_head=1, tail_token_budget=20))
    s = m.get_session(m.create("x").id)
    talk(s, 12)
    sink.take()
    with pytest.raises(CompactionError):
        s.compact()
    assert [e.type for e in sink.events] == [
        "session.status", "compaction.started", "compaction.failed", "session.status"]
    assert sink.events[-1].data == {"status": "error"}


def test_auto_compaction_during_a_turn_keeps_thinking(mgr, sink):
    m = mgr.compact_after(200)
    s = m.get_session(m.create("x").id)
    talk(s, 4)
    s.chat("hello " * 50)
    statuses = [e.data["status"] for e in sink.events if e.type == "session.status"]
    assert "compacting" in statuses
    after = statuses[statuses.index("compacting") + 1]
    assert after == "thinking" and statuses[-1] == "idle"


def test_rename_and_delete_are_announced(mgr, sink):
    sid = mgr.create("x").id
    sink.take()
    mgr.rename(sid, "better")
    assert [(e.type, e.data) for e in sink.take()] == [("session.renamed", {"name": "better"})]
    assert mgr.delete(sid) is True
    assert [(e.type, e.session_id) for e in sink.take()] == [("session.deleted", sid)]
    assert mgr.delete(sid) is False
    assert sink.events == []
