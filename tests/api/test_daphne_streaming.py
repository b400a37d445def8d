"""Chat streaming through daphne (the server `make run` uses): events arrive as the model
produces them, not all at once at the end. Django's ASGI handler would buffer a sync
iterator whole; the API hands it an async one."""

from __future__ import annotations

import time

import httpx
import pytest

from sessions_app.auth import create_key
from tests.conftest import make_agent
from tests.live_server import running_daphne

DELAY = 0.4  # seconds before each word the scripted model streams
LAUNCH = (
    "from tests.api.fake_llm import patch_for_subprocess; patch_for_subprocess(); "
    "import sys; from daphne.cli import CommandLineInterface; "
    "CommandLineInterface().run(sys.argv[1:])"
)


@pytest.fixture
def daphne(transactional_db, tmp_path):
    with running_daphne(tmp_path, env={"ARBOR_DEMO_STREAM_DELAY": str(DELAY)},
                        launch=LAUNCH) as base:
        yield base


def test_chat_events_stream_through_daphne_as_they_happen(daphne):
    agent = make_agent("alice", "streamer")
    key = create_key(agent.owner)[1]
    headers = {"Authorization": f"Bearer {key}"}
    session = httpx.post(f"{daphne}/api/v1/agents/{agent.id}/sessions", json={},
                         headers=headers).json()["id"]
    start = time.monotonic()
    arrivals: list[tuple[float, str]] = []
    with httpx.stream("POST", f"{daphne}/api/v1/sessions/{session}/chat", headers=headers,
                      json={"content": "one two three four", "stream": True},
                      timeout=30) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        for line in response.iter_lines():
            if line.startswith("event:"):
                arrivals.append((time.monotonic() - start, line[6:].strip()))
    kinds = [kind for _, kind in arrivals]
    assert kinds[-1] == "done" and kinds.count("text_delta") == 6  # "You said: one two three four"
    first, last = arrivals[0][0], arrivals[-1][0]
    # Six words, DELAY apart: buffered, they would all arrive together at the end.
    assert last - first >= 4 * DELAY, arrivals
    history = httpx.get(f"{daphne}/api/v1/sessions/{session}/history", headers=headers).json()
    assert history["messages"][-1]["parts"][0]["text"] == "You said: one two three four"
