"""Fake LLM servers speaking the real HTTP protocols over loopback, scripted per test.

A FakeServer answers each POST with the next scripted Reply (JSON, an SSE stream, a
delay, or a dropped connection) and records every request so tests can check the body
and headers the client sent.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    status: int = 200
    body: Any = None  # JSON-encoded unless it is a str
    headers: dict[str, str] = field(default_factory=dict)
    events: list[tuple[str | None, Any]] | None = None  # SSE: (event name, data)
    delay: float = 0.0  # before the status line
    chunk_delay: float = 0.0  # between SSE events
    drop: bool = False  # close the connection without answering


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: Any


class FakeServer:
    def __init__(self) -> None:
        self.replies: deque[Reply] = deque()
        self.requests: list[Recorded] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                server.requests.append(Recorded(
                    "POST", self.path, {k.lower(): v for k, v in self.headers.items()},
                    json.loads(raw) if raw else None))
                reply = server.replies.popleft() if server.replies else Reply(
                    500, {"error": {"message": "no scripted reply left"}})
                if reply.delay:
                    time.sleep(reply.delay)
                if reply.drop:
                    self.close_connection = True
                    self.connection.shutdown(2)
                    return
                try:
                    if reply.events is not None:
                        self._stream(reply)
                    else:
                        self._json(reply)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up first (timeout tests)

            def _json(self, reply: Reply) -> None:
                data = reply.body if isinstance(reply.body, str) else json.dumps(reply.body)
                payload = data.encode()
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                for key, value in reply.headers.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(payload)

            def _stream(self, reply: Reply) -> None:
                self.send_response(reply.status)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.end_headers()
                for name, data in reply.events or []:
                    text = data if isinstance(data, str) else json.dumps(data)
                    frame = (f"event: {name}\n" if name else "") + f"data: {text}\n\n"
                    self.wfile.write(frame.encode())
                    self.wfile.flush()
                    if reply.chunk_delay:
                        time.sleep(reply.chunk_delay)
                self.close_connection = True

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.01,),
                                       daemon=True)

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}"

    def script(self, *replies: Reply) -> FakeServer:
        self.replies.extend(replies)
        return self

    @property
    def last(self) -> Recorded:
        return self.requests[-1]

    def __enter__(self) -> FakeServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


# ------------------------------------------------------------ OpenAI shapes
def openai_completion(text: str | None = "", *, tool_calls: list[dict[str, Any]] | None = None,
                      prompt_tokens: int = 11, completion_tokens: int = 7,
                      model: str = "gpt-4o-mini", finish_reason: str = "stop") -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return {
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens},
    }


def openai_tool_call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function",
            "function": {"name": name, "arguments": arguments}}


def openai_chunk(delta: dict[str, Any], *, finish_reason: str | None = None,
                 model: str = "gpt-4o-mini") -> tuple[None, dict[str, Any]]:
    return None, {"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": model,
                  "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]}


def openai_usage_chunk(prompt_tokens: int, completion_tokens: int) -> tuple[None, dict[str, Any]]:
    return None, {"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": [],
                  "usage": {"prompt_tokens": prompt_tokens,
                            "completion_tokens": completion_tokens}}


DONE: tuple[None, str] = (None, "[DONE]")


# ---------------------------------------------------------- Anthropic shapes
def anthropic_message(content: list[dict[str, Any]], *, stop_reason: str = "end_turn",
                      input_tokens: int = 20, output_tokens: int = 9,
                      model: str = "claude-haiku-4-5") -> dict[str, Any]:
    return {"id": "msg_1", "type": "message", "role": "assistant", "model": model,
            "content": content, "stop_reason": stop_reason, "stop_sequence": None,
            "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens}}


def anthropic_stream(blocks: list[dict[str, Any]], *, stop_reason: str = "end_turn",
                     input_tokens: int = 20, output_tokens: int = 9,
                     model: str = "claude-haiku-4-5") -> list[tuple[str, Any]]:
    """The documented event sequence; text and tool input split into several deltas."""
    events: list[tuple[str, Any]] = [("message_start", {"type": "message_start", "message": {
        "id": "msg_1", "type": "message", "role": "assistant", "model": model, "content": [],
        "stop_reason": None, "usage": {"input_tokens": input_tokens, "output_tokens": 1}}}),
        ("ping", {"type": "ping"})]
    for index, block in enumerate(blocks):
        if block["type"] == "text":
            start = {"type": "text", "text": ""}
            text = block["text"]
            deltas = [{"type": "text_delta", "text": text[i:i + 4]}
                      for i in range(0, len(text), 4)]
        else:
            start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            raw = json.dumps(block["input"])
            deltas = [{"type": "input_json_delta", "partial_json": raw[i:i + 5]}
                      for i in range(0, len(raw), 5)]
        events.append(("content_block_start", {"type": "content_block_start", "index": index,
                                               "content_block": start}))
        events += [("content_block_delta", {"type": "content_block_delta", "index": index,
                                            "delta": d}) for d in deltas]
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    events.append(("message_delta", {"type": "message_delta",
                                     "delta": {"stop_reason": stop_reason,
                                               "stop_sequence": None},
                                     "usage": {"output_tokens": output_tokens}}))
    events.append(("message_stop", {"type": "message_stop"}))
    return events
