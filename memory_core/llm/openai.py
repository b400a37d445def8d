"""Any OpenAI-compatible chat-completions endpoint: OpenAI, vLLM, Ollama, llama.cpp
server, ... (POST {base_url}/chat/completions), non-streaming and streaming."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Unpack

from ..messages import Message
from ..tools import Tool
from .base import LLMResponse, StreamEvent, ToolCall, new_call_id, parse_arguments, usage_of
from .convert import to_openai_messages
from .http import HTTPClient, HTTPOptions

OPENAI_URL = "https://api.openai.com/v1"
DEFAULT_OPENAI_MODEL = "gpt-4o-mini"


class OpenAICompatibleClient(HTTPClient):
    """POST {base_url}/chat/completions: OpenAI, vLLM, Ollama, llama.cpp server, ..."""

    provider = "OpenAI-compatible"

    def __init__(self, base_url: str = OPENAI_URL, api_key: str | None = None,
                 model: str = DEFAULT_OPENAI_MODEL, **options: Unpack[HTTPOptions]) -> None:
        super().__init__(base_url=base_url, api_key=api_key, model=model, **options)

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
