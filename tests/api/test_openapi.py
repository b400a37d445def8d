"""The OpenAPI document and the docs page."""

from __future__ import annotations

import json

import pytest

from .conftest import ok

SPEC_PATHS = {
    "/agents", "/agents/{agent_id}", "/agents/{agent_id}/sessions", "/sessions/{session_id}",
    "/sessions/{session_id}/fork", "/sessions/{session_id}/usage",
    "/sessions/{session_id}/compact", "/sessions/{session_id}/compact-and-split",
    "/sessions/{session_id}/compactions", "/sessions/{session_id}/messages",
    "/sessions/{session_id}/messages/batch", "/sessions/{session_id}/messages/{message_id}",
    "/sessions/{session_id}/messages/{message_id}/branches", "/sessions/{session_id}/history",
    "/sessions/{session_id}/leaf", "/sessions/{session_id}/tree",
    "/sessions/{session_id}/search", "/agents/{agent_id}/search",
    "/sessions/{session_id}/context", "/sessions/{session_id}/context/{label}",
    "/sessions/{session_id}/context/{label}/append",
    "/sessions/{session_id}/context/{label}/entries/{key}",
    "/sessions/{session_id}/system-prompt", "/sessions/{session_id}/system-prompt/refresh",
    "/sessions/{session_id}/tools", "/sessions/{session_id}/tools/{name}",
    "/sessions/{session_id}/chat", "/sessions/{session_id}/export", "/agents/{agent_id}/import",
}


def test_openapi_document_lists_every_spec_endpoint(anonymous):
    spec = ok(anonymous.get("/api/v1/openapi.json"))
    assert spec["openapi"].startswith("3.")
    paths = {p.removeprefix("/api/v1") for p in spec["paths"]}
    assert SPEC_PATHS <= paths
    assert spec["components"]["securitySchemes"]["ApiKeyAuth"]["scheme"] == "bearer"


def test_every_operation_documents_its_errors(anonymous):
    spec = ok(anonymous.get("/api/v1/openapi.json"))
    for path, ops in spec["paths"].items():
        for method, op in ops.items():
            codes = set(op["responses"])
            assert "401" in codes, (method, path)
            if "{" in path:
                assert "404" in codes, (method, path)
            if "requestBody" in op:
                assert {"413", "422"} <= codes, (method, path)
                schema = op["requestBody"]["content"]["application/json"]["schema"]
                assert schema, (method, path)
            error = op["responses"]["401"]["content"]["application/json"]["schema"]
            assert error == {"$ref": "#/components/schemas/ErrorOut"}


def _no_repeated_keys(pairs: list[tuple[str, object]]) -> dict[str, object]:
    keys = [key for key, _ in pairs]
    repeated = {key for key in keys if keys.count(key) > 1}
    if repeated:
        raise ValueError(f"repeated keys {sorted(repeated)} in {keys}")
    return dict(pairs)


def test_openapi_document_has_no_repeated_keys(anonymous):
    # Swagger UI's YAML parser stops at a repeated key ("duplicated mapping key");
    # json.loads would silently keep the last one.
    response = anonymous.get("/api/v1/openapi.json")
    assert response.status_code == 200
    try:
        json.loads(response.content, object_pairs_hook=_no_repeated_keys)
    except ValueError as exc:
        pytest.fail(str(exc))


def test_chat_documents_json_and_event_stream_in_one_200(anonymous):
    spec = ok(anonymous.get("/api/v1/openapi.json"))
    ok_200 = spec["paths"]["/api/v1/sessions/{session_id}/chat"]["post"]["responses"]["200"]
    assert ok_200["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/MessageOut"}
    event = ok_200["content"]["text/event-stream"]["schema"]
    assert "done" in event["properties"]["event"]["enum"]
    assert "stream=true" in ok_200["description"]


def test_chat_documents_its_event_stream(anonymous):
    spec = ok(anonymous.get("/api/v1/openapi.json"))
    content = spec["paths"]["/api/v1/sessions/{session_id}/chat"]["post"]["responses"]["200"][
        "content"]
    assert {"application/json", "text/event-stream"} <= set(content)


def test_docs_page_renders_without_a_cdn(anonymous):
    response = anonymous.get("/api/v1/docs")
    assert response.status_code == 200
    html = response.content.decode()
    assert "swagger" in html.lower() and "openapi.json" in html
    assert "cdn.jsdelivr" not in html
