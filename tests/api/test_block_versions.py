"""Block versions over HTTP (issue 32): list, get, diff, restore, as_of, the actors and
sources each door records, and bad input answered 4xx with nothing changed."""

from __future__ import annotations

import pytest

from sessions_app import models

from .conftest import append, error, ok

TEMPLATES = [
    {"label": "soul", "kind": "readonly", "content": "Be brief."},
    {"label": "memory", "kind": "writable", "max_tokens": 20},
    {"label": "kb", "kind": "search"},
]


@pytest.fixture
def sid(api, alice_agent):
    alice_agent.context = TEMPLATES
    alice_agent.save()
    return ok(api.post(f"/agents/{alice_agent.id}/sessions", {}), 201)["id"]


def versions(api, sid, label="memory", **params):
    return ok(api.get(f"/sessions/{sid}/context/{label}/versions", **params))


def test_api_writes_are_versions_by_the_key(api, sid):
    key_id = models.ApiKey.objects.get().id
    leaf = append(api, sid, {"role": "user", "content": "hi"})
    ok(api.put(f"/sessions/{sid}/context/memory", {"content": "likes tea"}))
    ok(api.post(f"/sessions/{sid}/context/memory/append", {"content": "flies"}))
    ok(api.put(f"/sessions/{sid}/context/memory", {"content": "likes tea\nflies"}))  # no change
    page = versions(api, sid)
    assert [(v["number"], v["action"], v["actor"], v["actor_id"]) for v in page["items"]] == [
        (2, "append", "api", str(key_id)), (1, "replace", "api", str(key_id))]
    assert page["items"][0]["source"] == {"message_id": None, "leaf_id": leaf["id"],
                                          "session_id": sid, "deleted": False}
    assert page["next_cursor"] is None


def test_pages_get_and_diff(api, sid):
    for text in ("a", "b", "c"):
        ok(api.put(f"/sessions/{sid}/context/memory", {"content": text}))
    first = versions(api, sid, limit=2)
    assert [v["number"] for v in first["items"]] == [3, 2] and first["next_cursor"] == "2"
    older = versions(api, sid, limit=2, cursor=first["next_cursor"])
    assert [v["number"] for v in older["items"]] == [1] and older["next_cursor"] is None
    assert ok(api.get(f"/sessions/{sid}/context/memory/versions/2"))["content"] == "b"
    diff = ok(api.get(f"/sessions/{sid}/context/memory/versions/3/diff", **{"from": 1}))
    assert diff["from"] == 1 and diff["to"] == 3 and "-a" in diff["diff"] and "+c" in diff["diff"]
    assert ok(api.get(f"/sessions/{sid}/context/memory/versions/3/diff"))["from"] == 2


def test_restore_makes_a_new_version_and_refuses_like_a_write(api, sid):
    ok(api.put(f"/sessions/{sid}/context/memory", {"content": "one"}))
    ok(api.put(f"/sessions/{sid}/context/memory", {"content": "two"}))
    restored = ok(api.post(f"/sessions/{sid}/context/memory/versions/1/restore"))
    assert (restored["number"], restored["restored_from"], restored["content"]) == (3, 1, "one")
    assert ok(api.get(f"/sessions/{sid}/context/memory"))["content"] == "one"
    error(api.post(f"/sessions/{sid}/context/soul/versions/1/restore"), 422, "read_only")


def test_bad_input_is_4xx_and_changes_nothing(api, sid, mallory):
    ok(api.put(f"/sessions/{sid}/context/memory", {"content": "one"}))
    error(api.get(f"/sessions/{sid}/context/memory/versions/9"), 404)
    error(api.get(f"/sessions/{sid}/context/ghost/versions"), 404)
    error(api.get(f"/sessions/{sid}/context/ghost/versions/1"), 404)
    error(api.post(f"/sessions/{sid}/context/memory/versions/9/restore"), 404)
    error(api.get(f"/sessions/{sid}/context/memory/versions/1/diff", **{"from": 2}), 422)
    error(api.get(f"/sessions/{sid}/context/memory/versions", cursor="x"), 422)
    error(api.get(f"/sessions/{sid}/context/memory/versions", limit=0), 422)
    error(mallory.get(f"/sessions/{sid}/context/memory/versions"), 404)
    error(mallory.post(f"/sessions/{sid}/context/memory/versions/1/restore"), 404)
    assert [v["number"] for v in versions(api, sid)["items"]] == [1]


