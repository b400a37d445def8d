"""The one change made to the SDK's own session tests: their session constructors
build an Arbor session on the live Arbor server: `SQLiteSession` an `ArborSession`,
`AsyncSQLiteSession` an `AsyncArborSession` (and, in a second run of its tests, an
`ArborSession`, whose `close()` can be awaited too).

Two constructions with the same `(db_path, session_id)` share one Arbor session, as two
`SQLiteSession`s on one file share rows; ":memory:" is a new session each time. The
object keeps the SDK's session id (`session_id`); its messages live in the Arbor session
`arbor_session_id`. conftest.py points `SERVER` at the test's server.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest

from arbor_client import ArborClient
from arbor_client.agents_session import ArborSession, AsyncArborSession

SERVER: dict[str, Any] = {}  # url, key, agent_id, sessions: {(db_path, id): arbor id}
_memory = itertools.count()


def _arbor_session(session_id: str, db_path: str | Path) -> tuple[ArborClient, str]:
    client = SERVER["client"]  # one pool per test: every open HTTP connection holds a
    # server thread and its database connection until the client closes
    key = (str(db_path), session_id)
    if key[0] == ":memory:":
        key = (f":memory:{next(_memory)}", session_id)
    sessions = SERVER["sessions"]
    if key not in sessions:
        sessions[key] = client.create_session(SERVER["agent_id"], session_id[:200] or "sdk",
                                              source="openai-agents")["id"]
    return client, sessions[key]


class _Swapped:
    """The SDK's constructor signature, building the Arbor session class it is mixed into."""

    def __init__(self, session_id: str, db_path: str | Path = ":memory:",
                 sessions_table: str = "agent_sessions", messages_table: str = "agent_messages",
                 session_settings: Any = None) -> None:
        client, arbor_id = _arbor_session(session_id, db_path)
        super().__init__(arbor_id, client=client,  # type: ignore[call-arg]
                         session_settings=session_settings)
        self.arbor_session_id = arbor_id
        self.session_id = session_id


class SQLiteSession(_Swapped, ArborSession):
    pass


class AsyncSQLiteSession(_Swapped, AsyncArborSession):
    pass


class ArborSessionAsAsync(_Swapped, ArborSession):
    """AsyncSQLiteSession's tests on `ArborSession` itself, whose `close()` also works
    awaited; named as the SDK's class, which the tests' "... is closed" checks name."""


ArborSessionAsAsync.__name__ = ArborSessionAsAsync.__qualname__ = "AsyncSQLiteSession"


@pytest.fixture(autouse=True)
def arbor_server(live_server, transactional_db):
    """Every SDK test gets the live server and an agent to keep its sessions
    (used by upstream/conftest.py, which conftest.py writes)."""
    from sessions_app.auth import create_key
    from tests.conftest import make_agent

    agent = make_agent("sdk", "sdk tests")
    key = create_key(agent.owner)[1]
    with ArborClient(live_server.url, key) as client:
        SERVER.update(url=live_server.url, key=key, agent_id=agent.id, sessions={},
                      client=client)
        yield SERVER
    SERVER.clear()
