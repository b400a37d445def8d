"""Export/import of a whole session: tree, compactions, session-scoped blocks."""

from __future__ import annotations

import copy

import orjson
import pytest

from sessions_app import models

from .conftest import append, error, ok, user_msg

TEMPLATES = [
    {"label": "soul", "kind": "readonly", "content": "Be brief."},
    {"label": "memory", "max_tokens": 100},
    {"label": "profile", "scope": "agent"},
    {"label": "kb", "kind": "search"},
    {"label": "skills", "kind": "skill"},
]


@pytest.fixture
def rich(api, alice_agent, conversation, session_id):
    """The conversation fixture plus overlays, block contents, entries, usage, a rename."""
    alice_agent.context = TEMPLATES
    alice_agent.save()
    sid = ok(api.post(f"/agents/{alice_agent.id}/sessions",
                      {"name": "rich", "model": "m", "source": "s"}), 201)["id"]
    ok(api.post(f"/sessions/{sid}/messages/batch", {"messages": [
        user_msg("hello", id="r1"), {"role": "assistant", "id": "r2", "metadata": {"x": [1]},
                                     "parts": [{"type": "tool-call", "toolCallId": "c1",
                                                "toolName": "lookup", "input": {"q": 1}}]},
        {"role": "tool", "id": "r3", "parts": [{"type": "tool-result", "toolCallId": "c1",
                                                "output": "found"}]}]}), 201)
    append(api, sid, user_msg("branch", id="r4"), parent_id="r1")
    ok(api.post(f"/sessions/{sid}/compactions", {"summary": "greeting and lookup",
                                                 "from_message_id": "r1",
                                                 "to_message_id": "r3"}), 201)
    ok(api.put(f"/sessions/{sid}/context/memory", {"content": "likes tea"}))
    ok(api.put(f"/sessions/{sid}/context/profile", {"content": "agent-wide"}))
    ok(api.put(f"/sessions/{sid}/context/kb/entries/k1", {"content": "tram 28"}))
    ok(api.put(f"/sessions/{sid}/context/skills/entries/deploy",
               {"content": "steps", "description": "How"}))
    ok(api.post(f"/sessions/{sid}/context", {"label": "extra"}), 201)
    ok(api.delete(f"/sessions/{sid}/context/soul"), 204)
    ok(api.post(f"/sessions/{sid}/usage", {"input_tokens": 3, "output_tokens": 4, "cost": 0.5}))
    ok(api.patch(f"/sessions/{sid}", {"end_reason": "done"}))
    return sid


def test_export_document_shape(api, rich):
    doc = ok(api.get(f"/sessions/{rich}/export"))
    assert doc["format"] == "arbor.session" and doc["version"] == 1
    assert doc["session"]["id"] == rich and doc["session"]["input_tokens"] == 3
    assert [m["id"] for m in doc["messages"]] == ["r1", "r2", "r3", "r4"]
    assert doc["messages"][3]["parent_id"] == "r1"
    assert len(doc["compactions"]) == 1
    blocks = {b["label"]: b for b in doc["blocks"]}
    assert blocks["memory"]["content"] == "likes tea"
    assert blocks["profile"]["content"] is None  # agent-scoped: belongs to the agent
    assert blocks["kb"]["entries"] == [{"key": "k1", "content": "tram 28", "description": ""}]
    assert blocks["soul"]["removed"] is True


def test_import_into_another_agent_round_trips_exactly(api, rich):
    doc = ok(api.get(f"/sessions/{rich}/export"))
    ok(api.delete(f"/sessions/{rich}"), 204)
    target = ok(api.post("/agents", {"name": "target"}), 201)["id"]
    imported = ok(api.post(f"/agents/{target}/import", doc), 201)
    assert imported["id"] == rich  # free again, so kept
    assert imported["agent_id"] == target and imported["message_count"] == 4
    again = ok(api.get(f"/sessions/{rich}/export"))
    expected = copy.deepcopy(doc)
    expected["session"]["parent_session_id"] = None
    assert again == expected
    # The imported session works like any other: history with the overlay, search.
    history = ok(api.get(f"/sessions/{rich}/history", leaf_id="r3"))["messages"]
    assert history[0]["metadata"]["compaction"]["to_message_id"] == "r3"
    assert ok(api.get(f"/sessions/{rich}/search", q="found"))["items"]
    assert ok(api.get(f"/sessions/{rich}/context/kb/entries/k1"))["content"] == "tram 28"


def test_import_beside_the_original_gets_new_ids_where_they_collide(api, agent_id, rich):
    doc = ok(api.get(f"/sessions/{rich}/export"))
    copy_ = ok(api.post(f"/agents/{agent_id}/import", doc), 201)
    assert copy_["id"] != rich
    exported = ok(api.get(f"/sessions/{copy_['id']}/export"))
    assert [m["id"] for m in exported["messages"]] == ["r1", "r2", "r3", "r4"]
    assert exported["compactions"][0]["id"] != doc["compactions"][0]["id"]
    for key in ("messages", "blocks"):
        assert exported[key] == doc[key]
    # The original is untouched.
    assert ok(api.get(f"/sessions/{rich}/export")) == doc


