"""A scripted model for chat tests: "remember X" calls set_context, anything else is echoed.
It implements memory_core.llm's LLMClient protocol, so the engine's real turn loop runs."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from typing import Any

from memory_core.llm import LLMResponse, StreamEvent, ToolCall, Usage


class FakeLLM:
    model = "fake-1"
    label = "Fake model (tests)"
    offline = True

    def __init__(self, delay: float = 0.0) -> None:
        self.delay = delay  # seconds before each streamed word, to see streaming happen

    def complete(self, *, system: str, history: list[Any], tools: list[Any]) -> LLMResponse:
        last = history[-1]
        if last.role == "tool" or any("output" in p for p in last.parts):  # a tool ran
            return LLMResponse("Saved it.", [], Usage(20, 3, 0.0), self.model)
        match = re.match(r"remember (.+)", last.text, re.I)
        if match and any(t.name == "set_context" for t in tools):
            call = ToolCall(f"call_{len(history)}", "set_context",
                            {"label": "memory", "content": match.group(1), "action": "append"})
            return LLMResponse("", [call], Usage(10, 5, 0.0), self.model)
        return LLMResponse(f"You said: {last.text}", [], Usage(8, 4, 0.5), self.model)

    def stream(self, *, system: str, history: list[Any], tools: list[Any]
               ) -> Iterator[StreamEvent]:
        response = self.complete(system=system, history=history, tools=tools)
        for word in re.findall(r"\S+\s*", response.text):
            time.sleep(self.delay)
            yield StreamEvent("text_delta", text=word)
        for call in response.tool_calls:
            yield StreamEvent("tool_call", tool_call=call)
        yield StreamEvent("done", response=response)


def install(monkeypatch: Any) -> None:
    """Make FakeLLM the default model of every session, for this test."""
    import memory_core.llm.factory

    monkeypatch.setattr(memory_core.llm.factory, "_default_factory", FakeLLM)


def patch_for_subprocess() -> None:
    """For a server in another process (the daphne test), before Django starts: the app
    hands the engine this factory instead of the one built from settings, paced by the
    setting that paces the offline demo model (ARBOR_DEMO_STREAM_DELAY)."""
    import sessions_app.engine_config as engine_config

    engine_config.llm_from_settings = (  # type: ignore[assignment]
        lambda: FakeLLM(engine_config.demo_stream_delay()))
