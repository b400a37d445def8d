"""API fixtures: two tenants with keys, clients that speak JSON, a seeded session."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from django.test import Client
from django.utils import timezone

from sessions_app import models
from sessions_app.auth import create_key
from tests.conftest import assistant_msg, make_agent, user_msg

PREFIX = "/api/v1"


class Api:
    """A JSON client for one key: `api.post("/agents", {...})` -> Django test response."""

    def __init__(self, key: str | None) -> None:
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        self.client = Client(headers=headers)

    def call(self, method: str, path: str, body: Any = None, *, raw_body: bytes | None = None,
             **params: Any) -> Any:
        url = path if path.startswith("/api") else PREFIX + path
        data = raw_body if raw_body is not None else (orjson.dumps(body) if body is not None else None)
        kwargs: dict[str, Any] = {}
        if data is not None:
            kwargs = {"data": data, "content_type": "application/json"}
        if params:
            query = {k: v for k, v in params.items() if v is not None}
            if method == "GET":
                return self.client.get(url, query)
            from urllib.parse import urlencode
            url += "?" + urlencode(query)
        return getattr(self.client, method.lower())(url, **kwargs)

    def get(self, path: str, **params: Any) -> Any:
        return self.call("GET", path, **params)

    def post(self, path: str, body: Any = None, **kw: Any) -> Any:
        return self.call("POST", path, body, **kw)

    def put(self, path: str, body: Any = None, **kw: Any) -> Any:
        return self.call("PUT", path, body, **kw)

    def patch(self, path: str, body: Any = None, **kw: Any) -> Any:
        return self.call("PATCH", path, body, **kw)

    def delete(self, path: str, **kw: Any) -> Any:
        return self.call("DELETE", path, **kw)


def ok(response: Any, status: int = 200) -> Any:
    """The JSON body, after checking the status (with the body in the failure message)."""
    assert response.status_code == status, (response.status_code, response.content[:2000])
    return response.json() if response.content else None


def error(response: Any, status: int, code: str | None = None) -> dict[str, Any]:
    """Checks an error response: the status, JSON `{detail, code}`, and the code."""
    assert response.status_code == status, (response.status_code, response.content[:2000])
    assert response["Content-Type"].startswith("application/json"), response["Content-Type"]
    body = response.json()
    assert isinstance(body["detail"], str) and body["detail"], body
    assert isinstance(body["code"], str) and body["code"], body
    if code is not None:
        assert body["code"] == code, body
    return body


@pytest.fixture
def alice_agent(db):
    return make_agent("alice", "assistant")


@pytest.fixture
def alice_key(alice_agent) -> str:
    """A key as it is after its first call: the first call of a minute also records
    `last_used_at` (one UPDATE, tested in tests/pages), which query counts leave out."""
    key, raw = create_key(alice_agent.owner)
    models.ApiKey.objects.filter(id=key.id).update(last_used_at=timezone.now())
    return raw


@pytest.fixture
def api(alice_key) -> Api:
    return Api(alice_key)


@pytest.fixture
def mallory_key(db) -> str:
    agent = make_agent("mallory", "other")
    return create_key(agent.owner)[1]


@pytest.fixture
def mallory(mallory_key) -> Api:
    """A second tenant's client."""
    return Api(mallory_key)


@pytest.fixture
def anonymous(db) -> Api:
    return Api(None)


@pytest.fixture
def agent_id(alice_agent) -> str:
    return alice_agent.id


@pytest.fixture
def session_id(api, agent_id) -> str:
    return ok(api.post(f"/agents/{agent_id}/sessions", {"name": "chat"}), 201)["id"]


def append(api: Api, session_id: str, message: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return ok(api.post(f"/sessions/{session_id}/messages", {"message": message, **extra}), 201)


@pytest.fixture
def conversation(api, session_id) -> dict[str, str]:
    """u1 -> a1 -> u2 -> a2, plus a branch a1b under u1. Returns name -> id."""
    ids = {}
    ids["u1"] = append(api, session_id, user_msg("Plan the deployment", id="u1"))["id"]
    ids["a1"] = append(api, session_id, assistant_msg("Deploy on Tuesday", id="a1"))["id"]
    ids["u2"] = append(api, session_id, user_msg("Move it to Thursday", id="u2"))["id"]
    ids["a2"] = append(api, session_id, assistant_msg("Thursday it is", id="a2"))["id"]
    ids["a1b"] = append(api, session_id, assistant_msg("Deploy on Friday", id="a1b"),
                        parent_id="u1")["id"]
    return ids


def stored_state(session_id: str) -> dict[str, Any]:
    """Everything a failed request must leave as it was."""
    row = models.Session.objects.get(id=session_id)
    return {
        "messages": list(models.Message.objects.filter(session__id=session_id).order_by("seq")
                         .values_list("message_id", "parent_seq", "role", "parts",
                                      "metadata")),
        "compactions": list(models.Compaction.objects.filter(session_id=session_id)
                            .values_list("overlay_id", "summary")),
        "values": list(models.BlockValue.objects.filter(session_id=session_id)
                       .values_list("key", "content")),
        "entries": list(models.Entry.objects.filter(session_id=session_id)
                        .values_list("namespace", "key", "content")),
        "blocks": list(models.SessionBlock.objects.filter(session_id=session_id)
                       .values_list("label", "spec", "removed")),
        "row": (row.name, row.message_count, row.input_tokens, row.output_tokens,
                row.estimated_cost, row.end_reason, row.model, row.source),
    }


__all__ = ["Api", "append", "assistant_msg", "error", "ok", "stored_state", "user_msg"]
