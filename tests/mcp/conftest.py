"""MCP fixtures: two tenants with keys and a seeded session, a daphne serving /mcp/, and
which transport a test runs on (the clients are in clients.py). Rows the tests make are
committed (transactional_db) for the server processes to see. Nothing here imports `mcp`:
without the extra, each test module skips itself.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from memory_core import SessionManager
from sessions_app.auth import create_key
from tests.conftest import assistant_msg, make_agent, user_msg
from tests.live_server import running_daphne

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


@pytest.fixture(params=TRANSPORTS)
def transport(request: pytest.FixtureRequest, world: World) -> str:
    if request.param == "http":
        world.base = request.getfixturevalue("daphne_base")
    return str(request.param)
