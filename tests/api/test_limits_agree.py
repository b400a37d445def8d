"""Each limit is defined once (memory_core.limits): what the engine accepts, every door
accepts, and one character more is refused everywhere with a 4xx JSON error."""

from __future__ import annotations

import pytest
from pydantic import TypeAdapter

from memory_core import InvalidInput
from memory_core.limits import MAX_ID_LENGTH, MAX_LABEL, MAX_NAME, ROLES
from sessions_app import models
from sessions_app.api.message_schemas import MessageIn
from tests.api.conftest import error, ok


def test_an_id_of_the_full_length_works_through_the_api_and_one_more_is_refused(api, session_id):
    longest = "m" * MAX_ID_LENGTH
    url = f"/sessions/{session_id}/messages"
    ok(api.post(url, {"message": {"id": longest, "role": "user", "content": "hi"}}), 201)
    assert ok(api.get(f"{url}/{longest}"))["id"] == longest
    error(api.post(url, {"message": {"id": longest + "m", "role": "user", "content": "hi"}}), 422)
    error(api.get(f"{url}/{longest}m"), 404)


def test_an_entry_key_of_the_full_length_is_stored(api, session_id):
    ok(api.post(f"/sessions/{session_id}/context", {"label": "notes", "kind": "search"}), 201)
    key = "k" * MAX_ID_LENGTH
    url = f"/sessions/{session_id}/context/notes/entries/{key}"
    assert ok(api.put(url, {"content": "fact"}))["key"] == key
    error(api.put(url + "k", {"content": "fact"}), 404)


def test_label_limit_is_the_engine_rule_in_the_api(api, session_id, session):
    url = f"/sessions/{session_id}/context"
    ok(api.post(url, {"label": "L" * MAX_LABEL}), 201)
    error(api.post(url, {"label": "M" * (MAX_LABEL + 1)}), 422)
    with pytest.raises(InvalidInput):
        session.add_context("N" * (MAX_LABEL + 1))


def test_agent_and_session_names_share_the_name_limit(api):
    error(api.post("/agents", {"name": "a" * (MAX_NAME + 1)}), 422)
    agent = ok(api.post("/agents", {"name": "a" * MAX_NAME}), 201)
    error(api.post(f"/agents/{agent['id']}/sessions", {"name": "s" * (MAX_NAME + 1)}), 422)
    ok(api.post(f"/agents/{agent['id']}/sessions", {"name": "s" * MAX_NAME}), 201)


def test_columns_and_schemas_are_built_on_the_limits():
    assert models.Message._meta.get_field("message_id").max_length == MAX_ID_LENGTH
    assert models.Session._meta.get_field("name").max_length == MAX_NAME
    role = TypeAdapter(MessageIn).json_schema()["properties"]["role"]
    assert role["enum"] == list(ROLES)


def test_context_responses_document_exactly_the_engine_values(anonymous):
    from dataclasses import fields

    from memory_core.context import ContextBlock, ContextEntry, PromptStatus

    schemas = ok(anonymous.get("/api/v1/openapi.json"))["components"]["schemas"]
    for value, name in ((ContextBlock, "ContextBlockOut"), (ContextEntry, "EntryOut"),
                        (PromptStatus, "PromptStatusOut")):
        assert list(schemas[name]["properties"]) == [f.name for f in fields(value)], name


def test_search_limit_is_the_same_for_the_engine_and_the_api(api, session_id):
    from memory_core.limits import MAX_SEARCH_LIMIT
    from memory_core.search import clamp_limit

    assert clamp_limit(MAX_SEARCH_LIMIT + 50, 10) == MAX_SEARCH_LIMIT
    url = f"/sessions/{session_id}/search"
    ok(api.get(url, q="x", limit=MAX_SEARCH_LIMIT))
    error(api.get(url, q="x", limit=MAX_SEARCH_LIMIT + 1), 422)