@pytest.mark.parametrize(("change", "status"), [
    (lambda d: d["messages"].reverse(), 422),  # children before parents
    (lambda d: d["messages"].append(dict(d["messages"][0])), 422),  # duplicate id
    (lambda d: d["compactions"][0].update(to_message_id="ghost"), 422),
    (lambda d: d["blocks"][0]["spec"].update(kind="magic"), 422),
    (lambda d: d["blocks"][0]["spec"].update(provider="os.system"), 422),
    (lambda d: d["blocks"][0]["spec"].update(label="other"), 422),
    (lambda d: d.update(format="other"), 422),
    (lambda d: d.update(version=2), 422),
    (lambda d: d["messages"][0].update(role="robot"), 422),
    (lambda d: d.pop("session"), 422),
    (lambda d: d["blocks"][1].update(content="word " * 500), 422),  # over budget
])
def test_bad_documents_are_refused_whole(api, agent_id, rich, change, status):
    doc = ok(api.get(f"/sessions/{rich}/export"))
    change(doc)
    before = (models.Session.objects.count(), models.Message.objects.count(),
              models.Compaction.objects.count(), models.Entry.objects.count())
    error(api.post(f"/agents/{agent_id}/import", doc), status)
    assert before == (models.Session.objects.count(), models.Message.objects.count(),
                      models.Compaction.objects.count(), models.Entry.objects.count())


def test_import_normalises_times_and_refuses_what_columns_cannot_hold(api, agent_id, rich):
    doc = ok(api.get(f"/sessions/{rich}/export"))
    ok(api.delete(f"/sessions/{rich}"), 204)
    odd = copy.deepcopy(doc)
    odd["session"]["created_at"] = "1232-01-10T17:34:20-20:21"  # Postgres: offset too large
    odd["messages"][0]["created_at"] = "2026-05-01T10:00:00"  # naive: read as UTC
    imported = ok(api.post(f"/agents/{agent_id}/import", odd), 201)
    assert imported["created_at"].startswith("1232-01-11T13:55:20")
    again = ok(api.get(f"/sessions/{imported['id']}/export"))
    assert again["messages"][0]["created_at"].startswith("2026-05-01T10:00:00")
    for change in (lambda d: d["session"].update(id="x" * 37),
                   lambda d: d["session"].update(end_reason="x" * 101),
                   lambda d: d["compactions"][0].update(id="y" * 37),
                   lambda d: d["session"].update(created_at="0001-01-01T00:00:00+05:00")):
        bad = copy.deepcopy(doc)
        change(bad)
        error(api.post(f"/agents/{agent_id}/import", bad), 422)


def _load(api, sid, key):
    return ok(api.post(f"/sessions/{sid}/tools/load_context",
                       {"arguments": {"label": "skills", "key": key}}))["result"]


@pytest.fixture
def with_skills(api, rich):
    """rich plus a loaded skill, an unloaded one whose old result is hidden, a frozen prompt."""
    ok(api.put(f"/sessions/{rich}/context/skills/entries/rollback",
               {"content": "undo steps", "description": "Undo"}))
    parts = [{"type": "tool-load_context", "toolCallId": f"l{key}", "state": "output-available",
              "input": {"label": "skills", "key": key}, "output": _load(api, rich, key)}
             for key in ("deploy", "rollback")]
    append(api, rich, {"role": "assistant", "id": "r5", "parts": parts}, parent_id="r3")
    ok(api.post(f"/sessions/{rich}/tools/unload_context",
                {"arguments": {"label": "skills", "key": "rollback"}}))
    ok(api.get(f"/sessions/{rich}/system-prompt"))
    return rich


def _skill_view(agent_id, sid):
    from memory_core import SessionManager

    session = SessionManager.for_agent(agent_id).get_session(sid)
    outputs = [p["output"] for p in session.get_history("r5")[-1].parts]
    return [s["key"] for s in session.get_loaded_skills()], outputs


def test_export_import_export_is_byte_identical(api, agent_id, with_skills):
    sid = with_skills
    before = _skill_view(agent_id, sid)
    assert before == (["deploy"], ["steps", "[skill unloaded: rollback]"])
    raw = api.get(f"/sessions/{sid}/export").content
    doc = orjson.loads(raw)
    assert [s["key"] for s in doc["skills"]] == ["deploy", "rollback"]
    assert doc["prompt"]["text"] and doc["prompt"]["frozen_at"]
    ok(api.delete(f"/sessions/{sid}"), 204)
    target = ok(api.post("/agents", {"name": "fresh"}), 201)["id"]
    assert ok(api.post(f"/agents/{target}/import", raw_body=raw), 201)["id"] == sid
    assert api.get(f"/sessions/{sid}/export").content == raw
    assert _skill_view(target, sid) == before
    assert ok(api.get(f"/sessions/{sid}/system-prompt"))["prompt"] == doc["prompt"]["text"]


def test_block_specs_export_in_one_key_order(api, agent_id, rich):
    doc = ok(api.get(f"/sessions/{rich}/export"))
    for block in doc["blocks"]:
        assert list(block["spec"]) == sorted(block["spec"])
        assert None not in block["spec"].values()


def test_documents_without_skills_or_prompt_still_import(api, agent_id, with_skills):
    doc = ok(api.get(f"/sessions/{with_skills}/export"))
    del doc["skills"], doc["prompt"]
    imported = ok(api.post(f"/agents/{agent_id}/import", doc), 201)
    again = ok(api.get(f"/sessions/{imported['id']}/export"))
    assert again["skills"] == [] and again["prompt"] is None
    assert again["messages"] == doc["messages"] and again["blocks"] == doc["blocks"]


@pytest.mark.parametrize("change", [
    lambda d: d["skills"].append(dict(d["skills"][0])),  # twice
    lambda d: d["skills"][0].update(label="nowhere"),
    lambda d: d["skills"][0].update(loaded="maybe"),
    lambda d: d["prompt"].update(text="a\u0000b"),
])
def test_bad_skill_or_prompt_parts_are_refused(api, agent_id, with_skills, change):
    doc = ok(api.get(f"/sessions/{with_skills}/export"))
    change(doc)
    count = models.Session.objects.count()
    error(api.post(f"/agents/{agent_id}/import", doc), 422)
    assert models.Session.objects.count() == count
