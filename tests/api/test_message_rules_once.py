"""A message meets its rules in one place (memory_core.message_rules): the API schema
checks JSON types, the engine's check_message the rest, once, and a 422 names the field."""

from __future__ import annotations

import pytest

from memory_core import InvalidInput, message_rules
from memory_core.messages import prepare
from tests.api.conftest import error, ok


@pytest.mark.parametrize(("message", "field"), [
    ({"role": "robot", "content": "x"}, "role"),
    ({"role": "user", "content": 5}, "content"),
    ({"role": "user", "parts": [{"type": "text"}]}, "parts"),
    ({"role": "user", "content": "x", "metadata": [1]}, "metadata"),
    ({"role": "user", "content": "x", "id": " padded "}, "id"),
])
def test_engine_errors_name_the_field(message, field):
    with pytest.raises(InvalidInput) as caught:
        prepare(message)
    assert caught.value.field == field


def test_an_id_the_engine_refuses_is_a_validation_error_naming_message_id(api, session_id):
    body = error(api.post(f"/sessions/{session_id}/messages",
                          {"message": {"id": " padded ", "role": "user", "content": "x"}}),
                 422, "validation_error")
    assert body["detail"].startswith("message.id: "), body


def test_a_batch_error_names_the_message_and_field(api, session_id):
    batch = {"messages": [{"role": "user", "content": "fine"}, {"role": "bot", "content": "x"}]}
    body = error(api.post(f"/sessions/{session_id}/messages/batch", batch), 422,
                 "validation_error")
    assert body["detail"].startswith("messages.1.role: "), body


def test_the_part_rules_run_once_per_message_on_the_http_path(api, session_id, monkeypatch):
    calls = []
    real = message_rules.check_parts
    monkeypatch.setattr(message_rules, "check_parts", lambda parts: calls.append(1) or real(parts))
    ok(api.post(f"/sessions/{session_id}/messages",
                {"message": {"role": "user", "parts": [{"type": "text", "text": "hi"}]}}), 201)
    assert len(calls) == 1
