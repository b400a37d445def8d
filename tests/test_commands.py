"""Management commands as a user runs them: real processes, exit status, stdout/stderr."""

from __future__ import annotations

import queue
import re
import subprocess
import sys
import threading
import time

import httpx
import pytest
from axes.models import AccessAttempt
from django.contrib.auth import get_user_model
from django.utils import timezone

from sessions_app import models
from tests.live_server import ROOT, free_port, server_env


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


# --- the first ten minutes (issue 25): where `make run` serves, and a lost demo password --

def _announced(process: subprocess.Popen[str], *, within: float = 60) -> list[str]:
    """The server's stdout up to the banner's last line, read in a thread so a server that
    never says it is up fails the test instead of hanging it."""
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in process.stdout],
                     daemon=True).start()
    seen: list[str] = []
    deadline = time.monotonic() + within
    while not seen or "Ctrl+C" not in seen[-1]:
        try:
            seen.append(lines.get(timeout=max(0.1, deadline - time.monotonic())).rstrip("\n"))
        except queue.Empty:
            raise AssertionError("no addresses announced:\n" + "\n".join(seen)) from None
    return seen


@pytest.mark.parametrize("asked", ["free", "0"])
def test_the_server_prints_the_addresses_it_really_serves_on(transactional_db, asked):
    port = str(free_port()) if asked == "free" else "0"  # 0: the system picks one
    process = subprocess.Popen(
        [sys.executable, "-m", "arbor.serve", "-b", "127.0.0.1", "-p", port,
         "arbor.asgi:application"],
        cwd=ROOT, env=server_env(), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        text=True)
    try:
        lines = _announced(process)
        urls = dict(re.findall(r"^\s+(Chat|Admin|API docs):\s+(\S+)$", "\n".join(lines), re.M))
        # What the banner names is what serves: each page answers there.
        answers = {name: httpx.get(url).status_code for name, url in urls.items()}
    finally:
        process.terminate()
        process.wait(timeout=10)

    base = re.fullmatch(r"(http://127\.0\.0\.1:(\d+))/", urls["Chat"])
    assert base, lines
    assert base.group(2) == port if asked == "free" else int(base.group(2)) > 0
    assert urls["Admin"] == base.group(1) + "/admin/"
    assert urls["API docs"] == base.group(1) + "/api/v1/docs"
    assert answers == {"Chat": 302, "Admin": 302, "API docs": 200}  # sign-in, sign-in, docs
    assert any("make demo-password" in line for line in lines)


def test_make_run_serves_on_the_host_and_port_it_is_given():
    dry = subprocess.run(["make", "-n", "run", "HOST=127.0.0.2", "PORT=9123"], cwd=ROOT,
                         capture_output=True, text=True, timeout=60)

    assert "-m arbor.serve -b 127.0.0.2 -p 9123 arbor.asgi:application" in dry.stdout


def test_a_lost_demo_password_has_a_way_back(transactional_db):
    first = manage("seed_demo")
    old = re.search(r"with password '([^']+)'", first.stdout).group(1)
    again = manage("seed_demo")
    assert "password is unchanged" in again.stdout and "make demo-password" in again.stdout
    assert "with password" not in again.stdout
    AccessAttempt.objects.create(username="demo", ip_address="127.0.0.1", user_agent="x",
                                 failures_since_start=50, attempt_time=timezone.now())

    reset = manage("seed_demo", "--new-password")

    assert reset.returncode == 0, reset.stderr
    new = re.search(r"with password '([^']+)'", reset.stdout).group(1)
    demo = get_user_model().objects.get(username="demo")
    assert new != old and demo.check_password(new) and not demo.check_password(old)
    assert not AccessAttempt.objects.filter(username="demo").exists()  # lockout lifted
    assert "seed_demo --new-password" in subprocess.run(
        ["make", "-n", "demo-password"], cwd=ROOT, capture_output=True, text=True,
        timeout=60).stdout


def test_the_readme_shows_the_addresses_as_make_run_prints_them():
    from arbor.serve import banner

    printed = banner([("127.0.0.1", 8000)]).splitlines()[:4]
    assert "```text\n" + "\n".join(printed) + "\n```" in (ROOT / "README.md").read_text()
