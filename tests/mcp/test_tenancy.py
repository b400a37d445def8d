"""Whom MCP serves: over HTTP the API key decides, scoped to its agents exactly as the
JSON API is (another tenant's session answers as missing); over stdio the --agent."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import httpx
import pytest

pytest.importorskip("mcp")  # the `mcp` extra (`make install` installs it)

from sessions_app.auth import create_key, revoke  # noqa: E402
from sessions_app.models import ApiKey  # noqa: E402
from tests.conftest import make_agent  # noqa: E402
from tests.live_server import ROOT, server_env  # noqa: E402

from .clients import http_client, run, text_of  # noqa: E402
from .conftest import World  # noqa: E402

INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {},
    "clientInfo": {"name": "curl", "version": "1"}}}
ACCEPT = {"Accept": "application/json, text/event-stream"}


@pytest.fixture
def world_http(world: World, daphne_base: str) -> World:
    world.base = daphne_base
    return world


def post(world: World, key: str | None, query: str = "") -> httpx.Response:
    headers = {**ACCEPT, **({"Authorization": f"Bearer {key}"} if key else {})}
    return httpx.post(f"{world.base}/mcp/{query}", json=INITIALIZE, headers=headers, timeout=30)


def test_a_live_key_is_needed(world_http: World) -> None:
    row = ApiKey.objects.get(user__username="mallory")
    revoke(row)
    for key in (None, "", "arb_not-a-key", world_http.mallory_key):
        answer = post(world_http, key)
        assert answer.status_code == 401, (key, answer.text)
        assert answer.json()["code"] == "unauthorized"
        assert answer.headers["www-authenticate"] == "Bearer"
    assert post(world_http, world_http.key).status_code == 200


def test_a_foreign_session_in_scope_is_missing(world_http: World) -> None:
    foreign = post(world_http, world_http.key, f"?session={world_http.mallory_session_id}")
    missing = post(world_http, world_http.key, "?session=nope")
    assert foreign.status_code == missing.status_code == 404
    assert foreign.json() == {"detail": f"session {world_http.mallory_session_id} not found",
                              "code": "not_found"}
    assert missing.json()["detail"] == "session nope not found"
    assert post(world_http, world_http.key, f"?agent={world_http.mallory_agent_id}"
                ).status_code == 404


def test_a_body_over_the_limit_is_refused(world_http: World) -> None:
    from django.conf import settings

    big = {**INITIALIZE, "params": {**INITIALIZE["params"],
                                    "pad": "x" * (settings.ARBOR_MAX_BODY_BYTES + 1)}}
    answer = httpx.post(f"{world_http.base}/mcp/", json=big, timeout=30, headers={
        **ACCEPT, "Authorization": f"Bearer {world_http.key}"})
    assert answer.status_code == 413


def test_each_key_sees_its_own_agent(world_http: World) -> None:
    async def main() -> Any:
        async with http_client(world_http.base, world_http.mallory_key) as client:
            sessions = await client.call_tool("list_sessions", {})
            history = await client.call_tool("read_history",
                                             {"session_id": world_http.session_id})
            hits = await client.call_tool("search", {"query": "deploy Thursday"})
            return sessions, history, hits

    sessions, history, hits = run(main)
    assert world_http.mallory_session_id in text_of(sessions)
    assert world_http.session_id not in text_of(sessions)
    assert history.is_error
    assert text_of(history) == f"Error: session {world_http.session_id} not found"
    assert "Thursday" not in text_of(hits)


def test_a_key_for_several_agents_names_one(world_http: World) -> None:
    alice = make_agent("alice", "second agent")
    _, limited = create_key(alice.owner, agent=alice)

    async def main() -> Any:
        async with http_client(world_http.base, world_http.key) as client:
            ambiguous = await client.call_tool("list_sessions", {})
            named = await client.call_tool("list_sessions", {"agent_id": world_http.agent_id})
        async with http_client(world_http.base, limited) as client:
            own = await client.call_tool("list_sessions", {})
            other = await client.call_tool("read_history",
                                           {"session_id": world_http.session_id})
            tools = (await client.list_tools()).tools
        return ambiguous, named, own, other, tools

    ambiguous, named, own, other, tools = run(main)
    assert ambiguous.is_error and "give agent_id" in text_of(ambiguous)
    assert world_http.agent_id in text_of(ambiguous) and alice.id in text_of(ambiguous)
    assert not named.is_error and world_http.session_id in text_of(named)
    assert not own.is_error and world_http.session_id not in text_of(own)
    assert other.is_error and "not found" in text_of(other)
    # a key limited to one agent is never asked which
    assert all("agent_id" not in t.input_schema["properties"] for t in tools)


@pytest.mark.parametrize("args", [
    ["--agent", "nope"],
    ["--agent", "{agent}", "--session", "{foreign}"],
    ["--agent", "{agent}", "--session", "nope"],
])
def test_stdio_refuses_an_unknown_agent_or_foreign_session(world: World, args: list[str]
                                                           ) -> None:
    filled = [a.format(agent=world.agent_id, foreign=world.mallory_session_id) for a in args]
    done = subprocess.run([sys.executable, "manage.py", "arbor_mcp", *filled], cwd=ROOT,
                          env=server_env(), capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 1 and done.stdout == ""
    assert "not found" in done.stderr and "Traceback" not in done.stderr
