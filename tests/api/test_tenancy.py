"""Every endpoint, called with a second tenant's key on the first tenant's resources,
answers 404 exactly as for an id that does not exist, and changes nothing."""

from __future__ import annotations

import re

import pytest

from sessions_app import models

from .conftest import Api, append, error, ok, stored_state, user_msg

EXPORT_DOC = {"session": {"id": "imported-1", "created_at": "2026-01-01T00:00:00+00:00",
                          "updated_at": "2026-01-01T00:00:00+00:00"}}
MESSAGE = {"message": user_msg("hi")}
# (method, path, body): every operation on an existing resource.
ENDPOINTS = [
    ("GET", "/agents/{agent}", None),
    ("PATCH", "/agents/{agent}", {"name": "stolen"}),
    ("DELETE", "/agents/{agent}", None),
    ("POST", "/agents/{agent}/sessions", {"name": "x"}),
    ("GET", "/agents/{agent}/sessions", None),
    ("GET", "/agents/{agent}/search?q=deploy", None),
    ("POST", "/agents/{agent}/import", EXPORT_DOC),
    ("GET", "/agents/{agent}/export", None),
    ("GET", "/agents/{agent}/erasures", None),
    ("GET", "/agents/{agent}/embeddings", None),
    ("GET", "/sessions/{session}", None),
    ("PATCH", "/sessions/{session}", {"name": "stolen"}),
    ("DELETE", "/sessions/{session}", None),
    ("POST", "/sessions/{session}/fork", {"message_id": "{message}"}),
    ("POST", "/sessions/{session}/usage", {"input_tokens": 5, "output_tokens": 5, "cost": 1}),
    ("POST", "/sessions/{session}/compact", None),
    ("POST", "/sessions/{session}/compact-and-split", {"summary": "s"}),
    ("GET", "/sessions/{session}/compactions", None),
    ("POST", "/sessions/{session}/compactions",
     {"summary": "s", "from_message_id": "{message}", "to_message_id": "{message}"}),
    ("DELETE", "/sessions/{session}/compactions/{compaction}", None),
    ("POST", "/sessions/{session}/messages", MESSAGE),
    ("POST", "/sessions/{session}/messages/batch", {"messages": [user_msg("hi")]}),
    ("DELETE", "/sessions/{session}/messages", None),
    ("GET", "/sessions/{session}/messages/{message}", None),
    ("PUT", "/sessions/{session}/messages/{message}", MESSAGE),
    ("DELETE", "/sessions/{session}/messages/{message}", None),
    ("GET", "/sessions/{session}/messages/{message}/branches", None),
    ("GET", "/sessions/{session}/history", None),
    ("GET", "/sessions/{session}/history?leaf_id={message}", None),
    ("GET", "/sessions/{session}/history?limit=5&before_id={message}", None),
    ("GET", "/sessions/{session}/leaf", None),
    ("GET", "/sessions/{session}/tree", None),
    ("GET", "/sessions/{session}/paths", None),
    ("GET", "/sessions/{session}/search?q=deploy", None),
    ("GET", "/sessions/{session}/context", None),
    ("POST", "/sessions/{session}/context", {"label": "extra"}),
    ("GET", "/sessions/{session}/context/notes", None),
    ("PUT", "/sessions/{session}/context/notes", {"content": "stolen"}),
    ("DELETE", "/sessions/{session}/context/notes", None),
    ("POST", "/sessions/{session}/context/notes/append", {"content": "stolen"}),
    ("GET", "/sessions/{session}/context?as_of={message}", None),
    ("GET", "/sessions/{session}/context/notes/versions", None),
    ("GET", "/sessions/{session}/context/notes/versions/1", None),
    ("GET", "/sessions/{session}/context/notes/versions/1/diff", None),
    ("POST", "/sessions/{session}/context/notes/versions/1/restore", None),
    ("GET", "/sessions/{session}/context/kb/entries/k1", None),
    ("PUT", "/sessions/{session}/context/kb/entries/k1", {"content": "stolen"}),
    ("GET", "/sessions/{session}/system-prompt", None),
    ("POST", "/sessions/{session}/system-prompt/refresh", None),
    ("GET", "/sessions/{session}/system-prompt/status", None),
    ("GET", "/sessions/{session}/tools", None),
    ("POST", "/sessions/{session}/tools/set_context",
     {"arguments": {"label": "notes", "content": "stolen"}}),
    ("POST", "/sessions/{session}/chat", {"content": "hello"}),
    ("POST", "/sessions/{session}/chat", {"regenerate": "{message}"}),
    ("POST", "/sessions/{session}/chat/stop", None),
    ("GET", "/sessions/{session}/export", None),
]


