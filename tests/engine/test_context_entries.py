"""Reading one entry of a skill or search block goes through the Session, not past it."""

from __future__ import annotations

import pytest

from memory_core import InvalidInput, NotFound


def test_get_context_entry_reads_a_skill_with_its_description_without_loading_it(session):
    session.add_context("skills", kind="skill")
    session.set_context_entry("skills", "deploy", "Run make deploy.", "How to deploy")
    entry = session.get_context_entry("skills", "deploy")
    assert entry.to_dict() == {"label": "skills", "key": "deploy",
                               "content": "Run make deploy.", "description": "How to deploy",
                               "source": {"message_id": None, "leaf_id": None}}
    assert session.get_loaded_skills() == []


def test_get_context_entry_of_a_search_block_has_no_description(session):
    session.add_context("facts", kind="search")
    session.set_context_entry("facts", "sky", "The sky is blue.")
    assert session.get_context_entry("facts", "sky")["description"] is None


def test_unknown_entries_and_blocks_without_entries_are_refused(session):
    session.add_context("facts", kind="search")
    session.add_context("notes")
    with pytest.raises(NotFound):
        session.get_context_entry("facts", "missing")
    with pytest.raises(NotFound):
        session.get_context_entry("facts", "")
    with pytest.raises(InvalidInput):
        session.get_context_entry("notes", "any")
