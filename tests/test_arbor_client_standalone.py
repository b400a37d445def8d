"""arbor_client is usable by agents that have no Django: importing it (and the Agents SDK
adapter) must not pull in Django or the project's settings."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROBE = """
import sys
from arbor_client import ArborAPIError, ArborClient, AsyncArborClient
from arbor_client.agents_session import ArborSession
loaded = sorted(m for m in sys.modules if m.split(".")[0] in
                ("django", "ninja", "sessions_app", "memory_core", "arbor"))
print(",".join(loaded) or "clean")
"""


def test_arbor_client_imports_without_django():
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "clean"
