"""Over HTTP: entry budgets on every write path, metadata in idempotent appends (issue 9)."""

from __future__ import annotations

import pytest

from .conftest import append, error, ok, user_msg

BIG = "x" * 80  # 20 estimated tokens: exactly the budget


@pytest.fixture
def sid(api, alice_agent):
    alice_agent.context = [{"label": "kb", "kind": "search", "max_tokens": 20},
                           {"label": "skills", "kind": "skill", "max_tokens": 20}]
    alice_agent.save()
    return ok(api.post(f"/agents/{alice_agent.id}/sessions", {}), 201)["id"]


@pytest.mark.parametrize("label", ["kb", "skills"])
def test_entry_put_at_and_over_the_budget(api, sid, label):
    url = f"/sessions/{sid}/context/{label}/entries"
    assert ok(api.put(f"{url}/a", {"content": BIG}))["content"] == BIG
    body = error(api.put(f"{url}/b", {"content": BIG + "x"}), 422, "over_budget")
    assert "20" in body["detail"] and "21" in body["detail"]
    error(api.get(f"{url}/b"), 404)


@pytest.mark.parametrize("label", ["kb", "skills"])
def test_set_context_tool_at_and_over_the_budget(api, sid, label):
    call = f"/sessions/{sid}/tools/set_context"
    fits = ok(api.post(call, {"arguments": {"label": label, "key": "a", "content": BIG}}))
    assert fits["is_error"] is False
    over = ok(api.post(call, {"arguments": {"label": label, "key": "b", "content": BIG + "x"}}))
    assert over["is_error"] is True and "20 tokens" in over["result"]
    error(api.get(f"/sessions/{sid}/context/{label}/entries/b"), 404)


def test_resending_an_id_with_other_metadata_is_409(api, session_id):
    append(api, session_id, user_msg("hi", id="u1", metadata={"lang": "en"}))
    assert append(api, session_id, user_msg("hi", id="u1", metadata={"lang": "en"}))["id"] == "u1"
    error(api.post(f"/sessions/{session_id}/messages",
                   {"message": user_msg("hi", id="u1", metadata={"lang": "de"})}), 409, "conflict")
    assert ok(api.get(f"/sessions/{session_id}/messages/u1"))["metadata"] == {"lang": "en"}
