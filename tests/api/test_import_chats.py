"""POST /agents/{id}/import with other tools' exports (issue 30): each conversation a
session with its tree, its current branch as the latest leaf, its times, roles, tool
parts and files; idempotent; atomic and strict; bodies as JSON, JSON Lines or multipart."""

from __future__ import annotations

from datetime import UTC, datetime

import orjson
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import override_settings

from sessions_app import models
from tests.api.conftest import error, ok
from tests.imports import exports as ex

BODIES = {
    "chatgpt": lambda: orjson.dumps(ex.chatgpt()),
    "claude": lambda: orjson.dumps(ex.claude()),
    "openwebui": lambda: orjson.dumps(ex.openwebui()),
    "librechat": lambda: orjson.dumps(ex.librechat_flat()),
    "librechat-tree": lambda: orjson.dumps(ex.librechat_tree()),
    "pi": ex.pi_jsonl,
}


def post(api, agent_id, body: bytes, *, fmt: str | None = None, kind="application/json"):
    url = f"/api/v1/agents/{agent_id}/import" + (f"?format={fmt}" if fmt else "")
    return api.client.post(url, data=body, content_type=kind)


def imported(api, agent_id, body, **kw):
    return ok(post(api, agent_id, body, **kw), 201)


def counts():
    return (models.Session.objects.count(), models.Message.objects.count(),
            models.ImportSource.objects.count())


def texts(history):
    return [next((p.get("text") for p in m["parts"] if p["type"] in ("text", "reasoning")),
                 m["parts"][0]["type"]) for m in history]


def source_ids(history):
    return [m["metadata"]["source"]["message_id"] for m in history]


def tree_of(api, sid):
    items = ok(api.get(f"/sessions/{sid}/tree"))["items"]
    ids = {i["id"] for i in items}
    return {i["id"]: i["parent_id"] for i in items}, ids


def history(api, sid, leaf=None):
    return ok(api.get(f"/sessions/{sid}/history", leaf_id=leaf))["messages"]


# ------------------------------------------------------------------ detection
@pytest.mark.parametrize("name", list(BODIES))
def test_auto_detects_each_format_and_answers_the_summary(api, agent_id, name):
    answer = imported(api, agent_id, BODIES[name]())
    assert answer["format"] == name.split("-")[0]
    assert answer["skipped"] == []
    for s in answer["sessions"]:
        assert set(s) == {"id", "name", "messages", "source_id"} and s["name"]
        assert ok(api.get(f"/sessions/{s['id']}"))["message_count"] == s["messages"]


@pytest.mark.parametrize(("name", "wrong"), [("chatgpt", "claude"), ("claude", "openwebui"),
                                             ("openwebui", "librechat"), ("librechat", "pi"),
                                             ("pi", "chatgpt"), ("chatgpt", "pi")])
def test_a_valid_file_with_the_wrong_format_is_a_wrong_shape(api, agent_id, name, wrong):
    before = counts()
    response = post(api, agent_id, BODIES[name](), fmt=wrong)
    assert response.status_code in (400, 422), response.content
    assert before == counts()


def test_an_unknown_format_name_is_422(api, agent_id):
    error(post(api, agent_id, BODIES["chatgpt"](), fmt="word"), 422)


def test_forced_formats_import_too(api, agent_id):
    for name in ("chatgpt", "claude", "openwebui", "librechat", "pi"):
        assert imported(api, agent_id, BODIES[name](), fmt=name)["sessions"]


# ---------------------------------------------------------------------- trees
def test_chatgpt_keeps_every_branch_and_opens_on_the_current_node(api, agent_id):
    answer = imported(api, agent_id, BODIES["chatgpt"]())
    lisbon, hello = answer["sessions"]
    assert (lisbon["name"], lisbon["source_id"], lisbon["messages"]) == (
        "Lisbon trip", "conv-lisbon", 9)
    parents, ids = tree_of(api, lisbon["id"])
    # Hidden root, empty system message and memory context dropped: the edited question
    # and its original are both roots; the regenerated answers siblings under u1.
    assert ids == {"u1", "a1", "a2", "u2", "a3", "u3", "c1", "o1", "a4"}
    assert parents["u1"] is None and parents["u2"] is None
    assert parents["a1"] == parents["a2"] == "u1" and parents["u3"] == "a2"
    # current_node a1 is older than a2's branch and u2's, yet it is the latest leaf.
    assert source_ids(history(api, lisbon["id"])) == ["u1", "a1"]
    assert ok(api.get(f"/sessions/{lisbon['id']}/leaf"))["message"]["id"] == "a1"
    # The hidden message between q and ans is gone, ans re-attached to q.
    assert source_ids(history(api, hello["id"])) == ["q", "ans"]


