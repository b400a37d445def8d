"""Context blocks: providers by kind, scope, budgets, read-only, runtime add/remove."""

from __future__ import annotations

import pytest

from memory_core import Conflict, InvalidInput, NotFound, OverBudget, ReadOnly, SessionManager
from memory_core.providers import StaticProvider


@pytest.fixture
def blocks_manager(agent):
    return (
        SessionManager.for_agent(agent)
        .with_context("soul", description="Identity", content="You are Arbor's demo.", kind="readonly")
        .with_context("memory", description="Learned facts", max_tokens=50)
        .with_context("profile", description="The user", scope="agent", max_tokens=100)
        .with_context("skills", kind="skill", description="How-tos")
        .with_context("knowledge", kind="search", description="Reference notes")
    )


def session_of(manager):
    return manager.get_session(manager.create("s").id)


def test_blocks_report_kind_content_and_usage(blocks_manager):
    s = session_of(blocks_manager)
    s.replace_context_block("memory", "likes tea")
    block = s.get_context_block("memory")
    assert block.to_dict() == {
        "label": "memory", "description": "Learned facts", "content": "likes tea",
        "tokens": 3, "max_tokens": 50, "writable": True, "is_skill": False, "is_searchable": False,
    }
    soul = s.get_context_block("soul")
    assert (soul.writable, soul.content) == (False, "You are Arbor's demo.")
    assert s.get_context_block("skills").is_skill and s.get_context_block("knowledge").is_searchable
    assert [b.label for b in s.get_context_blocks()] == ["soul", "memory", "profile", "skills", "knowledge"]


def test_append_joins_lines_and_writes_are_durable(blocks_manager, agent):
    s = session_of(blocks_manager)
    s.append_context_block("memory", "one")
    s.append_context_block("memory", "two")
    again = SessionManager.for_agent(agent).with_context("memory", max_tokens=50).get_session(s.id)
    assert again.get_context_block("memory").content == "one\ntwo"


def test_over_budget_write_is_refused_naming_limit_and_size(blocks_manager):
    s = session_of(blocks_manager)
    s.replace_context_block("memory", "short")
    with pytest.raises(OverBudget) as err:
        s.replace_context_block("memory", "word " * 100)
    assert "50" in err.value.detail and "130" in err.value.detail
    with pytest.raises(OverBudget):
        s.append_context_block("memory", "word " * 100)
    assert s.get_context_block("memory").content == "short"


def test_writing_read_only_block_is_an_error(blocks_manager):
    s = session_of(blocks_manager)
    with pytest.raises(ReadOnly):
        s.replace_context_block("soul", "new identity")
    assert s.get_context_block("soul").content == "You are Arbor's demo."
    with pytest.raises(NotFound):
        s.replace_context_block("nope", "x")
    with pytest.raises(InvalidInput):
        s.replace_context_block("skills", "needs a key")


def test_defect_6_session_scoped_blocks_are_not_shared(blocks_manager):
    a, b = session_of(blocks_manager), session_of(blocks_manager)
    a.replace_context_block("memory", "secret of a")
    assert b.get_context_block("memory").content == ""
    a.freeze_system_prompt()
    assert "secret of a" not in b.freeze_system_prompt()


def test_agent_scoped_block_is_shared_by_the_agents_sessions(blocks_manager, other_manager):
    a, b = session_of(blocks_manager), session_of(blocks_manager)
    a.replace_context_block("profile", "name: Ada")
    assert b.get_context_block("profile").content == "name: Ada"
    other = other_manager.with_context("profile", scope="agent")
    assert session_of(other).get_context_block("profile").content == ""


def test_agent_templates_start_every_new_session(agent, manager):
    agent.context = [
        {"label": "notes", "kind": "writable", "max_tokens": 200, "description": "Scratch"},
        {"label": "rules", "kind": "readonly", "content": "Be brief."},
    ]
    agent.save()
    s = session_of(manager)
    assert [b.label for b in s.get_context_blocks()] == ["notes", "rules"]
    assert s.get_context_block("rules").content == "Be brief."


def test_add_and_remove_context_at_runtime(blocks_manager):
    s = session_of(blocks_manager)
    s.add_context("todos", max_tokens=100, description="Open tasks")
    s.replace_context_block("todos", "- ship")
    assert s.get_context_block("todos").content == "- ship"
    with pytest.raises(Conflict):
        s.add_context("todos")
    s.remove_context("memory")
    assert "memory" not in [b.label for b in s.get_context_blocks()]
    with pytest.raises(NotFound):
        s.remove_context("memory")
    other = session_of(blocks_manager)
    assert "todos" not in [b.label for b in other.get_context_blocks()]


