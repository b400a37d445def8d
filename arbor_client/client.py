"""A Python client for Arbor's JSON API, sync (`ArborClient`) and async (`AsyncArborClient`).

    from arbor_client import ArborClient

    with ArborClient("http://127.0.0.1:8000", api_key="arb_...") as arbor:
        agent = arbor.create_agent("helper", context=[{"label": "memory", "max_tokens": 500}])
        session = arbor.create_session(agent["id"], "first chat")
        arbor.append(session["id"], {"role": "user", "parts": [{"type": "text", "text": "hi"}]})
        print(arbor.history(session["id"])["messages"])

Every method returns the JSON of SPEC §9 as plain dicts (None for 204 answers); the async
client has the same methods, to be awaited. Errors raise `ArborAPIError` with the HTTP
status and the API's `code` and `detail`. Only httpx is needed.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx

# The operations live in endpoints.py; API_PREFIX stays importable from here.
from .endpoints import API_PREFIX as API_PREFIX
from .endpoints import _drop_none, _Endpoints, _seg

__all__ = ["ArborAPIError", "ArborClient", "AsyncArborClient"]


class ArborAPIError(Exception):
    """An error answer of the API: `status` (HTTP), `code` and `detail` (its JSON body)."""

    def __init__(self, status: int, code: str, detail: str, body: Any = None) -> None:
        super().__init__(f"{status} {code}: {detail}")
        self.status = status
        self.code = code
        self.detail = detail
        self.body = body


def _result(response: httpx.Response) -> Any:
    if response.status_code >= 400:
        try:
            body = response.json()
            code, detail = str(body.get("code", "error")), str(body.get("detail", ""))
        except (ValueError, AttributeError):
            body, code, detail = response.text, "error", response.text[:500]
        raise ArborAPIError(response.status_code, code, detail, body)
    if response.status_code == 204 or not response.content:
        return None
    return response.json()


def _sse_event(lines: list[str]) -> dict[str, Any] | None:
    import json

    kind, data = "message", []
    for line in lines:
        if line.startswith("event:"):
            kind = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].lstrip())
    if not data:
        return None
    return {"type": kind, **json.loads("\n".join(data))}


class _SSEBuffer:
    """Collects a server-sent event's lines; a blank line completes the event."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def feed(self, line: str) -> dict[str, Any] | None:
        if line:
            self.lines.append(line)
            return None
        event, self.lines = _sse_event(self.lines), []
        return event


def _chat_body(content: str, parent_id: str | None) -> dict[str, Any]:
    return _drop_none({"content": content, "parent_id": parent_id, "stream": True})


class ArborClient(_Endpoints):
    """Synchronous client. Pass `client=` to reuse an httpx.Client (or a test transport)."""

    def __init__(self, base_url: str, api_key: str, *, timeout: float = 60.0,
                 client: httpx.Client | None = None) -> None:
        self._http = client or httpx.Client(timeout=timeout)
        self._connect(base_url, api_key)

    def _call(self, method: str, path: str, *, json: Any = None,
              params: dict[str, Any] | None = None) -> Any:
        response = self._http.request(method, json=json, **self._request_args(path, params))
        return _result(response)

    def iter_agents(self, *, page_size: int = 100) -> Iterator[dict[str, Any]]:
        """Every agent, following cursors."""
        cursor = None
        while True:
            page = self.list_agents(limit=page_size, cursor=cursor)
            yield from page["items"]
            cursor = page["next_cursor"]
            if not cursor:
                return

    def iter_sessions(self, agent_id: str, *, page_size: int = 100) -> Iterator[dict[str, Any]]:
        cursor = None
        while True:
            page = self.list_sessions(agent_id, limit=page_size, cursor=cursor)
            yield from page["items"]
            cursor = page["next_cursor"]
            if not cursor:
                return

    def chat_stream(self, session_id: str, content: str,
                    parent_id: str | None = None) -> Iterator[dict[str, Any]]:
        """The turn's events as they come: text_delta, tool_call, tool_result, done/error."""
        with self._http.stream("POST", f"{self._base}/sessions/{_seg(session_id)}/chat",
                               json=_chat_body(content, parent_id),
                               headers=self._headers) as response:
            if response.status_code >= 400:
                response.read()
                _result(response)
            events = _SSEBuffer()
            for line in response.iter_lines():
                if (event := events.feed(line)) is not None:
                    yield event

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> ArborClient:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class AsyncArborClient(_Endpoints):
    """Asynchronous client: the same methods as ArborClient, each to be awaited."""

    def __init__(self, base_url: str, api_key: str, *, timeout: float = 60.0,
                 client: httpx.AsyncClient | None = None) -> None:
        self._http = client or httpx.AsyncClient(timeout=timeout)
        self._connect(base_url, api_key)

    async def _call(self, method: str, path: str, *, json: Any = None,  # type: ignore[override]
                    params: dict[str, Any] | None = None) -> Any:
        response = await self._http.request(method, json=json,
                                            **self._request_args(path, params))
        return _result(response)

    async def iter_agents(self, *, page_size: int = 100) -> AsyncIterator[dict[str, Any]]:
        cursor = None
        while True:
            page = await self.list_agents(limit=page_size, cursor=cursor)
            for item in page["items"]:
                yield item
            cursor = page["next_cursor"]
            if not cursor:
                return

    async def iter_sessions(self, agent_id: str, *,
                            page_size: int = 100) -> AsyncIterator[dict[str, Any]]:
        cursor = None
        while True:
            page = await self.list_sessions(agent_id, limit=page_size, cursor=cursor)
            for item in page["items"]:
                yield item
            cursor = page["next_cursor"]
            if not cursor:
                return

    async def chat_stream(self, session_id: str, content: str,
                          parent_id: str | None = None) -> AsyncIterator[dict[str, Any]]:
        async with self._http.stream("POST", f"{self._base}/sessions/{_seg(session_id)}/chat",
                                     json=_chat_body(content, parent_id),
                                     headers=self._headers) as response:
            if response.status_code >= 400:
                await response.aread()
                _result(response)
            events = _SSEBuffer()
            async for line in response.aiter_lines():
                if (event := events.feed(line)) is not None:
                    yield event

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncArborClient:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()