def test_chatgpt_times_roles_tools_files_and_source(api, agent_id):
    sid = imported(api, agent_id, BODIES["chatgpt"]())["sessions"][0]["id"]
    path = history(api, sid, "a4")
    assert source_ids(path) == ["u1", "a2", "u3", "c1", "o1", "a4"]
    assert [m["role"] for m in path] == ["user", "assistant", "user", "assistant", "tool",
                                         "assistant"]
    assert [datetime.fromisoformat(m["created_at"]) for m in path] == [
        datetime.fromtimestamp(ex.T0 + t, UTC) for t in (1, 3, 6, 7, 8, 9)]
    call, result = path[3]["parts"][0], path[4]["parts"][0]
    assert call == {"type": "tool-call", "toolCallId": "c1", "toolName": "python",
                    "input": {"code": "print(2+2)"}}
    assert result == {"type": "tool-result", "toolCallId": "c1", "toolName": "python",
                      "output": "4"}
    image = [p for p in path[2]["parts"] if p["type"] == "file"]
    assert image == [{"type": "file", "mediaType": "image/*", "filename": "file-seat42",
                      "url": "file-service://file-seat42"}]
    assert path[0]["metadata"]["source"] == {"format": "chatgpt",
                                             "conversation_id": "conv-lisbon",
                                             "message_id": "u1"}
    u2 = ok(api.get(f"/sessions/{sid}/messages/u2"))
    assert {"type": "file", "filename": "itinerary.pdf", "mediaType": "application/pdf",
            "url": "chatgpt-file:file-abc"} in u2["parts"]
    info = ok(api.get(f"/sessions/{sid}"))
    assert datetime.fromisoformat(info["created_at"]) == datetime.fromtimestamp(ex.T0, UTC)
    assert (info["source"], info["model"]) == ("chatgpt", "gpt-4o")


def test_claude_tree_current_leaf_tools_and_old_exports(api, agent_id):
    trip, old = imported(api, agent_id, BODIES["claude"]())["sessions"]
    path = history(api, trip["id"])
    assert source_ids(path) == ["m1", "m2", "m3", "m4"]  # current_leaf, not the retry m5
    assert [m["role"] for m in path] == ["user", "assistant", "user", "assistant"]
    assert path[1]["parts"][0] == {"type": "reasoning", "text": "Look it up."}
    assert path[1]["parts"][1] == {"type": "tool-web_search", "toolCallId": "tu1",
                                   "state": "output-available",
                                   "input": {"query": "Lisbon May weather"},
                                   "output": "22C and sunny"}
    assert {"type": "file", "filename": "plan.txt", "mediaType": "application/octet-stream",
            "url": "claude-file:plan.txt"} in path[2]["parts"]
    assert path[0]["created_at"].startswith("2024-03-01T10:00:01")
    branches = ok(api.get(f"/sessions/{trip['id']}/messages/m3/branches"))["items"]
    assert sorted(b["id"] for b in branches) == ["m4", "m5"]
    # No parent links: one chain in list order, named by something non-empty.
    assert source_ids(history(api, old["id"])) == ["o1", "o2", "o3"]
    assert old["name"]


def test_openwebui_tree_current_and_files(api, agent_id):
    chat = imported(api, agent_id, BODIES["openwebui"]())["sessions"][0]
    assert chat["name"] == "Sintra day"
    path = history(api, chat["id"])
    assert source_ids(path) == ["u1", "a1"]  # currentId, though a2 and a3 are newer
    files = [p for p in path[0]["parts"] if p["type"] == "file"]
    assert files == [
        {"type": "file", "filename": "image-1", "mediaType": "image/*",
         "url": "openwebui-file:image-1"},  # the inline data: URL is not copied
        {"type": "file", "filename": "map.pdf", "mediaType": "application/pdf",
         "url": "/api/v1/files/f1"}]
    parents, _ = tree_of(api, chat["id"])
    assert parents == {"u1": None, "a1": "u1", "a2": "u1", "u1b": None, "a3": "u1b"}
    assert path[1]["metadata"]["model"] == "llama3"


