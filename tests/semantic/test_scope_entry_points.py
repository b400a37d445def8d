"""scope=path|session|agent through the agent's session_search tool (on the branch the
running turn stands on), MCP's search tool and arbor_client's parameters."""

from __future__ import annotations

import json

import httpx
import pytest

from arbor_client import ArborClient
from sessions_app.auth import Principal
from sessions_app.semantic.embed import embed_all
from tests.conftest import assistant_msg, user_msg


@pytest.fixture
def branches(manager, session):
    """A question answered twice (two branches), and another session."""
    q = session.append_message(user_msg("which car should I buy?", id="q"))
    session.append_message(assistant_msg("the red car", id="a1"), parent_id=q.id)
    session.append_message(assistant_msg("the blue car", id="a2"), parent_id=q.id)
    other = manager.get_session(manager.create("other").id)
    other.append_message(user_msg("a car elsewhere", id="far"))
    return session


def _tool(session, name="session_search"):
    return next(t for t in session.tools() if t.name == name)


def test_session_search_tool_recalls_the_branch_the_turn_stands_on(manager, branches):
    session = manager.get_session(branches.id)
    tool = _tool(session)
    assert tool.input_schema["properties"]["scope"]["enum"] == ["agent", "session", "path"]
    session.turn_leaf = "a1"  # a regenerated answer's turn, on the first branch
    on_branch = tool.execute({"query": "car", "scope": "path"})
    assert "[id a1]" in on_branch and "[id a2]" not in on_branch and "far" not in on_branch
    whole = tool.execute({"query": "car", "scope": "session"})
    assert "[id a1]" in whole and "[id a2]" in whole and "[id far]" not in whole
    past = tool.execute({"query": "car"})
    assert "[id far]" in past and "[id a1]" not in past
    refused = tool.execute({"query": "car", "scope": "galaxy"})
    assert refused.startswith("Error:") and "scope" in refused


def test_session_search_tool_marks_hits_found_by_meaning(manager, session, fake_embeddings):
    other = manager.get_session(manager.create("other").id)
    other.append_message(user_msg("picked up the new Skoda yesterday", id="skoda"))
    embed_all(fake_embeddings)
    out = _tool(manager.get_session(session.id)).execute({"query": "What car do I drive?"})
    assert "[id skoda]" in out and "found by meaning" in out


def test_mcp_search_takes_a_scope(manager, agent, branches):
    from sessions_app.mcp.scope import McpScope
    from sessions_app.mcp.tools import agent_tools

    scope = McpScope.build(Principal(user_id=agent.owner_id, agent_id=None),
                           agent_id=agent.id, session_id=branches.id)
    tool = next(t for t in agent_tools(scope) if t.name == "search")

    def ids(**args):
        return {h["id"] for h in json.loads(tool.execute({"query": "car", **args}))["items"]}

    assert ids() == {"q", "a1", "a2", "far"}
    assert ids(scope="session") == {"q", "a1", "a2"}
    assert ids(scope="path", leaf_id="a1") == {"q", "a1"}
    assert ids(scope="path") == {"q", "a2"}
    assert json.loads(tool.execute({"query": "car"}))["semantic"] == "off"


def test_arbor_client_sends_scope_and_leaf():
    seen = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.url)
        return httpx.Response(200, json={"items": [], "semantic": "off", "pending": 0})

    client = ArborClient("http://arbor.test", "arb_key",
                         client=httpx.Client(transport=httpx.MockTransport(handler)))
    client.search("s1", "car", scope="path", leaf="m9")
    client.search("s1", "car")
    assert dict(seen[0].params) == {"q": "car", "scope": "path", "leaf": "m9"}
    assert dict(seen[1].params) == {"q": "car"}
