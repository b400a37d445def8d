"""Real `mcp` clients for the tests, over both transports: a `manage.py arbor_mcp`
subprocess for stdio, the module's daphne for streamable HTTP. They run in their own
event loop (anyio.run) from sync tests, so the ORM checks around them run plainly."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import anyio
import httpx2
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from tests.live_server import ROOT, server_env

from .conftest import World

T = TypeVar("T")


@asynccontextmanager
async def http_client(base: str, key: str | None, query: str = "") -> AsyncIterator[ClientSession]:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        streamable_http_client(f"{base}/mcp/{query}", http_client=http) as (read, write),
        ClientSession(read, write) as client,
    ):
        await client.initialize()
        yield client


def stdio_params(agent_id: str, session_id: str | None = None) -> StdioServerParameters:
    args = ["manage.py", "arbor_mcp", "--agent", agent_id]
    if session_id is not None:
        args += ["--session", session_id]
    return StdioServerParameters(command=sys.executable, args=args, env=server_env(),
                                 cwd=str(ROOT))


@asynccontextmanager
async def stdio_session(agent_id: str, session_id: str | None = None
                        ) -> AsyncIterator[ClientSession]:
    async with (
        stdio_client(stdio_params(agent_id, session_id)) as (read, write),
        ClientSession(read, write) as client,
    ):
        await client.initialize()
        yield client


def open_client(transport: str, world: World, session_id: str | None = None) -> Any:
    """A connected ClientSession acting for alice, with session_id in scope if given."""
    if transport == "stdio":
        return stdio_session(world.agent_id, session_id)
    return http_client(world.base, world.key, f"?session={session_id}" if session_id else "")


def run(fn: Callable[[], Awaitable[T]]) -> T:
    """Run async client code from a sync test (whose ORM calls stay plain)."""
    return anyio.run(fn)


def text_of(result: Any) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)
