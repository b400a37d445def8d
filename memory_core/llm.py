"""LLM clients behind one Protocol: any OpenAI-compatible chat-completions endpoint (here),
Anthropic's Messages API (`llm_anthropic`), and the offline demo model (`demo_model`).

Clients are synchronous. Failures reach callers as LLMError (see `llm_http`, which holds
the retry and error handling both HTTP clients share).
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import httpx

from .convert import to_openai_messages
from .llm_http import HTTPClient, LLMError
from .messages import Message
from .tools import Tool

OPENAI_URL = "https://api.openai.com/v1"
DEFAULT_OPENAI_MODEL = "gpt-4o-mini"

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


class OpenAICompatibleClient(HTTPClient):
    """POST {base_url}/chat/completions: OpenAI, vLLM, Ollama, llama.cpp server, ..."""

    provider = "OpenAI-compatible"

    def __init__(self, base_url: str = OPENAI_URL, api_key: str | None = None,
                 model: str = DEFAULT_OPENAI_MODEL, timeout: float = 60, max_retries: int = 3,
                 transport: httpx.BaseTransport | None = None, *, backoff: float = 0.5,
                 max_backoff: float = 30.0, max_tokens: int | None = None,
                 extra_body: Mapping[str, Any] | None = None,
                 sleep: Callable[[float], None] | None = None) -> None:
        super().__init__(base_url=base_url, api_key=api_key, model=model, timeout=timeout,
                         max_retries=max_retries, backoff=backoff, max_backoff=max_backoff,
                         transport=transport, sleep=sleep)
        self.max_tokens = max_tokens
        self.extra_body = dict(extra_body or {})

    def _headers(self) -> dict[str, str]:
        # Local servers (Ollama, llama.cpp) take no key; send none rather than an empty one.
        return {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}

    def body(self, *, system: str, history: Sequence[Message], tools: Sequence[Tool],
             stream: bool = False) -> dict[str, Any]:
        """The request body this client sends (public for inspection and tests)."""
        body: dict[str, Any] = {"model": self.model,
                                "messages": to_openai_messages(history, system=system)}
        if tools:
            body["tools"] = [t.to_format("openai") for t in tools]
        if self.max_tokens:
            body["max_tokens"] = self.max_tokens
        if stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
        return {**body, **self.extra_body}

    def complete(self, *, system: str, history: list[Message], tools: list[Tool]
                 ) -> LLMResponse:
        data = self._post("/chat/completions", self.body(system=system, history=history,
                                                         tools=tools))
        choices = data.get("choices") or [{}]
        choice = choices[0] if isinstance(choices[0], dict) else {}
        message = choice.get("message") or {}
        calls = []
        for raw in message.get("tool_calls") or []:
            function = raw.get("function") or {}
            arguments, bad = parse_arguments(function.get("arguments"))
            calls.append(ToolCall(raw.get("id") or new_call_id(), str(function.get("name", "")),
                                  arguments, bad))
        usage = data.get("usage") or {}
        model = str(data.get("model") or self.model)
        return LLMResponse(_content_text(message.get("content")), calls,
                           usage_of(model, usage.get("prompt_tokens"),
                                    usage.get("completion_tokens")),
                           model, choice.get("finish_reason"))

    def stream(self, *, system: str, history: list[Message], tools: list[Tool]
               ) -> Iterator[StreamEvent]:
        body = self.body(system=system, history=history, tools=tools, stream=True)
        text: list[str] = []
        slots: dict[int, dict[str, str]] = {}  # tool-call deltas by their index
        usage: dict[str, Any] = {}
        model, finish = self.model, None
        for _, data in self._lines("/chat/completions", body):
            if data.strip() == "[DONE]":
                break
            chunk = self._chunk(data)
            model = str(chunk.get("model") or model)
            usage = chunk.get("usage") or usage
            for choice in chunk.get("choices") or []:
                delta = choice.get("delta") or {}
                finish = choice.get("finish_reason") or finish
                if isinstance(delta.get("content"), str) and delta["content"]:
                    text.append(delta["content"])
                    yield StreamEvent("text_delta", text=delta["content"])
                for raw in delta.get("tool_calls") or []:
                    _merge_call_delta(slots, raw)
        calls = []
        for _, slot in sorted(slots.items()):
            arguments, bad = parse_arguments(slot["arguments"])
            call = ToolCall(slot["id"] or new_call_id(), slot["name"], arguments, bad)
            calls.append(call)
            yield StreamEvent("tool_call", tool_call=call)
        response = LLMResponse("".join(text), calls, usage_of(
            model, usage.get("prompt_tokens"), usage.get("completion_tokens")), model, finish)
        yield StreamEvent("done", response=response)

    def _chunk(self, data: str) -> dict[str, Any]:
        try:
            chunk = json.loads(data)
        except ValueError:
            self._fail(f"sent a stream chunk that is not JSON: {data[:100]!r}")
        if not isinstance(chunk, dict):
            self._fail("sent a stream chunk that is not a JSON object")
        if chunk.get("error"):  # vLLM and proxies report mid-stream failures this way
            error = chunk["error"]
            message = error.get("message") if isinstance(error, dict) else error
            self._fail(f"stream error: {self._scrub(str(message))}")
        return chunk


def _merge_call_delta(slots: dict[int, dict[str, str]], raw: Mapping[str, Any]) -> None:
    index = raw.get("index")
    if not isinstance(index, int):  # servers that omit it send each call whole
        index = len(slots) if raw.get("id") or not slots else max(slots)
    slot = slots.setdefault(index, {"id": "", "name": "", "arguments": ""})
    function = raw.get("function") or {}
    slot["id"] = slot["id"] or str(raw.get("id") or "")
    slot["name"] = slot["name"] or str(function.get("name") or "")
    arguments = function.get("arguments")
    if isinstance(arguments, str):
        slot["arguments"] += arguments
    elif arguments is not None:
        slot["arguments"] = json.dumps(arguments)


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # some servers answer with content parts
        return "".join(str(p.get("text", "")) for p in content
                       if isinstance(p, dict) and p.get("type") == "text")
    return ""


def client_from_env(env: Mapping[str, str] = os.environ) -> LLMClient:
    """The configured model (SPEC §15): ARBOR_LLM_BASE_URL names an OpenAI-compatible
    endpoint; else ARBOR_ANTHROPIC_API_KEY selects Anthropic; else ARBOR_LLM_API_KEY alone
    selects OpenAI itself; with none of them, the offline demo model."""
    from .demo_model import DemoModel
    from .llm_anthropic import DEFAULT_ANTHROPIC_MODEL, AnthropicClient

    def get(name: str) -> str | None:
        return (env.get(name) or "").strip() or None

    base_url, key, model = get("ARBOR_LLM_BASE_URL"), get("ARBOR_LLM_API_KEY"), get(
        "ARBOR_LLM_MODEL")
    anthropic_key = get("ARBOR_ANTHROPIC_API_KEY")
    if base_url:
        return OpenAICompatibleClient(base_url, key, model or DEFAULT_OPENAI_MODEL)
    if anthropic_key:
        return AnthropicClient(anthropic_key, model or DEFAULT_ANTHROPIC_MODEL)
    if key:
        return OpenAICompatibleClient(OPENAI_URL, key, model or DEFAULT_OPENAI_MODEL)
    return DemoModel()


__all__ = [
    "HTTPClient", "LLMClient", "LLMError", "LLMResponse", "OpenAICompatibleClient", "StreamEvent",
    "ToolCall", "Usage", "client_from_env", "cost",
]
