"""POST /usage: totals past 32 bits, refused past their limits, and an export that still
matches the OpenAPI document's own schema."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest
from referencing import Registry, Resource

from memory_core.limits import MAX_COST, MAX_TOKEN_TOTAL
from tests.api.conftest import error, ok


def usage(api: Any, session_id: str, i: int = 0, o: int = 0, cost: float = 0) -> Any:
    return api.post(f"/sessions/{session_id}/usage",
                    {"input_tokens": i, "output_tokens": o, "cost": cost})


def response_schema(spec: dict[str, Any], path: str, method: str, status: str) -> Any:
    """A validator for one operation's response, resolving $refs against the document."""
    schema = spec["paths"][path][method]["responses"][status]["content"]["application/json"]
    registry = Registry().with_resource("openapi.json", Resource.opaque(spec))
    return jsonschema.Draft202012Validator(
        {"$ref": "openapi.json#/" + _pointer(schema)}, registry=registry)


def _pointer(schema: dict[str, Any]) -> str:
    ref = schema["schema"]["$ref"]
    assert ref.startswith("#/")
    return ref[2:]


@pytest.mark.parametrize("value", [2**31 + 1, 3_116_575_807, 2**32 + 3])
def test_usage_past_32_bits_comes_back_exactly(api, session_id, value):
    body = ok(usage(api, session_id, value, value))
    assert (body["input_tokens"], body["output_tokens"]) == (value, value)
    assert ok(api.get(f"/sessions/{session_id}"))["input_tokens"] == value


def test_usage_past_the_limit_is_422_and_changes_nothing(api, session_id):
    ok(usage(api, session_id, MAX_TOKEN_TOTAL, MAX_TOKEN_TOTAL - 1, MAX_COST))
    ok(usage(api, session_id, 0, 1, 0))
    for args in ((1, 0, 0), (0, 1, 0), (0, 0, 1.0)):
        body = error(usage(api, session_id, *args), 422)
        assert "limit" in body["detail"]
    session = ok(api.get(f"/sessions/{session_id}"))
    assert (session["input_tokens"], session["output_tokens"], session["estimated_cost"]) == (
        MAX_TOKEN_TOTAL, MAX_TOKEN_TOTAL, MAX_COST)
    error(usage(api, session_id, MAX_TOKEN_TOTAL + 1), 422)


def test_export_at_the_limits_matches_the_openapi_schema(api, anonymous, session_id):
    ok(usage(api, session_id, MAX_TOKEN_TOTAL, MAX_TOKEN_TOTAL, MAX_COST))
    error(usage(api, session_id, 5, 5, 5.0), 422)
    spec = ok(anonymous.get("/api/v1/openapi.json"))
    document = ok(api.get(f"/sessions/{session_id}/export"))
    export_path = "/api/v1/sessions/{session_id}/export"
    response_schema(spec, export_path, "get", "200").validate(document)
    session = ok(api.get(f"/sessions/{session_id}"))
    response_schema(spec, "/api/v1/sessions/{session_id}", "get", "200").validate(session)
    # The schema states the bounds themselves, so a client can check before it sends.
    over = {**document, "session": {**document["session"], "input_tokens": MAX_TOKEN_TOTAL + 1}}
    with pytest.raises(jsonschema.ValidationError):
        response_schema(spec, export_path, "get", "200").validate(over)


def test_usage_input_schema_states_the_limits(anonymous):
    spec = ok(anonymous.get("/api/v1/openapi.json"))
    usage_in = spec["components"]["schemas"]["UsageIn"]["properties"]
    assert usage_in["input_tokens"]["maximum"] == MAX_TOKEN_TOTAL
    assert usage_in["cost"]["maximum"] == MAX_COST
    session_out = spec["components"]["schemas"]["SessionOut"]["properties"]
    assert session_out["output_tokens"]["maximum"] == MAX_TOKEN_TOTAL
    assert session_out["estimated_cost"]["maximum"] == MAX_COST