@pytest.fixture
def world(api, alice_agent):
    """Alice's agent with a writable and a search block, a session, messages, an overlay."""
    alice_agent.context = [{"label": "notes"}, {"label": "kb", "kind": "search"}]
    alice_agent.save()
    sid = ok(api.post(f"/agents/{alice_agent.id}/sessions", {"name": "private"}), 201)["id"]
    m1 = append(api, sid, user_msg("deploy secrets", id="m1"))["id"]
    append(api, sid, user_msg("more", id="m2"))
    overlay = ok(api.post(f"/sessions/{sid}/compactions", {
        "summary": "s", "from_message_id": "m1", "to_message_id": "m2"}), 201)["id"]
    ok(api.put(f"/sessions/{sid}/context/notes", {"content": "private"}))
    ok(api.put(f"/sessions/{sid}/context/kb/entries/k1", {"content": "private"}))
    return {"agent": alice_agent.id, "session": sid, "message": m1, "compaction": overlay}


def _fill(template, ids):
    if isinstance(template, str):
        return re.sub(r"\{(\w+)\}", lambda m: ids[m.group(1)], template)
    if isinstance(template, dict):
        return {k: _fill(v, ids) for k, v in template.items()}
    if isinstance(template, list):
        return [_fill(v, ids) for v in template]
    return template


def _call(client: Api, method, path, body):
    return client.call(method, path, body)


def _snapshot(world):
    return (stored_state(world["session"]),
            list(models.Agent.objects.values_list("id", "name", "context")),
            models.Session.objects.count())


@pytest.mark.parametrize(("method", "path", "body"), ENDPOINTS,
                         ids=[f"{m} {p}" for m, p, _ in ENDPOINTS])
def test_other_tenant_gets_404_like_a_missing_id(api, mallory, world, method, path, body):
    before = _snapshot(world)
    foreign = error(_call(mallory, method, _fill(path, world), _fill(body, world)), 404,
                    "not_found")
    assert _snapshot(world) == before
    missing_ids = {name: f"missing-{name}" for name in world}
    # The owner asking for ids that do not exist sees the same answer, word for word.
    missing = error(_call(api, method, _fill(path, missing_ids), _fill(body, missing_ids)),
                    404, "not_found")
    for name, value in world.items():
        foreign["detail"] = foreign["detail"].replace(value, f"missing-{name}")
    assert foreign == missing


def test_the_table_covers_every_operation(api):
    spec = ok(api.get("/openapi.json"))
    documented = {(method.upper(), path.removeprefix("/api/v1"))
                  for path, ops in spec["paths"].items() for method in ops}
    names = {"agent_id": "agent", "session_id": "session", "message_id": "message",
             "compaction_id": "compaction", "label": "notes", "key": "k1", "name": "set_context"}
    covered = set()
    for method, path, _ in ENDPOINTS:
        generic = path.split("?")[0]
        for param, placeholder in names.items():
            generic = generic.replace("{" + placeholder + "}", "{" + param + "}")
        generic = generic.replace("/notes", "/{label}").replace("/kb/", "/{label}/")
        generic = generic.replace("/k1", "/{key}").replace("/set_context", "/{name}")
        generic = generic.replace("/versions/1", "/versions/{number}")
        covered.add((method, generic))
    not_per_resource = {("GET", "/agents"), ("POST", "/agents")}
    assert documented - not_per_resource - covered == set()


def test_other_tenant_lists_only_their_own(api, mallory, world):
    assert world["agent"] not in [a["id"] for a in ok(mallory.get("/agents"))["items"]]
    assert [a["id"] for a in ok(api.get("/agents"))["items"]] == [world["agent"]]


def test_other_tenant_search_never_finds_foreign_messages(mallory, world):
    mine = ok(mallory.post("/agents", {"name": "mine"}), 201)["id"]
    session = ok(mallory.post(f"/agents/{mine}/sessions", {}), 201)["id"]
    append(mallory, session, user_msg("deploy plans of my own"))
    hits = ok(mallory.get(f"/agents/{mine}/search", q="deploy secrets"))["items"]
    assert [h["session_id"] for h in hits] == [session]


def test_parent_id_from_another_tenant_is_not_found(mallory, world):
    mine = ok(mallory.post("/agents", {"name": "mine"}), 201)["id"]
    session = ok(mallory.post(f"/agents/{mine}/sessions", {}), 201)["id"]
    error(mallory.post(f"/sessions/{session}/messages",
                       {"message": user_msg("x"), "parent_id": world["message"]}), 404)
    error(mallory.post(f"/agents/{mine}/sessions", {"parent_session_id": world["session"]}), 404)