def test_restore_over_budget_is_refused(api, sid, alice_agent):
    alice_agent.context = [{**TEMPLATES[1], "max_tokens": 200}]
    alice_agent.save()
    big = ok(api.post(f"/agents/{alice_agent.id}/sessions", {}), 201)["id"]
    ok(api.put(f"/sessions/{big}/context/memory", {"content": "word " * 50}))
    ok(api.put(f"/sessions/{big}/context/memory", {"content": "short"}))
    models.SessionBlock.objects.filter(session_id=big, label="memory").update(
        spec={"kind": "writable", "max_tokens": 20})
    error(api.post(f"/sessions/{big}/context/memory/versions/1/restore"), 422, "over_budget")
    assert ok(api.get(f"/sessions/{big}/context/memory"))["content"] == "short"


def test_as_of_answers_the_blocks_a_message_saw(api, sid, mallory, alice_agent):
    first = append(api, sid, {"role": "user", "content": "one"})
    ok(api.put(f"/sessions/{sid}/context/memory", {"content": "then"}))
    second = append(api, sid, {"role": "user", "content": "two"})
    ok(api.put(f"/sessions/{sid}/context/memory", {"content": "now"}))

    def at(message_id):
        items = ok(api.get(f"/sessions/{sid}/context", as_of=message_id))["items"]
        return {b["label"]: b["content"] for b in items}

    assert at(first["id"])["memory"] == "" and at(second["id"])["memory"] == "then"
    assert at(first["id"])["soul"] == "Be brief."
    error(api.get(f"/sessions/{sid}/context", as_of="ghost"), 404)
    other = ok(api.post(f"/agents/{alice_agent.id}/sessions", {}), 201)["id"]
    elsewhere = append(api, other, {"role": "user", "content": "x"})
    error(api.get(f"/sessions/{sid}/context", as_of=elsewhere["id"]), 404)
    error(mallory.get(f"/sessions/{sid}/context", as_of=first["id"]), 404)


def test_tool_calls_are_the_models_with_their_message(api, sid):
    carrier = append(api, sid, {"role": "assistant", "content": "saving"})
    body = {"arguments": {"label": "memory", "content": "likes tea"},
            "message_id": carrier["id"]}
    assert not ok(api.post(f"/sessions/{sid}/tools/set_context", body))["is_error"]
    ok(api.post(f"/sessions/{sid}/tools/set_context",
                {"arguments": {"label": "kb", "content": "v", "key": "k"},
                 "message_id": carrier["id"]}))
    v = versions(api, sid)["items"][0]
    assert (v["actor"], v["message_id"], v["leaf_id"]) == ("model", carrier["id"], carrier["id"])
    entry = ok(api.get(f"/sessions/{sid}/context/kb/entries/k"))
    assert entry["source"] == {"message_id": carrier["id"], "leaf_id": carrier["id"]}
    error(api.post(f"/sessions/{sid}/tools/set_context",
                   {"arguments": {"label": "memory", "content": "x"}, "message_id": "ghost"}), 404)
    assert ok(api.get(f"/sessions/{sid}/context/memory"))["content"] == "likes tea"


def test_deleting_the_message_marks_the_source(api, sid):
    carrier = append(api, sid, {"role": "assistant", "content": "saving"})
    ok(api.post(f"/sessions/{sid}/tools/set_context",
                {"arguments": {"label": "memory", "content": "x"}, "message_id": carrier["id"]}))
    assert api.delete(f"/sessions/{sid}/messages/{carrier['id']}").status_code in (200, 204)
    v = versions(api, sid)["items"][0]
    assert v["source"]["deleted"] is True and v["message_id"] == carrier["id"]


def test_export_import_export_is_byte_identical_with_versions(api, sid, alice_agent):
    ok(api.post(f"/sessions/{sid}/context", {"label": "notes"}), 201)
    append(api, sid, {"role": "user", "content": "hi"})
    ok(api.put(f"/sessions/{sid}/context/notes", {"content": "one"}))
    ok(api.put(f"/sessions/{sid}/context/notes", {"content": "two"}))
    exported = api.get(f"/sessions/{sid}/export")
    assert exported.status_code == 200
    assert api.delete(f"/sessions/{sid}").status_code == 204
    assert not models.BlockVersion.objects.filter(session_id=sid).exists()
    made = ok(api.post(f"/agents/{alice_agent.id}/import", raw_body=exported.content), 201)
    again = api.get(f"/sessions/{made['id']}/export")
    assert again.content == exported.content
    assert [v["number"] for v in versions(api, made["id"], "notes")["items"]] == [2, 1]


def test_the_setting_bounds_versions_per_block(api, sid, settings):
    settings.ARBOR_BLOCK_VERSIONS = 2
    for text in ("a", "b", "c", "d"):
        ok(api.put(f"/sessions/{sid}/context/memory", {"content": text}))
    assert [v["number"] for v in versions(api, sid)["items"]] == [4, 3]
