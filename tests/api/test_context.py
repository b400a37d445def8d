"""Context blocks, entries and the frozen system prompt over HTTP."""

from __future__ import annotations

import pytest

from .conftest import error, ok, stored_state

TEMPLATES = [
    {"label": "soul", "kind": "readonly", "description": "Identity", "content": "Be brief."},
    {"label": "memory", "kind": "writable", "description": "Facts", "max_tokens": 20},
    {"label": "kb", "kind": "search", "description": "Notes"},
    {"label": "skills", "kind": "skill"},
]


@pytest.fixture
def sid(api, alice_agent):
    alice_agent.context = TEMPLATES
    alice_agent.save()
    return ok(api.post(f"/agents/{alice_agent.id}/sessions", {}), 201)["id"]


def test_list_and_get_blocks(api, sid):
    items = ok(api.get(f"/sessions/{sid}/context"))["items"]
    assert [b["label"] for b in items] == ["soul", "memory", "kb", "skills"]
    memory = ok(api.get(f"/sessions/{sid}/context/memory"))
    assert memory == {"label": "memory", "description": "Facts", "content": "", "tokens": 0,
                      "max_tokens": 20, "writable": True, "is_skill": False,
                      "is_searchable": False}
    error(api.get(f"/sessions/{sid}/context/ghost"), 404)


def test_replace_and_append(api, sid):
    assert ok(api.put(f"/sessions/{sid}/context/memory",
                      {"content": "likes tea"}))["content"] == "likes tea"
    body = ok(api.post(f"/sessions/{sid}/context/memory/append", {"content": "flies Tuesdays"}))
    assert body["content"] == "likes tea\nflies Tuesdays"
    assert ok(api.get(f"/sessions/{sid}/context/memory"))["content"] == body["content"]


def test_over_budget_is_422_naming_the_limit_and_changes_nothing(api, sid):
    ok(api.put(f"/sessions/{sid}/context/memory", {"content": "likes tea"}))
    before = stored_state(sid)
    body = error(api.put(f"/sessions/{sid}/context/memory", {"content": "word " * 100}),
                 422, "over_budget")
    assert "20" in body["detail"]
    error(api.post(f"/sessions/{sid}/context/memory/append", {"content": "word " * 100}),
          422, "over_budget")
    assert stored_state(sid) == before


def test_read_only_and_keyed_blocks_refuse_plain_writes(api, sid):
    before = stored_state(sid)
    error(api.put(f"/sessions/{sid}/context/soul", {"content": "evil"}), 422, "read_only")
    error(api.put(f"/sessions/{sid}/context/kb", {"content": "x"}), 422)
    error(api.put(f"/sessions/{sid}/context/ghost", {"content": "x"}), 404)
    error(api.put(f"/sessions/{sid}/context/memory", {"content": 5}), 422, "validation_error")
    assert stored_state(sid) == before


def test_search_entries(api, sid):
    entry = ok(api.put(f"/sessions/{sid}/context/kb/entries/lisbon",
                       {"content": "Tram 28 crosses Alfama"}))
    assert entry == {"label": "kb", "key": "lisbon", "content": "Tram 28 crosses Alfama",
                     "description": None, "source": {"message_id": None, "leaf_id": None}}
    assert ok(api.get(f"/sessions/{sid}/context/kb/entries/lisbon")) == entry
    assert ok(api.get(f"/sessions/{sid}/context/kb"))["content"] == "1 entries indexed."
    error(api.get(f"/sessions/{sid}/context/kb/entries/porto"), 404)
    error(api.get(f"/sessions/{sid}/context/memory/entries/x"), 422)


def test_skill_entries_keep_descriptions_and_are_not_loaded_by_reading(api, sid):
    ok(api.put(f"/sessions/{sid}/context/skills/entries/deploy",
               {"content": "1. build 2. ship", "description": "How to deploy"}))
    entry = ok(api.get(f"/sessions/{sid}/context/skills/entries/deploy"))
    assert entry["description"] == "How to deploy"
    assert ok(api.get(f"/sessions/{sid}/context/skills"))["content"] == "- deploy: How to deploy"
    history = ok(api.get(f"/sessions/{sid}/history"))
    assert history["messages"] == []


def test_add_and_remove_blocks(api, sid):
    block = ok(api.post(f"/sessions/{sid}/context",
                        {"label": "todos", "max_tokens": 50, "description": "Tasks"}), 201)
    assert block["writable"] and block["max_tokens"] == 50
    error(api.post(f"/sessions/{sid}/context", {"label": "todos"}), 409, "conflict")
    error(api.post(f"/sessions/{sid}/context", {"label": "x", "kind": "nope"}), 422)
    ok(api.delete(f"/sessions/{sid}/context/todos"), 204)
    error(api.get(f"/sessions/{sid}/context/todos"), 404)


def test_system_prompt_is_frozen_until_refresh(api, sid):
    first = ok(api.get(f"/sessions/{sid}/system-prompt"))
    assert "SOUL (Identity) [readonly]" in first["prompt"] and first["frozen_at"]
    ok(api.put(f"/sessions/{sid}/context/memory", {"content": "likes tea"}))
    assert ok(api.get(f"/sessions/{sid}/system-prompt")) == first
    status = ok(api.get(f"/sessions/{sid}/system-prompt/status"))
    assert status["frozen"] and not status["up_to_date"] and status["changed_blocks"] == ["memory"]
    refreshed = ok(api.post(f"/sessions/{sid}/system-prompt/refresh"))
    assert "likes tea" in refreshed["prompt"] and refreshed["frozen_at"] >= first["frozen_at"]
    assert ok(api.get(f"/sessions/{sid}/system-prompt")) == refreshed
    assert ok(api.get(f"/sessions/{sid}/system-prompt/status"))["up_to_date"]
