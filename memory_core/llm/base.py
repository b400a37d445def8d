"""What every LLM client shares: the `LLMClient` Protocol, the values it returns
(`LLMResponse`, `StreamEvent`, `ToolCall`, `Usage`), `LLMError`, and the cost and
argument helpers the clients build those values with."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from ..errors import ArborError
from ..messages import Message
from ..tools import Tool

# USD per million (input, output) tokens, list prices; longest matching prefix wins.
PRICES: dict[str, tuple[float, float]] = {
    "gpt-4o-mini": (0.15, 0.60), "gpt-4o": (2.50, 10.00),
    "gpt-4.1-nano": (0.10, 0.40), "gpt-4.1-mini": (0.40, 1.60), "gpt-4.1": (2.00, 8.00),
    "gpt-5-nano": (0.05, 0.40), "gpt-5-mini": (0.25, 2.00), "gpt-5": (1.25, 10.00),
    "o4-mini": (1.10, 4.40), "o3-mini": (1.10, 4.40), "o3": (2.00, 8.00),
    "claude-3-5-haiku": (0.80, 4.00), "claude-3-haiku": (0.25, 1.25),
    "claude-haiku-4-5": (1.00, 5.00), "claude-3-7-sonnet": (3.00, 15.00),
    "claude-3-5-sonnet": (3.00, 15.00), "claude-sonnet-4": (3.00, 15.00),
    "claude-opus-4": (15.00, 75.00), "claude-opus-4-5": (5.00, 25.00),
}


class LLMError(ArborError):
    """A model call that failed: unreachable, timed out, refused, or answered garbage."""

    code = "llm_error"

    def __init__(self, detail: str, *, status: int | None = None) -> None:
        super().__init__(detail)
        self.status = status


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A call the model asked for. `raw_arguments` is set when its arguments were not a
    JSON object; `arguments` is then {} and `argument_error` says what went wrong."""

    id: str
    name: str
    arguments: dict[str, Any]
    raw_arguments: str | None = None

    @property
    def argument_error(self) -> str | None:
        """An error string to store as the tool's result instead of running it, or None."""
        if self.raw_arguments is None:
            return None
        return (f"Error: the arguments for {self.name} were not a valid JSON object "
                f"({self.raw_arguments[:200]!r}); call it again with JSON arguments.")


@dataclass(frozen=True, slots=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float = 0.0

    def __add__(self, other: Usage) -> Usage:
        return Usage(self.input_tokens + other.input_tokens,
                     self.output_tokens + other.output_tokens, self.cost + other.cost)


@dataclass(frozen=True, slots=True)
class LLMResponse:
    text: str
    tool_calls: list[ToolCall]
    usage: Usage
    model: str
    finish_reason: str | None = None


@dataclass(frozen=True, slots=True)
class StreamEvent:
    type: Literal["text_delta", "tool_call", "done"]
    text: str = ""
    tool_call: ToolCall | None = None
    response: LLMResponse | None = None


class LLMClient(Protocol):
    """A chat model that can call tools. `label` names it for people (the UI)."""

    model: str
    label: str

    def complete(self, *, system: str, history: list[Message], tools: list[Tool]
                 ) -> LLMResponse:
        """One model answer to the history. Raises LLMError."""
        ...

    def stream(self, *, system: str, history: list[Message], tools: list[Tool]
               ) -> Iterator[StreamEvent]:
        """The same answer as events: text deltas, then tool calls, then one `done`
        carrying the whole LLMResponse. Raises LLMError, possibly after some deltas."""
        ...


def cost(model: str, input_tokens: int, output_tokens: int) -> float:
    """Estimated USD cost by the PRICES table; 0 for models it does not know (local ones)."""
    name = model.rsplit("/", 1)[-1].lower()
    prefix = max((p for p in PRICES if name.startswith(p)), key=len, default=None)
    if prefix is None:
        return 0.0
    price_in, price_out = PRICES[prefix]
    return (input_tokens * price_in + output_tokens * price_out) / 1_000_000


def usage_of(model: str, input_tokens: Any, output_tokens: Any) -> Usage:
    tokens_in = input_tokens if isinstance(input_tokens, int) else 0
    tokens_out = output_tokens if isinstance(output_tokens, int) else 0
    return Usage(tokens_in, tokens_out, cost(model, tokens_in, tokens_out))


def parse_arguments(raw: Any) -> tuple[dict[str, Any], str | None]:
    """Tool-call arguments as a dict, and the raw text when they were not a JSON object."""
    if isinstance(raw, dict):
        return raw, None  # some servers (Ollama) send an object, not a string
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return {}, None
    text = raw if isinstance(raw, str) else json.dumps(raw)
    try:
        value = json.loads(text)
    except ValueError:
        return {}, text
    return (value, None) if isinstance(value, dict) else ({}, text)


def new_call_id() -> str:
    return f"call_{uuid.uuid4().hex[:24]}"
