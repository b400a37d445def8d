"""Chat streaming through daphne (the server `make run` uses): events arrive as the model
produces them, not all at once at the end. Django's ASGI handler would buffer a sync
iterator whole; the API hands it an async one."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from django.db import connection

from sessions_app.auth import create_key
from tests.conftest import make_agent

ROOT = Path(__file__).resolve().parents[2]
DELAY = 0.4  # seconds before each word the scripted model streams
LAUNCH = (
    "from tests.api.fake_llm import patch_for_subprocess; patch_for_subprocess(); "
    "import sys; from daphne.cli import CommandLineInterface; "
    "CommandLineInterface().run(sys.argv[1:])"
)


def _database_url() -> str:
    s = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{s['NAME']}"
    auth = s["USER"] + (f":{s['PASSWORD']}" if s.get("PASSWORD") else "")
    return f"postgres://{auth}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def daphne(transactional_db, tmp_path):
    port = _free_port()
    env = {**os.environ, "DATABASE_URL": _database_url(), "ARBOR_FAKE_LLM_DELAY": str(DELAY),
           "DJANGO_SETTINGS_MODULE": "arbor.settings", "PYTHONPATH": str(ROOT)}
    log = (tmp_path / "daphne.log").open("wb")
    process = subprocess.Popen(
        [sys.executable, "-c", LAUNCH, "-b", "127.0.0.1", "-p", str(port),
         "arbor.asgi:application"], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(150):
            try:
                if httpx.get(f"{base}/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if process.poll() is not None:
                break
            time.sleep(0.1)
        else:
            pytest.fail("daphne did not start")
        if process.poll() is not None:
            pytest.fail((tmp_path / "daphne.log").read_text())
        yield base
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()


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