@pytest.mark.parametrize("name", ["librechat", "librechat-tree"])
def test_librechat_both_forms_give_the_same_tree_newest_current(api, agent_id, name):
    sid = imported(api, agent_id, BODIES[name]())["sessions"][0]["id"]
    parents, _ = tree_of(api, sid)
    assert parents == {"q1": None, "r1": "q1", "q2": "r1", "r3": "q2", "r2": "q1"}
    path = history(api, sid)
    assert source_ids(path) == ["q1", "r2"]  # newest createdAt
    r1 = ok(api.get(f"/sessions/{sid}/messages/r1"))
    assert r1["parts"][0] == {"type": "tool-timer", "toolCallId": "call_1",
                              "state": "output-available", "input": "{\"m\": 10}",
                              "output": "set"}
    assert path[0]["parts"][1]["filename"] == "box.jpg"


def test_pi_skips_non_messages_and_opens_on_the_last_entry(api, agent_id):
    s = imported(api, agent_id, ex.pi_jsonl(), kind="application/x-ndjson")["sessions"][0]
    assert (s["name"], s["source_id"], s["messages"]) == ("List project files", "pi-sess-1", 6)
    parents, _ = tree_of(api, s["id"])
    # model_change above e1 and branch_summary above b1 skipped, children re-attached.
    assert parents == {"e1": None, "e2": "e1", "e3": "e2", "e4": "e3", "b1": "e2", "b2": "b1"}
    path = history(api, s["id"])
    assert source_ids(path) == ["e1", "e2", "b1", "b2"]
    assert path[1]["parts"][1] == {"type": "tool-call", "toolCallId": "call_ls",
                                   "toolName": "bash", "input": {"command": "ls"}}
    result = ok(api.get(f"/sessions/{s['id']}/messages/e3"))
    assert result["role"] == "tool"
    assert result["parts"][0] == {"type": "tool-result", "toolCallId": "call_ls",
                                  "toolName": "bash", "output": "a.py b.py", "isError": False}
    assert path[2]["parts"][1]["mediaType"] == "image/png"


def test_pi_without_a_session_name_is_named_by_its_first_words(api, agent_id):
    entries = [e for e in ex.pi_entries() if e["type"] != "session_info"]
    s = imported(api, agent_id, ex.pi_jsonl(entries))["sessions"][0]
    assert s["name"] == "List the files"


def test_search_finds_imported_messages_on_every_branch(api, agent_id):
    imported(api, agent_id, BODIES["chatgpt"]())
    hits = ok(api.get(f"/agents/{agent_id}/search", q="evening flight"))["items"]
    assert hits and hits[0]["id"] == "a2"  # not on the current branch
    hits = ok(api.get(f"/agents/{agent_id}/search", q="porto train"))["items"]
    assert {h["id"] for h in hits} >= {"u2"}


# ------------------------------------------------------------------- bodies
def test_multipart_file_field(api, agent_id):
    upload = SimpleUploadedFile("session.jsonl", ex.pi_jsonl())
    response = api.client.post(f"/api/v1/agents/{agent_id}/import", {"file": upload})
    assert ok(response, 201)["format"] == "pi"
    upload = SimpleUploadedFile("conversations.json", BODIES["claude"]())
    response = api.client.post(f"/api/v1/agents/{agent_id}/import", {"file": upload})
    assert len(ok(response, 201)["sessions"]) == 2
    error(api.client.post(f"/api/v1/agents/{agent_id}/import", {"other": upload}), 422)


def test_the_body_limit_applies_to_json_and_multipart(api, agent_id):
    body = BODIES["chatgpt"]()
    with override_settings(ARBOR_MAX_BODY_BYTES=len(body) - 1):
        error(post(api, agent_id, body), 413)
        upload = SimpleUploadedFile("c.json", body)
        error(api.client.post(f"/api/v1/agents/{agent_id}/import", {"file": upload}), 413)
    assert counts()[0] == 0


def test_arbor_documents_keep_their_path(api, agent_id, session_id):
    doc = ok(api.get(f"/sessions/{session_id}/export"))
    answer = imported(api, agent_id, orjson.dumps(doc))
    assert answer["id"] != session_id and "message_count" in answer
    assert imported(api, agent_id, orjson.dumps(doc), fmt="arbor")["id"]


