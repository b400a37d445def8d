"""Known part types must have their fields of the right type; unknown types pass unchanged.
And the `content` shorthand: a string, never together with parts."""

from __future__ import annotations

import pytest

from memory_core import InvalidInput

GOOD_PARTS = [
    {"type": "text", "text": "hello"},
    {"type": "reasoning", "text": "thinking"},
    {"type": "tool-call", "toolCallId": "c1", "toolName": "lookup", "input": {"q": 1}},
    {"type": "tool-result", "toolCallId": "c1", "toolName": "lookup", "output": [1, 2],
     "isError": False},
    {"type": "tool-weather", "toolCallId": "c2", "state": "input-streaming"},
    {"type": "tool-weather", "toolCallId": "c3", "state": "output-error", "input": None,
     "errorText": "timeout"},
    {"type": "dynamic-tool", "toolCallId": "c4", "toolName": "calc", "state": "output-available",
     "input": "1+1", "output": 2},
    {"type": "source-url", "sourceId": "s1", "url": "https://example.com", "title": "Ex"},
    {"type": "file", "mediaType": "image/png", "url": "data:image/png;base64,AA=="},
    {"type": "step-start"},
    {"type": "data-weather", "id": "w1", "data": {"temp": 21}},
    {"type": "custom-thing", "text": 5, "anything": ["goes"]},
]

BAD_PARTS = [
    ({"type": "text", "text": 123}, "parts[0].text"),
    ({"type": "text"}, "'text'"),
    ({"type": "reasoning", "text": {"a": 1}}, "parts[0].text"),
    ({"type": "tool-call", "toolCallId": 7, "toolName": "x", "input": {}}, "toolCallId"),
    ({"type": "tool-call", "toolCallId": "c", "input": {}}, "toolName"),
    ({"type": "tool-result", "output": "x"}, "toolCallId"),
    ({"type": "tool-weather", "toolCallId": "c", "state": 3}, "parts[0].state"),
    ({"type": "tool-weather", "toolCallId": "c", "errorText": ["x"]}, "errorText"),
    ({"type": "dynamic-tool", "toolCallId": "c", "state": "input-available"}, "toolName"),
    ({"type": "source-url", "sourceId": "s", "url": 1}, "parts[0].url"),
    ({"type": "file", "mediaType": "text/plain", "url": None}, "parts[0].url"),
    ({"type": "data-x", "id": 5, "data": {}}, "parts[0].id"),
]


def test_well_typed_and_unknown_parts_are_stored_unchanged(manager):
    s = manager.create("parts")
    stored = manager.append(s.id, {"role": "assistant", "parts": GOOD_PARTS})
    assert stored.parts == GOOD_PARTS


@pytest.mark.parametrize(("part", "named"), BAD_PARTS)
def test_wrongly_typed_fields_are_refused_naming_part_and_field(manager, part, named):
    s = manager.create("bad parts")
    with pytest.raises(InvalidInput) as caught:
        manager.append(s.id, {"role": "assistant", "parts": [part]})
    assert named in caught.value.detail
    with pytest.raises(InvalidInput) as caught:
        manager.append(s.id, {"role": "assistant", "parts": [{"type": "text", "text": "ok"}, part]})
    assert "parts[1]" in caught.value.detail
    assert manager.get_message_count(s.id) == 0


def test_content_shorthand_is_one_text_part(manager):
    s = manager.create("short")
    stored = manager.append(s.id, {"role": "user", "content": "hi there"})
    assert stored.parts == [{"type": "text", "text": "hi there"}]
    for bad in ({"role": "user", "content": 5},
                {"role": "user", "content": "x", "parts": [{"type": "text", "text": "y"}]}):
        with pytest.raises(InvalidInput):
            manager.append(s.id, bad)
    assert manager.get_message_count(s.id) == 1
