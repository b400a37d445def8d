"""Failed sign-ins lock out (issue 25: 60 wrong passwords in 15 s were all answered 200).

ARBOR_LOGIN_FAILURES (5) wrong passwords for one username, or ARBOR_LOGIN_FAILURES_PER_ADDRESS
(20) from one address, lock it for ARBOR_LOGIN_COOLOFF (900 s) after the last failure, on
the app's sign-in page and the admin's; a 429 page and Retry-After say when to try again.
"""

from __future__ import annotations

import logging
import subprocess
import sys
from datetime import timedelta

import pytest
from axes.models import AccessAttempt
from django.conf import settings
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client
from django.utils import timezone

from tests.live_server import ROOT, server_env

PASSWORD = "correct horse battery"
LIMIT = settings.ARBOR_LOGIN_FAILURES


@pytest.fixture(autouse=True)
def _fast_hashing(settings) -> None:
    # Each sign-in hashes a password (a wrong or unknown one too); PBKDF2's million rounds
    # would make these tests take a second per attempt.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def people(db) -> dict[str, User]:
    made = {}
    for name in ("alice", "bob"):
        made[name] = User.objects.create_user(name, password=PASSWORD)
    return made


def sign_in(client: Client, username: str, password: str, *, path: str = "/login/",
            address: str = "127.0.0.1"):
    return client.post(path, {"username": username, "password": password},
                       REMOTE_ADDR=address)


def signed_in(client: Client) -> bool:
    return "_auth_user_id" in client.session


def lock(client: Client, username: str = "alice", **where: str) -> None:
    for _ in range(LIMIT - 1):
        assert sign_in(client, username, "wrong", **where).status_code == 200
    assert sign_in(client, username, "wrong", **where).status_code == 429


def test_wrong_passwords_lock_the_username_and_say_when_to_try_again(people, client):
    for _ in range(LIMIT - 1):
        response = sign_in(client, "alice", "wrong")
        assert response.status_code == 200
        assert b"Wrong username or password" in response.content

    response = sign_in(client, "alice", "wrong")

    assert response.status_code == 429
    assert 0 < int(response["Retry-After"]) <= settings.ARBOR_LOGIN_COOLOFF
    until = timezone.now() + timedelta(seconds=settings.ARBOR_LOGIN_COOLOFF)
    page = response.content.decode()
    assert "Sign-in paused" in page
    assert "Try again at <time datetime=" in page
    assert until.strftime("%H:%M") in page or (until - timedelta(minutes=1)).strftime(
        "%H:%M") in page
    assert f"in {settings.ARBOR_LOGIN_COOLOFF // 60} minutes" in page


def test_the_right_password_is_refused_while_locked(people, client):
    lock(client)

    response = sign_in(client, "alice", PASSWORD)

    assert response.status_code == 429
    assert not signed_in(client)
    # Refused attempts do not push the end back: the time shown stays true.
    assert int(response["Retry-After"]) <= settings.ARBOR_LOGIN_COOLOFF


def test_another_user_at_the_same_address_still_signs_in(people, client):
    lock(client)

    other = Client()
    response = sign_in(other, "bob", PASSWORD)

    assert response.status_code == 302 and signed_in(other)


def test_the_lock_ends_when_the_cooloff_has_passed(people, client):
    lock(client)
    AccessAttempt.objects.update(
        attempt_time=timezone.now() - timedelta(seconds=settings.ARBOR_LOGIN_COOLOFF + 1))

    response = sign_in(client, "alice", PASSWORD)

    assert response.status_code == 302 and signed_in(client)


def test_one_address_trying_many_usernames_is_locked_at_its_own_limit(people, client):
    per_address = settings.ARBOR_LOGIN_FAILURES_PER_ADDRESS
    for i in range(per_address - 1):  # each username stays under its own limit
        assert sign_in(client, f"guess{i}", "wrong", address="10.0.0.9").status_code == 200
    assert sign_in(client, "guess-last", "wrong", address="10.0.0.9").status_code == 429

    assert sign_in(client, "bob", PASSWORD, address="10.0.0.9").status_code == 429
    other = Client()
    assert sign_in(other, "bob", PASSWORD, address="10.0.0.10").status_code == 302


def test_the_admin_sign_in_is_throttled_too_and_shares_the_count(people, client):
    for _ in range(LIMIT - 1):
        assert sign_in(client, "alice", "wrong", path="/admin/login/").status_code == 200

    assert sign_in(client, "alice", "wrong").status_code == 429  # the app's page: same count
    response = sign_in(client, "alice", PASSWORD, path="/admin/login/")
    assert response.status_code == 429
    assert "Sign-in paused" in response.content.decode()


def test_an_admin_unlocks_in_the_admin(people, client):
    lock(client)
    admin = Client()
    admin.force_login(User.objects.create_superuser("root", password=PASSWORD))
    ids = [str(pk) for pk in AccessAttempt.objects.filter(username="alice")
           .values_list("pk", flat=True)]

    response = admin.post("/admin/axes/accessattempt/", {
        "action": "delete_selected", "_selected_action": ids, "post": "yes"})

    assert response.status_code == 302
    assert not AccessAttempt.objects.filter(username="alice").exists()
    assert sign_in(client, "alice", PASSWORD).status_code == 302 and signed_in(client)


def test_an_admin_unlocks_with_the_command(people, client):
    lock(client)

    call_command("axes_reset_username", "alice")

    assert sign_in(client, "alice", PASSWORD).status_code == 302 and signed_in(client)


def test_a_lockout_is_logged(people, client, caplog):
    with caplog.at_level(logging.WARNING, logger="arbor.login"):
        lock(client)

    assert any("sign-in locked for username 'alice'" in r.getMessage() for r in caplog.records)


def test_limits_come_from_the_environment():
    code = ("import django; django.setup(); from django.conf import settings as s; "
            "print(s.AXES_FAILURE_LIMIT, s.ARBOR_LOGIN_FAILURES_PER_ADDRESS, "
            "s.AXES_COOLOFF_TIME.total_seconds())")
    env = server_env({"ARBOR_LOGIN_FAILURES": "3", "ARBOR_LOGIN_FAILURES_PER_ADDRESS": "9",
                      "ARBOR_LOGIN_COOLOFF": "60"})
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=60)

    assert result.stdout.split() == ["3", "9", "60.0"], result.stderr