# --------------------------------------------------------------- idempotence
@pytest.mark.parametrize("name", list(BODIES))
def test_importing_the_same_file_twice_adds_nothing(api, agent_id, name):
    first = imported(api, agent_id, BODIES[name]())
    before = counts()
    second = imported(api, agent_id, BODIES[name]())
    assert counts() == before and second["sessions"] == []
    assert [s["source_id"] for s in second["skipped"]] == [
        s["source_id"] for s in first["sessions"]]
    assert all("already imported as session" in s["reason"] for s in second["skipped"])


def test_idempotence_is_per_agent_and_ends_with_the_session(api, agent_id):
    first = imported(api, agent_id, BODIES["openwebui"]())["sessions"][0]
    other = ok(api.post("/agents", {"name": "second"}), 201)["id"]
    assert imported(api, other, BODIES["openwebui"]())["sessions"]
    ok(api.delete(f"/sessions/{first['id']}"), 204)
    assert imported(api, agent_id, BODIES["openwebui"]())["sessions"]


def test_a_conversation_twice_in_one_file_is_imported_once(api, agent_id):
    body = orjson.dumps(ex.chatgpt() + ex.chatgpt()[:1])
    answer = imported(api, agent_id, body)
    assert len(answer["sessions"]) == 2
    assert answer["skipped"] == [{"source_id": "conv-lisbon",
                                  "reason": "appears earlier in this file"}]


# --------------------------------------------------------------- strictness
def _gpt(change):
    data = ex.chatgpt()
    change(data)
    return orjson.dumps(data)


MALFORMED = {
    "not json": (b"[{\"mapping\": ", None, None),
    "wrong shape": (orjson.dumps({"mapping": []} | {"conversation_id": "x"}), "x", "mapping"),
    "wrong type": (_gpt(lambda d: d[1]["mapping"]["q"]["message"].update(create_time="soon")),
                   "conv-hello", 'mapping["q"].message.create_time'),
    "missing parent": (_gpt(lambda d: d[1]["mapping"]["ans"].update(parent="ghost")),
                       "conv-hello", 'mapping["ans"].parent'),
    "cycle": (_gpt(lambda d: d[1]["mapping"]["q"].update(parent="ans")), "conv-hello",
              ".parent"),
    "unknown role": (_gpt(lambda d: d[1]["mapping"]["q"]["message"]["author"].update(
        role="robot")), "conv-hello", 'mapping["q"].message.author.role'),
    "current not in tree": (_gpt(lambda d: d[1].update(current_node="nope")), "conv-hello",
                            "current_node"),
    "duplicate claude id": (orjson.dumps([{**ex.claude()[0], "chat_messages": [
        *ex.claude()[0]["chat_messages"], ex.claude()[0]["chat_messages"][0]]}]), "c-trip",
        "chat_messages[5]"),
    "pi without header": (b"\n".join(ex.pi_jsonl().splitlines()[1:]), None, None),
}


@pytest.mark.parametrize("case", list(MALFORMED))
def test_malformed_files_are_4xx_naming_conversation_and_field_and_store_nothing(
        api, agent_id, case):
    body, conversation, field = MALFORMED[case]
    before = counts()
    response = post(api, agent_id, body)
    assert response.status_code in (400, 422), response.content
    detail = response.json()["detail"]
    if conversation:
        assert response.json()["conversation"] == conversation and conversation in detail
    if field:
        assert field in response.json()["field"] and field in detail, detail
    assert counts() == before  # the first conversation of the file was valid: rolled back


def test_a_chain_deeper_than_the_limit_is_refused(api, agent_id, monkeypatch):
    from memory_core.imports import tree
    monkeypatch.setattr(tree, "MAX_IMPORT_DEPTH", 50)
    body = error(post(api, agent_id, ex.deep_json(51)), 422, "invalid_export")
    assert body["conversation"] == "lc-deep" and "deeper than the limit of 50" in body["detail"]
    assert counts()[0] == 0


def test_a_deep_nested_librechat_chain_imports_whole(api, agent_id):
    depth = 3000  # 6,000 JSON levels: past orjson's 1024 and Python's recursion limit
    s = imported(api, agent_id, ex.deep_json(depth))["sessions"][0]
    assert s["messages"] == depth
    assert ok(api.get(f"/sessions/{s['id']}/leaf"))["message"]["id"] == f"d{depth - 1}"
    assert len(history(api, s["id"])) == depth


def test_another_tenants_agent_is_404_whatever_the_body(mallory, agent_id):
    for body in (BODIES["chatgpt"](), b"{not json", ex.pi_jsonl()):
        error(post(mallory, agent_id, body), 404, "not_found")
    assert counts()[0] == 0
