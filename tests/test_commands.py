"""Management commands as a user runs them: real processes, exit status, stdout/stderr."""

from __future__ import annotations

import subprocess
import sys

from django.contrib.auth import get_user_model

from sessions_app import models
from tests.live_server import ROOT, server_env


def manage(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=server_env(),
                          capture_output=True, text=True, timeout=60)


def test_create_api_key_for_a_missing_agent_creates_nothing_and_says_why(transactional_db):
    result = manage("create_api_key", "newbie", "--agent", "nonexistent")

    assert result.returncode != 0
    assert "Created user" not in result.stdout and result.stdout.strip() == ""
    assert "nonexistent" in result.stderr and "Traceback" not in result.stderr
    assert not get_user_model().objects.filter(username="newbie").exists()
    assert not models.ApiKey.objects.exists()


def test_create_api_key_for_a_new_user_still_creates_it(transactional_db):
    result = manage("create_api_key", "newbie")

    assert result.returncode == 0, result.stderr
    assert "Created user 'newbie'" in result.stdout
    assert models.ApiKey.objects.filter(user__username="newbie").count() == 1
