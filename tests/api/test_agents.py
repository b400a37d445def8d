"""Agents over HTTP: create with block templates, list with cursors, patch, delete."""

from __future__ import annotations

import pytest

from sessions_app import models
from tests.conftest import session_key

from .conftest import append, error, ok, user_msg

TEMPLATES = [
    {"label": "soul", "kind": "readonly", "description": "Identity", "content": "Be brief."},
    {"label": "memory", "kind": "writable", "max_tokens": 200, "scope": "agent"},
    {"label": "kb", "kind": "search"},
]


def test_create_agent_with_templates(api):
    body = ok(api.post("/agents", {"name": " Helper ", "context": TEMPLATES}), 201)
    assert body["name"] == "Helper"
    assert body["context"] == [
        {**TEMPLATES[0], "scope": "session"}, TEMPLATES[1], {**TEMPLATES[2], "scope": "session"}]
    assert ok(api.get(f"/agents/{body['id']}")) == body


def test_sessions_start_with_the_templates(api):
    agent = ok(api.post("/agents", {"name": "a", "context": TEMPLATES}), 201)["id"]
    session = ok(api.post(f"/agents/{agent}/sessions", {}), 201)["id"]
    blocks = ok(api.get(f"/sessions/{session}/context"))["items"]
    assert [b["label"] for b in blocks] == ["soul", "memory", "kb"]
    assert blocks[0]["content"] == "Be brief." and not blocks[0]["writable"]


@pytest.mark.parametrize(("context", "words"), [
    ([{"label": "x", "kind": "magic"}], "kind"),
    ([{"label": "bad label!"}], "label"),
    ([{"label": "a"}, {"label": "a"}], "unique"),
    ([{"label": "a", "max_tokens": 0}], "max_tokens"),
    ([{"label": "a", "max_tokens": "10"}], "max_tokens"),
    ([{"label": "a", "colour": "red"}], "colour"),
    ([{"label": "a", "files": "../../etc"}], "files"),
    ("memory", "context"),
])
def test_bad_templates_are_422_and_store_nothing(api, context, words):
    before = models.Agent.objects.count()
    detail = error(api.post("/agents", {"name": "a", "context": context}), 422)["detail"]
    assert words in detail
    assert models.Agent.objects.count() == before


def test_blank_name_is_422(api):
    error(api.post("/agents", {"name": "   "}), 422)
    error(api.post("/agents", {"name": ""}), 422)
    error(api.post("/agents", {}), 422, "validation_error")


def test_patch_renames_and_replaces_templates(api, agent_id):
    body = ok(api.patch(f"/agents/{agent_id}", {"name": "renamed"}))
    assert body["name"] == "renamed" and body["context"] == []
    body = ok(api.patch(f"/agents/{agent_id}", {"context": [{"label": "notes"}]}))
    assert body["name"] == "renamed"
    assert body["context"] == [{"label": "notes", "scope": "session"}]
    before = ok(api.get(f"/agents/{agent_id}"))
    error(api.patch(f"/agents/{agent_id}", {"context": [{"label": "x", "kind": "?"}]}), 422)
    assert ok(api.get(f"/agents/{agent_id}")) == before


def test_delete_agent_takes_its_sessions_along(api, agent_id, session_id):
    append(api, session_id, user_msg("deploy"))
    key = session_key(session_id)
    ok(api.delete(f"/agents/{agent_id}"), 204)
    error(api.get(f"/agents/{agent_id}"), 404)
    error(api.get(f"/sessions/{session_id}"), 404)
    assert not models.Message.objects.filter(session_id=key).exists()
    error(api.delete(f"/agents/{agent_id}"), 404)


def test_list_pages_with_cursor_and_stays_stable_under_inserts(api, alice_agent):
    for i in range(4):
        ok(api.post("/agents", {"name": f"agent {i}"}), 201)
    first = ok(api.get("/agents", limit=2))
    assert len(first["items"]) == 2 and first["next_cursor"]
    # New agents arriving between pages shift nothing that was still to come.
    ok(api.post("/agents", {"name": "late"}), 201)
    second = ok(api.get("/agents", limit=2, cursor=first["next_cursor"]))
    third = ok(api.get("/agents", limit=2, cursor=second["next_cursor"]))
    names = [a["name"] for page in (first, second, third) for a in page["items"]]
    assert names == ["assistant", "agent 0", "agent 1", "agent 2", "agent 3", "late"]
    assert third["next_cursor"] is None


@pytest.mark.parametrize("count", [2, 40])
def test_list_agents_query_count_is_fixed(api, alice_agent, count, django_assert_num_queries):
    models.Agent.objects.bulk_create(
        [models.Agent(owner=alice_agent.owner, name=f"a{i}") for i in range(count)])
    with django_assert_num_queries(2):  # key lookup; one page
        assert len(ok(api.get("/agents", limit=200))["items"]) == count + 1
