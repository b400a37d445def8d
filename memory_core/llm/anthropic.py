"""Anthropic's Messages API (POST /v1/messages), non-streaming and streaming."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Unpack

from ..messages import Message
from ..tools import Tool
from .base import LLMResponse, StreamEvent, ToolCall, Usage, new_call_id, parse_arguments, usage_of
from .convert import to_anthropic_messages
from .http import HTTPClient, HTTPOptions

ANTHROPIC_URL = "https://api.anthropic.com"
ANTHROPIC_VERSION = "2023-06-01"
DEFAULT_ANTHROPIC_MODEL = "claude-haiku-4-5"


class AnthropicClient(HTTPClient):
    """Claude through the Messages API, with tools in Anthropic's format."""

    provider = "Anthropic"

    def __init__(self, api_key: str, model: str = DEFAULT_ANTHROPIC_MODEL,
                 base_url: str = ANTHROPIC_URL, **options: Unpack[HTTPOptions]) -> None:
        # The Messages API requires max_tokens; OpenAI-compatible servers do not.
        options.setdefault("max_tokens", 1024)
        super().__init__(base_url=base_url, api_key=api_key, model=model, **options)

    def _headers(self) -> dict[str, str]:
        return {"x-api-key": self._api_key or "", "anthropic-version": ANTHROPIC_VERSION}

    def body(self, *, system: str, history: Sequence[Message], tools: Sequence[Tool],
             stream: bool = False) -> dict[str, Any]:
        """The request body this client sends (public for inspection and tests)."""
        system_text, messages = to_anthropic_messages(history, system=system)
        body: dict[str, Any] = {"model": self.model, "max_tokens": self.max_tokens,
                                "messages": messages}
        if system_text:
            body["system"] = system_text
        if tools:
            body["tools"] = [t.to_format("anthropic") for t in tools]
        if stream:
            body["stream"] = True
        return {**body, **self.extra_body}

    def complete(self, *, system: str, history: list[Message], tools: list[Tool]
                 ) -> LLMResponse:
        data = self._post("/v1/messages", self.body(system=system, history=history,
                                                    tools=tools))
        text: list[str] = []
        calls: list[ToolCall] = []
        for block in data.get("content") or []:
            if block.get("type") == "text":
                text.append(str(block.get("text", "")))
            elif block.get("type") == "tool_use":
                arguments, bad = parse_arguments(block.get("input"))
                calls.append(ToolCall(str(block.get("id") or new_call_id()),
                                      str(block.get("name", "")), arguments, bad))
        model = str(data.get("model") or self.model)
        return LLMResponse("".join(text), calls, self._usage(model, data.get("usage") or {}),
                           model, data.get("stop_reason"))

    def stream(self, *, system: str, history: list[Message], tools: list[Tool]
               ) -> Iterator[StreamEvent]:
        body = self.body(system=system, history=history, tools=tools, stream=True)
        text: list[str] = []
        blocks: dict[int, dict[str, str]] = {}  # tool_use blocks by content index
        usage: dict[str, Any] = {}
        model, stop = self.model, None
        for event, data in self._lines("/v1/messages", body):
            chunk = self._chunk(data)
            kind = chunk.get("type") or event
            if kind == "message_start":
                message = chunk.get("message") or {}
                model = str(message.get("model") or model)
                usage.update(message.get("usage") or {})
            elif kind == "content_block_start":
                block = chunk.get("content_block") or {}
                if block.get("type") == "tool_use":
                    blocks[int(chunk.get("index", len(blocks)))] = {
                        "id": str(block.get("id") or new_call_id()),
                        "name": str(block.get("name", "")), "json": ""}
                elif block.get("type") == "text" and block.get("text"):
                    text.append(block["text"])
                    yield StreamEvent("text_delta", text=block["text"])
            elif kind == "content_block_delta":
                delta = chunk.get("delta") or {}
                if delta.get("type") == "text_delta" and delta.get("text"):
                    text.append(delta["text"])
                    yield StreamEvent("text_delta", text=delta["text"])
                elif delta.get("type") == "input_json_delta":
                    slot = blocks.get(int(chunk.get("index", -1)))
                    if slot is not None:
                        slot["json"] += str(delta.get("partial_json", ""))
            elif kind == "message_delta":
                stop = (chunk.get("delta") or {}).get("stop_reason") or stop
                usage.update({k: v for k, v in (chunk.get("usage") or {}).items()
                              if v is not None})
            elif kind == "message_stop":
                break
            elif kind == "error":
                error = chunk.get("error") or {}
                self._fail(f"stream error: {self._scrub(str(error.get('message') or error))}")
        calls = []
        for _, slot in sorted(blocks.items()):
            arguments, bad = parse_arguments(slot["json"])
            call = ToolCall(slot["id"], slot["name"], arguments, bad)
            calls.append(call)
            yield StreamEvent("tool_call", tool_call=call)
        response = LLMResponse("".join(text), calls, self._usage(model, usage), model, stop)
        yield StreamEvent("done", response=response)

    def _chunk(self, data: str) -> dict[str, Any]:
        try:
            chunk = json.loads(data)
        except ValueError:
            self._fail(f"sent a stream event that is not JSON: {data[:100]!r}")
        if not isinstance(chunk, dict):
            self._fail("sent a stream event that is not a JSON object")
        return chunk

    @staticmethod
    def _usage(model: str, usage: Mapping[str, Any]) -> Usage:
        # Cached prompt tokens are reported apart from input_tokens; they are still input.
        tokens_in = sum(v for k in ("input_tokens", "cache_creation_input_tokens",
                                    "cache_read_input_tokens")
                        if isinstance(v := usage.get(k), int))
        return usage_of(model, tokens_in, usage.get("output_tokens"))