def test_custom_provider_kind_is_detected_by_its_methods(manager):
    class Clock:
        def get(self):
            return "12:00"

    s = session_of(manager)
    s.add_context("clock", provider=Clock())
    s.add_context("motto", provider=StaticProvider("Carpe diem"))
    assert s.get_context_block("clock").writable is False
    assert s.get_context_block("motto").content == "Carpe diem"


@pytest.mark.parametrize("bad", [
    {"label": ""}, {"label": "has space"}, {"label": "x", "max_tokens": -1},
    {"label": "x", "max_tokens": "10"}, {"label": "x", "kind": "magic"},
    {"label": "x", "scope": "world"}, {"label": "x", "colour": "red"},
])
def test_bad_block_options_are_invalid(manager, bad):
    s = session_of(manager)
    label = bad.pop("label")
    with pytest.raises(InvalidInput):
        s.add_context(label, **bad)
    assert s.get_context_blocks() == []


def test_skill_and_search_entries(blocks_manager):
    s = session_of(blocks_manager)
    s.set_context_entry("skills", "deploy", "1. build\n2. ship", "How to deploy")
    assert s.get_context_block("skills").content == "- deploy: How to deploy"
    s.set_context_entry("knowledge", "hosts", "The health check hits api-3.internal")
    assert s.get_context_block("knowledge").content == "1 entries indexed."
    results = s.context.block("knowledge").provider.search("which host does the health check use?")
    assert [r.key for r in results] == ["hosts"]


def test_file_skills_list_and_load_from_storage(tmp_path, manager, settings):
    folder = tmp_path / "team"
    folder.mkdir()
    (folder / "review.md").write_text("description: Review a pull request\n\nRead the diff.")
    (folder / "triage.md").write_text("# Triage bugs\nSort by impact.")
    settings.ARBOR_SKILLS_DIR = str(tmp_path)
    s = session_of(manager)
    s.add_context("skills", kind="skill", files="team")
    assert s.get_context_block("skills").content == (
        "- review: Review a pull request\n- triage: Triage bugs")
    assert s.load_skill("skills", "triage") == "# Triage bugs\nSort by impact."
    with pytest.raises(NotFound):
        s.load_skill("skills", "../secrets")


def test_deleting_sessions_and_agents_takes_their_block_contents(blocks_manager, agent):
    from sessions_app.models import BlockValue, Entry

    s = session_of(blocks_manager)
    s.replace_context_block("memory", "session fact")
    s.replace_context_block("profile", "agent fact")
    s.set_context_entry("knowledge", "k", "entry text")
    blocks_manager.delete(s.id)
    assert not BlockValue.objects.filter(session_id=s.id).exists()
    assert not Entry.objects.filter(session_id=s.id).exists()
    assert BlockValue.objects.filter(agent_id=agent.id, content="agent fact").exists()
    agent.delete()
    assert not BlockValue.objects.exists() and not Entry.objects.exists()


def test_fork_starts_with_the_sessions_blocks_and_contents(blocks_manager):
    s = session_of(blocks_manager)
    s.add_context("todos", max_tokens=100)
    s.replace_context_block("todos", "- pack")
    s.replace_context_block("memory", "likes tea")
    s.set_context_entry("knowledge", "k", "the vault code is 1234")
    first = s.append_message({"role": "user", "content": "hi"})
    fork = blocks_manager.get_session(blocks_manager.fork(s.id, first.id).id)
    assert fork.get_context_block("todos").content == "- pack"
    assert fork.get_context_block("memory").content == "likes tea"
    assert [r.key for r in fork.context.block("knowledge").provider.search("vault code")] == ["k"]
    fork.replace_context_block("memory", "fork only")
    assert s.get_context_block("memory").content == "likes tea"


def test_file_skills_use_the_storage_named_in_settings(manager, settings):
    # Any Django storage backend (S3/R2 through django-storages) works the same way;
    # Django's in-memory storage stands in for a remote one here.
    from django.core.files.base import ContentFile
    from django.core.files.storage import storages

    settings.STORAGES = {**settings.STORAGES,
                         "skills": {"BACKEND": "django.core.files.storage.InMemoryStorage"}}
    try:
        remote = storages["skills"]
        remote.save("shared/deploy.md", ContentFile(b"description: Ship it\n\nSteps."))
        s = session_of(manager)
        s.add_context("skills", kind="skill", files="shared")
        assert s.get_context_block("skills").content == "- deploy: Ship it"
        assert s.load_skill("skills", "deploy") == "description: Ship it\n\nSteps."
    finally:
        storages._storages.pop("skills", None)


def test_runtime_provider_block_keeps_its_kind_in_another_session_object(manager):
    class Clock:
        def get(self):
            return "12:00"

    s = session_of(manager)
    s.add_context("clock", provider=Clock())
    elsewhere = manager.get_session(s.id)  # another process would see the same rows
    block = elsewhere.get_context_block("clock")
    assert block.writable is False and block.content == ""
