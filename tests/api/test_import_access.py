"""Import into another tenant's agent is a 404 whatever the body; into one's own agent a
bad document is a 422 naming the problem."""

from __future__ import annotations

import pytest

from tests.api.conftest import append, error, ok, user_msg

BAD_BODIES = [{}, {"session": {"id": 5}}, {"format": "nope"}, [], "text"]


@pytest.fixture
def document(api, session_id):
    append(api, session_id, user_msg("exported words"))
    return ok(api.get(f"/sessions/{session_id}/export"))


@pytest.mark.parametrize("body", BAD_BODIES)
def test_import_into_a_foreign_agent_is_404_even_with_a_bad_body(mallory, agent_id, body):
    detail = error(mallory.post(f"/agents/{agent_id}/import", body), 404, "not_found")["detail"]
    missing = error(mallory.post("/agents/no-such-agent/import", body), 404)["detail"]
    assert detail.replace(agent_id, "X") == missing.replace("no-such-agent", "X")


def test_import_into_a_foreign_agent_is_404_with_a_good_body_or_no_json(
    mallory, agent_id, document
):
    error(mallory.post(f"/agents/{agent_id}/import", document), 404)
    error(mallory.post(f"/agents/{agent_id}/import", raw_body=b"{not json"), 404)


def test_bad_documents_into_ones_own_agent_are_422_naming_the_problem(api, agent_id, document):
    body = error(api.post(f"/agents/{agent_id}/import", {**document, "format": "nope"}), 422)
    assert body["detail"].startswith("format:"), body
    body = error(api.post(f"/agents/{agent_id}/import",
                          {**document, "session": {**document["session"], "id": 5}}), 422)
    assert "session.id" in body["detail"], body
    error(api.post(f"/agents/{agent_id}/import", raw_body=b"{not json"), 422, "invalid_json")
    imported = ok(api.post(f"/agents/{agent_id}/import", document), 201)
    assert imported["message_count"] == 1


def test_openapi_still_describes_the_import_body(anonymous):
    spec = ok(anonymous.get("/api/v1/openapi.json"))
    body = spec["paths"]["/api/v1/agents/{agent_id}/import"]["post"]["requestBody"]
    schema = body["content"]["application/json"]["schema"]
    assert schema == {"$ref": "#/components/schemas/SessionDocument"}
    assert "SessionDocument" in spec["components"]["schemas"]
