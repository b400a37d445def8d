"""Every public Session/SessionManager method has its `a`-twin (consumers and async views
call only those), and the twins added for context, skills and status do the same work."""

from __future__ import annotations

import inspect

import pytest

from memory_core import Session, SessionManager

# Methods with no twin, each for a reason: builders configure the manager in memory
# before any I/O; bind() only builds a Session object; chat's twin is achat (hand-written).
NO_TWIN = {
    SessionManager: {
        "with_context": "builder", "with_cached_prompt": "builder",
        "with_token_counter": "builder", "with_llm": "builder",
        "with_searchable_history": "builder", "on_compaction": "builder",
        "on_compaction_error": "builder", "on_compacted": "builder",
        "compact_after": "builder", "for_agent": "builder (classmethod, no I/O)",
        "bind": "builds a Session object, no I/O",
        "with_events": "builder",
        "announce_new": "called inside a write's transaction (create, fork, import)",
    },
    Session: {
        "acting": "a context manager naming who writes, no I/O",
        "emit": "called inside a write's transaction, or per streamed delta",
        "writing": "a context manager around a write, not a call",
    },
}


def members(cls: type) -> dict[str, object]:
    """The class's own members and its bases' (Session takes its context methods from the
    ContextMethods mixin), so a method counts wherever in the hierarchy it is defined."""
    merged: dict[str, object] = {}
    for klass in reversed(cls.__mro__[:-1]):  # all but object
        merged.update(vars(klass))
    return merged


def public_methods(cls: type) -> list[str]:
    names = []
    found = members(cls)
    for name, member in found.items():
        if name.startswith("_") or not (inspect.isfunction(member)
                                        or isinstance(member, classmethod | staticmethod)):
            continue
        if name.startswith("a") and name[1:] in found:
            continue  # a twin itself (achat is a hand-written async def)
        names.append(name)
    return names


@pytest.mark.parametrize("cls", [Session, SessionManager], ids=lambda c: c.__name__)
def test_every_public_method_has_an_async_twin(cls):
    methods = public_methods(cls)
    assert "append_message" in methods or "create" in methods  # the enumeration sees methods
    missing = [m for m in methods if m not in NO_TWIN[cls] and not hasattr(cls, "a" + m)]
    assert missing == [], f"{cls.__name__} methods without an a-twin: {missing}"
    stale = [m for m in NO_TWIN[cls] if m not in methods]
    assert stale == [], f"exclusions naming no method: {stale}"


@pytest.mark.django_db(transaction=True)
async def test_context_skill_and_status_twins_do_the_work(agent):
    manager = SessionManager.for_agent(agent)
    session = await manager.aget_session((await manager.acreate("async")).id)
    await session.aadd_context("skills", kind="skill")
    await session.aset_context_entry("skills", "deploy", "Run make deploy.", "How to deploy")
    assert (await session.aget_context_entry("skills", "deploy")).description == "How to deploy"
    assert await session.aload_skill("skills", "deploy") == "Run make deploy."
    assert [s["key"] for s in await session.aget_loaded_skills()] == ["deploy"]
    await session.aunload_skill("skills", "deploy")
    assert await session.aget_loaded_skills() == []
    assert (await session.asystem_prompt_status()).frozen is False
    assert (await session.acompaction_status())["error"] is None
    await session.aremove_context("skills")
    assert [b.label for b in await session.aget_context_blocks()] == []
    ended = await manager.aend(session.id, "done")
    assert ended.end_reason == "done"
    assert (await manager.aupdate(session.id, model="m1")).model == "m1"
    from asgiref.sync import sync_to_async
    from django.db import connection

    await sync_to_async(lambda: connection.close())()
