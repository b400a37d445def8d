"""Oversized tool outputs: the stored preview plus note never exceeds the limit (issue 9)."""

from __future__ import annotations

import pytest

from memory_core import SessionManager


def store(manager, settings, limit, output):
    settings.ARBOR_MAX_TOOL_OUTPUT_CHARS = limit
    m = SessionManager.for_agent(manager.agent_id)
    session = m.get_session(m.create("tools").id)
    stored = session.append_message({"role": "tool", "parts": [
        {"type": "tool-result", "toolCallId": "x", "output": output}]})
    assert session.get_message(stored.id).parts == stored.parts, "as stored"
    return stored.parts[0]["output"]


@pytest.mark.parametrize("limit", [1000, 100_000])
def test_output_at_the_limit_is_kept_whole_without_a_note(manager, settings, limit):
    output = "q" * limit
    assert store(manager, settings, limit, output) == output


@pytest.mark.parametrize("limit", [1000, 5000, 100_000])
@pytest.mark.parametrize("over", [1, 4000, 200_000])
def test_longer_output_is_a_preview_with_a_note_within_the_limit(manager, settings, limit, over):
    output = "".join(str(i % 10) for i in range(limit + over))
    stored = store(manager, settings, limit, output)
    assert len(stored) <= limit
    preview, note = stored.split("\n[", 1)
    assert output.startswith(preview) and len(preview) >= min(limit // 2, 2000)
    assert f"{limit + over} characters" in note and "re-run the tool" in note


@pytest.mark.parametrize("limit", [50, 20, 13, 12, 5, 1])
def test_tiny_limits_shorten_the_note_then_drop_it(manager, settings, limit):
    output = "abcdefghij" * 100
    stored = store(manager, settings, limit, output)
    assert len(stored) <= limit
    if limit > len("\n[truncated]"):
        assert stored.endswith("\n[truncated]") and output.startswith(stored[:-12])
        assert len(stored[:-12]) >= 1
    else:
        assert stored == output[:limit]


def test_json_outputs_count_their_serialised_length(manager, settings):
    stored = store(manager, settings, 300, {"rows": ["x" * 50] * 20})
    assert isinstance(stored, str) and len(stored) <= 300 and stored.startswith('{"rows":')
