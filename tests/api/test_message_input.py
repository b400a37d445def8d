"""Message bodies: part fields checked by the engine's rule, the `content` shorthand
accepted on every write, and both shown in the OpenAPI document."""

from __future__ import annotations

from tests.api.conftest import error, ok
from tests.engine.test_part_fields import BAD_PARTS, GOOD_PARTS


def test_wrongly_typed_part_fields_are_422_naming_the_field(api, session_id):
    for part, named in BAD_PARTS:
        body = error(api.post(f"/sessions/{session_id}/messages",
                              {"message": {"role": "assistant", "parts": [part]}}), 422)
        assert named in body["detail"], body
    batch = {"messages": [{"role": "user", "content": "fine"},
                          {"role": "assistant", "parts": [{"type": "text", "text": 123}]}]}
    body = error(api.post(f"/sessions/{session_id}/messages/batch", batch), 422)
    assert "parts[0].text" in body["detail"]
    assert ok(api.get(f"/sessions/{session_id}"))["message_count"] == 0


def test_well_typed_parts_are_stored(api, session_id):
    stored = ok(api.post(f"/sessions/{session_id}/messages",
                         {"message": {"role": "assistant", "parts": GOOD_PARTS}}), 201)
    assert stored["parts"] == GOOD_PARTS


def test_content_shorthand_on_append_batch_and_put(api, session_id):
    text_part = [{"type": "text", "text": "hello"}]
    first = ok(api.post(f"/sessions/{session_id}/messages",
                        {"message": {"role": "user", "content": "hello"}}), 201)
    assert first["parts"] == text_part
    batch = ok(api.post(f"/sessions/{session_id}/messages/batch",
                        {"messages": [{"role": "assistant", "content": "a"},
                                      {"role": "user", "content": "b"}]}), 201)
    assert [m["parts"][0]["text"] for m in batch["items"]] == ["a", "b"]
    put = ok(api.put(f"/sessions/{session_id}/messages/{first['id']}",
                     {"message": {"role": "user", "content": "edited"}}))
    assert put["parts"] == [{"type": "text", "text": "edited"}]


def test_content_must_be_a_string_and_not_beside_parts(api, session_id):
    url = f"/sessions/{session_id}/messages"
    for message in ({"role": "user", "content": 5},
                    {"role": "user", "content": ["x"]},
                    {"role": "user", "content": "x", "parts": [{"type": "text", "text": "y"}]},
                    {"role": "user"}):
        body = error(api.post(url, {"message": message}), 422)
        assert "content" in body["detail"] or "parts" in body["detail"], body
    assert ok(api.get(f"/sessions/{session_id}"))["message_count"] == 0


def test_openapi_shows_the_content_shorthand(anonymous):
    spec = ok(anonymous.get("/api/v1/openapi.json"))
    props = spec["components"]["schemas"]["MessageIn"]["properties"]
    assert "content" in props and "parts" in props
    assert "role" in spec["components"]["schemas"]["MessageIn"]["required"]
