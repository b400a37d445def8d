"""A real daphne server on loopback for tests that need one (streaming, browser, README).

pytest-django's `live_server` is WSGI and has no WebSockets or streaming, so these tests
start the same server `make run` uses, in a subprocess, against the test database:

    with running_daphne(tmp_path, env={"ARBOR_FAKE_LLM_DELAY": "0.1"}) as base:
        httpx.get(f"{base}/health")

The test must use `transactional_db` (or `live_db`) so rows it creates are committed and
visible to the server process.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from django.db import connection

ROOT = Path(__file__).resolve().parents[1]
# Plain daphne; a test may pass its own `launch` code (e.g. to patch in a fake LLM first).
DAPHNE = "import sys; from daphne.cli import CommandLineInterface; CommandLineInterface().run(sys.argv[1:])"


def database_url() -> str:
    """The test database as a DATABASE_URL, for a server process to use."""
    s = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{s['NAME']}"
    auth = s["USER"] + (f":{s['PASSWORD']}" if s.get("PASSWORD") else "")
    return f"postgres://{auth}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def server_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment a server (or a README command) needs to reach the test database."""
    return {**os.environ, "DATABASE_URL": database_url(),
            "DJANGO_SETTINGS_MODULE": "arbor.settings", "PYTHONPATH": str(ROOT),
            **(extra or {})}


@contextmanager
def running_daphne(tmp_path: Path, *, env: Mapping[str, str] | None = None,
                   launch: str = DAPHNE) -> Iterator[str]:
    """Serve `arbor.asgi:application` on a free loopback port; yields the base URL."""
    port = free_port()
    log_path = tmp_path / f"daphne-{port}.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-c", launch, "-b", "127.0.0.1", "-p", str(port),
             "arbor.asgi:application"],
            cwd=ROOT, env=server_env(env), stdout=log, stderr=subprocess.STDOUT)
        base = f"http://127.0.0.1:{port}"
        try:
            _wait_until_up(base, process, log_path)
            yield base
        finally:
            process.terminate()
            try:
                process.wait(timeout=3)
            except subprocess.TimeoutExpired:
                process.kill()


def _wait_until_up(base: str, process: subprocess.Popen[bytes], log_path: Path) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail("daphne exited:\n" + log_path.read_text(errors="replace"))
        try:
            if httpx.get(f"{base}/health", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    pytest.fail("daphne did not start:\n" + log_path.read_text(errors="replace"))
