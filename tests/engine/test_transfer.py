"""Export and import are engine operations on the storage Protocol (issue 10): a
storage that only forwards Protocol calls round-trips a session, an import is indexed
and counted like appends, and a failed import leaves nothing behind."""

from __future__ import annotations

from typing import Any

import pytest

from memory_core import OverBudget, SessionManager
from memory_core.storage import SessionStorage
from memory_core.transfer import export_session, import_session
from sessions_app.storage import OrmStorage


class Forwarding:
    """Only what the Protocol declares, forwarded and recorded."""

    def __init__(self) -> None:
        self.inner = OrmStorage()
        self.calls: list[str] = []
        self.allowed = {n for p in SessionStorage.__mro__ for n in vars(p)
                        if not n.startswith("_")}

    def __getattr__(self, name: str) -> Any:
        assert name in self.allowed, f"{name} is not part of the storage Protocol"
        self.calls.append(name)
        return getattr(self.inner, name)


def build(manager):
    session = manager.get_session(manager.create("trip").id)
    session.add_context("notes", max_tokens=50)
    session.replace_context_block("notes", "keep the receipts")
    q = session.append_message({"role": "assistant", "parts": [
        {"type": "tool-call", "toolCallId": "c1", "toolName": "lookup_invoice",
         "input": {"number": 7}}]})
    a = session.append_message({"role": "tool", "parts": [
        {"type": "tool-result", "toolCallId": "c1", "output": "paid"}]})
    session.append_message({"role": "user", "content": "another branch"}, parent_id=q.id)
    session.add_compaction("the lookup", q.id, a.id)
    return session


def without_ids(document):
    """The source still exists, so the session and overlay ids are new ones."""
    return {**document, "session": {k: v for k, v in document["session"].items() if k != "id"},
            "compactions": [{k: v for k, v in c.items() if k != "id"}
                            for c in document["compactions"]]}


def test_a_protocol_only_storage_round_trips_a_session(manager):
    source = build(manager)
    storage = Forwarding()
    m = SessionManager.for_agent(manager.agent_id, storage=storage)
    document = export_session(m, source.id)
    info = import_session(m, document)
    assert "restore_session" in storage.calls
    assert without_ids(export_session(m, info.id)) == without_ids(document)


def test_an_import_is_counted_and_indexed_like_appends(manager):
    source = build(manager)
    document = export_session(manager, source.id)
    manager.delete(source.id)
    info = import_session(manager, document)
    assert info.message_count == 3
    assert info.updated_at == document["session"]["updated_at"]
    # The tool result is found by its call's name, as after an append.
    assert [h.id for h in manager.search("lookup_invoice paid")][:2] == [
        document["messages"][1]["id"], document["messages"][0]["id"]]


def test_a_failed_import_leaves_nothing_behind(manager):
    document = export_session(manager, build(manager).id)
    document["blocks"][0]["content"] = "word " * 500  # over the block's 50 tokens
    before = [s.id for s in manager.list()]
    with pytest.raises(OverBudget):
        import_session(manager, document)
    assert [s.id for s in manager.list()] == before
