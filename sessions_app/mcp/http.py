"""Streamable HTTP at /mcp/: the API key's bearer check, then the SDK's transport.

    POST /mcp/                       agent-wide tools (the key's agent; `agent_id` when
                                     the key reaches several)
    POST /mcp/?session=<id>          plus that session's memory tools and resources
    POST /mcp/?agent=<id>            agent-wide tools for that agent by default

Stateless, JSON responses: each request carries its key and stands alone, so it works
with several daphne workers and needs no sticky sessions (the tools never call back to
the client). A missing or revoked key is a 401, a session or agent the key cannot reach a
404, both in the JSON API's error shape, before the MCP layer sees the request; a body
over ARBOR_MAX_BODY_BYTES is a 413, as in the JSON API; no database connection free in
time, a 503 with Retry-After (db_pool.py).

Daphne does not run the ASGI lifespan, so the SDK's session manager (whose task group the
transport needs) is started by the first request, in a task of its own that lives as
long as the event loop.
"""

from __future__ import annotations

import asyncio
from typing import Any
from urllib.parse import parse_qs

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import OperationalError, close_old_connections

from memory_core import ArborError

from .. import db_pool
from ..api.render import dumps
from ..auth import principal_for_key
from .scope import McpScope

PATHS = ("/mcp", "/mcp/")
SCOPE_KEY = "arbor.mcp_scope"

Scope = dict[str, Any]


def with_mcp(django_app: Any) -> Any:
    """The HTTP app: /mcp/ to the MCP server when the `mcp` extra is installed, the rest
    to Django (without the extra, /mcp/ is Django's 404 like any unknown path)."""
    try:
        import mcp  # noqa: F401
    except ImportError:
        return django_app
    endpoint = McpEndpoint()

    async def app(scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"] in PATHS:
            await endpoint(scope, receive, send)
        else:
            await django_app(scope, receive, send)

    return app


async def _error(send: Any, status: int, detail: str, code: str,
                 headers: tuple[tuple[bytes, bytes], ...] = ()) -> None:
    body = dumps({"detail": detail, "code": code})
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-type", b"application/json; charset=utf-8"),
        (b"content-length", str(len(body)).encode()), *headers]})
    await send({"type": "http.response.body", "body": body})


def _bearer(scope: Scope) -> str:
    for name, value in scope["headers"]:
        if name == b"authorization":
            text: str = value.decode("latin-1")
            kind, _, token = text.partition(" ")
            if kind.lower() == "bearer":
                return token.strip()
    return ""


def _resolve(token: str, query: dict[str, list[str]]) -> McpScope | None:
    """The caller's scope (None: no live key). Raises NotFound for ?session/?agent."""
    close_old_connections()
    try:
        principal = principal_for_key(token)
        if principal is None:
            return None
        return McpScope.build(principal, agent_id=_one(query, "agent"),
                              session_id=_one(query, "session"))
    finally:
        close_old_connections()


def _one(query: dict[str, list[str]], name: str) -> str | None:
    values = query.get(name)
    return str(values[-1]) if values else None


def _scope_of(ctx: Any) -> McpScope:
    """The scope __call__ resolved for this HTTP request."""
    if ctx.request is None:  # not an HTTP request: nothing to act for
        raise RuntimeError("an MCP request without its HTTP request")
    found: McpScope = ctx.request.scope[SCOPE_KEY]
    return found


class McpEndpoint:
    def __init__(self) -> None:
        from .server import build_server

        self.server = build_server(_scope_of)
        self._manager: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._ready: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        try:
            found = await sync_to_async(_resolve)(_bearer(scope), query)
        except ArborError as exc:
            await _error(send, 404, exc.detail, exc.code)
            return
        except OperationalError as exc:
            if not db_pool.no_connection(exc):
                raise
            db_pool.refused("MCP request")
            await _error(send, 503, db_pool.DETAIL, db_pool.CODE, (
                (b"retry-after", str(db_pool.RETRY_AFTER_SECONDS).encode()),))
            return
        if found is None:
            await _error(send, 401, "send a live API key: Authorization: Bearer <key>",
                         "unauthorized", ((b"www-authenticate", b"Bearer"),))
            return
        manager = await self._started()
        await manager.handle_request({**scope, SCOPE_KEY: found}, receive, send)

    async def _started(self) -> Any:
        """The session manager, running in a task of this event loop (started once)."""
        loop = asyncio.get_running_loop()
        if self._loop is not loop:  # first request, or a new loop (tests)
            from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

            self._loop, self._ready = loop, asyncio.Event()
            self._manager = StreamableHTTPSessionManager(
                app=self.server, stateless=True, json_response=True,
                max_request_body_size=settings.ARBOR_MAX_BODY_BYTES)
            self._task = loop.create_task(self._run(self._manager, self._ready))
        assert self._ready is not None and self._task is not None
        await self._ready.wait()
        if self._task.done():  # it could not start: the next request tries again
            self._loop = None
            raise RuntimeError("the MCP session manager stopped") from (
                None if self._task.cancelled() else self._task.exception())
        return self._manager

    @staticmethod
    async def _run(manager: Any, ready: asyncio.Event) -> None:
        try:
            async with manager.run():
                ready.set()
                await asyncio.Event().wait()  # until the loop ends
        finally:
            ready.set()  # never leave a request waiting on a manager that is gone
