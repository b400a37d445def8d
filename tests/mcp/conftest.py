"""MCP fixtures: two tenants with keys and a seeded session, a daphne serving /mcp/, and
real `mcp` clients over both transports (a `manage.py arbor_mcp` subprocess for stdio).

The clients run in their own event loop (anyio.run) from sync tests, so the ORM checks
around them run plainly; rows the tests make are committed (transactional_db) for the
server processes to see.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

import anyio
import pytest

pytest.importorskip("mcp")  # the `mcp` extra; `make install` installs it

import httpx2  # noqa: E402
from mcp.client.session import ClientSession  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

from memory_core import SessionManager  # noqa: E402
from sessions_app.auth import create_key  # noqa: E402
from tests.conftest import assistant_msg, make_agent, user_msg  # noqa: E402
from tests.live_server import ROOT, running_daphne, server_env  # noqa: E402

T = TypeVar("T")
TRANSPORTS = ("stdio", "http")


@dataclass
class World:
    agent_id: str
    session_id: str  # alice's, with blocks and two messages
    other_session_id: str  # alice's second session
    key: str  # alice's, all her agents
    mallory_agent_id: str
    mallory_session_id: str
    mallory_key: str
    first_id: str  # the first message of session_id
    base: str = ""  # daphne's URL, when the test has one

    def manager(self) -> SessionManager:
        return SessionManager.for_agent(self.agent_id)


BLOCKS = [
    {"label": "memory", "description": "Facts about the user", "max_tokens": 30},
    {"label": "persona", "content": "You are a careful assistant.", "kind": "readonly"},
    {"label": "kb", "kind": "search"},
]


@pytest.fixture
def world(transactional_db: Any) -> World:
    alice = make_agent("alice", "assistant")
    alice.context = BLOCKS
    alice.save()
    manager = SessionManager.for_agent(alice)
    info = manager.create("main")
    session = manager.get_session(info.id)
    first = session.append_message(user_msg("Our deploy moved to Thursday"))
    session.append_message(assistant_msg("Noted: the deploy is on Thursday."))
    other = manager.create("second")
    mallory = make_agent("mallory", "other")
    mallory_manager = SessionManager.for_agent(mallory)
    theirs = mallory_manager.create("secret")
    mallory_manager.get_session(theirs.id).append_message(user_msg("mallory's secret plan"))
    _, key = create_key(alice.owner)
    _, mallory_key = create_key(mallory.owner)
    return World(alice.id, info.id, other.id, key, mallory.id, theirs.id, mallory_key,
                 first.id)


@pytest.fixture(scope="module")
def daphne_base(django_db_setup: Any, django_db_blocker: Any,
                tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One daphne for the module (the tables are emptied between tests, not the server)."""
    with django_db_blocker.unblock(), running_daphne(tmp_path_factory.mktemp("daphne")) as base:
        yield base


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


def open_client(transport: str, world: World, session_id: str | None = None
                ) -> Any:
    """A connected ClientSession acting for alice, with session_id in scope if given."""
    if transport == "stdio":
        return stdio_session(world.agent_id, session_id)
    return http_client(world.base, world.key, f"?session={session_id}" if session_id else "")


def run(fn: Callable[[], Awaitable[T]]) -> T:
    """Run async client code from a sync test (whose ORM calls stay plain)."""
    return anyio.run(fn)


@pytest.fixture(params=TRANSPORTS)
def transport(request: pytest.FixtureRequest, world: World) -> str:
    if request.param == "http":
        world.base = request.getfixturevalue("daphne_base")
    return str(request.param)


def text_of(result: Any) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


__all__ = ["World", "http_client", "open_client", "run", "stdio_params", "stdio_session",
           "text_of"]
