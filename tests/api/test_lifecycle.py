"""Issue 31 over HTTP: retention settings, pins, the erasure log, the whole-agent export
and its import."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from sessions_app import models

from .conftest import append, error, ok, user_msg


def test_patch_agent_sets_and_clears_the_retention_policy(api, agent_id):
    body = ok(api.patch(f"/agents/{agent_id}", {"retention": {"max_age_days": 30,
                                                               "max_sessions": 5}}))
    assert body["retention"] == {"max_age_days": 30, "max_sessions": 5}
    assert ok(api.get(f"/agents/{agent_id}"))["retention"] == body["retention"]
    cleared = ok(api.patch(f"/agents/{agent_id}", {"retention": None}))
    assert cleared["retention"] == {"max_age_days": None, "max_sessions": None}


@pytest.mark.parametrize("policy", [{"max_age_days": -1}, {"max_age_days": 0},
                                    {"max_sessions": -5}, {"max_age_days": 10**9},
                                    {"max_sessions": 10**12}, {"max_age_days": "soon"},
                                    {"keep": 3}])
def test_negative_or_absurd_retention_is_422_and_changes_nothing(api, agent_id, policy):
    ok(api.patch(f"/agents/{agent_id}", {"retention": {"max_age_days": 7}}))
    error(api.patch(f"/agents/{agent_id}", {"retention": policy}), 422)
    assert ok(api.get(f"/agents/{agent_id}"))["retention"]["max_age_days"] == 7


def test_pin_a_session_and_its_last_update_stays(api, session_id):
    before = ok(api.get(f"/sessions/{session_id}"))
    assert before["pinned"] is False
    pinned = ok(api.patch(f"/sessions/{session_id}", {"pinned": True}))
    assert pinned["pinned"] is True and pinned["updated_at"] == before["updated_at"]
    assert models.Session.objects.get(id=session_id).pinned
    assert ok(api.patch(f"/sessions/{session_id}", {"pinned": False}))["pinned"] is False


def test_pin_of_another_tenants_session_is_404(api, mallory, session_id):
    error(mallory.patch(f"/sessions/{session_id}", {"pinned": True}), 404)
    assert not models.Session.objects.get(id=session_id).pinned


def test_erasure_log_names_each_deletion_and_who_without_content(api, agent_id, conversation,
                                                                 session_id):
    ok(api.delete(f"/sessions/{session_id}/messages/a2"), 204)
    other = ok(api.post(f"/agents/{agent_id}/sessions", {"name": "gone"}), 201)["id"]
    append(api, other, user_msg("secret plan"))
    ok(api.delete(f"/sessions/{other}"), 204)
    items = ok(api.get(f"/agents/{agent_id}/erasures"))["items"]
    assert [(i["scope"], i["session_id"], i["sessions"], i["messages"]) for i in items] == [
        ("session", other, 1, 1), ("messages", session_id, 0, 1)]
    key = models.ApiKey.objects.get()
    assert {(i["by"], i["by_id"], i["door"]) for i in items} == {("key", str(key.id), "api")}
    assert "secret" not in str(items) and "Thursday" not in str(items)


def test_erasure_log_of_another_tenants_agent_is_404(mallory, agent_id):
    error(mallory.get(f"/agents/{agent_id}/erasures"), 404)


def _export(api, agent_id) -> bytes:
    response = api.get(f"/agents/{agent_id}/export")
    assert response.status_code == 200
    assert response["Content-Type"] == "application/jsonl"
    return b"".join(response.streaming_content)


def test_whole_agent_export_round_trips_byte_for_byte(api, agent_id, alice_agent, conversation,
                                                      session_id):
    ok(api.patch(f"/agents/{agent_id}", {"context": [{"label": "memory"}],
                                         "retention": {"max_sessions": 50}}))
    second = ok(api.post(f"/agents/{agent_id}/sessions", {"name": "second"}), 201)["id"]
    ok(api.put(f"/sessions/{second}/context/memory", {"content": "likes tea"}))
    append(api, second, user_msg("what do I drink?"))
    ok(api.post(f"/sessions/{session_id}/compactions", {
        "summary": "deploy plans", "from_message_id": "u1", "to_message_id": "a1"}), 201)
    ok(api.patch(f"/sessions/{second}", {"pinned": True}))
    body = _export(api, agent_id)
    lines = body.splitlines()
    assert len(lines) == 3 and b'"format":"arbor.agent"' in lines[0]
    for sid in (session_id, second):
        ok(api.delete(f"/sessions/{sid}"), 204)
    ok(api.patch(f"/agents/{agent_id}", {"context": [], "retention": None}))

    out = ok(api.post(f"/agents/{agent_id}/import", raw_body=body), 201)
    assert [s["id"] for s in out["sessions"]] == [session_id, second]
    assert _export(api, agent_id) == body
    assert models.Session.objects.get(id=second).pinned


def test_agent_import_with_a_bad_line_is_422_and_imports_nothing(api, agent_id, conversation):
    body = _export(api, agent_id).splitlines()
    ok(api.delete(f"/sessions/{conversation and models.Session.objects.get().id}"), 204)
    broken = b"\n".join([body[0], body[1][:-20]])
    assert "line 2" in error(api.post(f"/agents/{agent_id}/import", raw_body=broken),
                             422)["detail"]
    bad_policy = body[0].replace(b'"max_age_days":null', b'"max_age_days":-3')
    error(api.post(f"/agents/{agent_id}/import", raw_body=b"\n".join([bad_policy, body[1]])),
          422)
    assert not models.Session.objects.exists()


def test_export_of_another_tenants_agent_is_404(api, mallory, agent_id, conversation):
    error(mallory.get(f"/agents/{agent_id}/export"), 404)
    error(mallory.post(f"/agents/{agent_id}/import", raw_body=_export(api, agent_id)), 404)


def test_old_sessions_fall_to_the_policy_and_the_log_names_the_policy(api, agent_id):
    old = ok(api.post(f"/agents/{agent_id}/sessions", {"name": "old"}), 201)["id"]
    append(api, old, user_msg("from last year"))
    models.Session.objects.filter(id=old).update(updated_at=timezone.now() - timedelta(days=400))
    ok(api.patch(f"/agents/{agent_id}", {"retention": {"max_age_days": 365}}))
    from sessions_app.lifecycle import retention

    retention.apply_all()
    error(api.get(f"/sessions/{old}"), 404)
    items = ok(api.get(f"/agents/{agent_id}/erasures"))["items"]
    assert [(i["scope"], i["by"], i["door"], i["messages"]) for i in items] == [
        ("policy", "policy", "policy", 1), ("session", "policy", "policy", 1)]
