"""seed_demo makes a usable demo once; re-running changes nothing."""

from __future__ import annotations

import re
from io import StringIO

from django.contrib.auth.models import User
from django.core.management import call_command

from memory_core import SessionManager
from sessions_app import models

PASSWORD = re.compile(r"password '([^']+)'")


def _seed() -> str:
    out = StringIO()
    call_command("seed_demo", stdout=out)
    return out.getvalue()


def _counts() -> tuple[int, ...]:
    return tuple(m.objects.count() for m in (User, models.Agent, models.Session, models.Message))


def test_seed_demo_is_idempotent_and_prints_the_password_once(db):
    first = _seed()
    password = PASSWORD.search(first).group(1)
    user = User.objects.get(username="demo")
    assert user.check_password(password) and user.is_staff and user.is_superuser
    counts = _counts()
    second = _seed()
    assert PASSWORD.search(second) is None and "exists" in second
    assert _counts() == counts
    assert User.objects.get(username="demo").password == user.password


def test_demo_sessions_hold_a_branch_and_a_fork(db):
    _seed()
    agent = models.Agent.objects.get(name="Demo agent", owner__username="demo")
    manager = SessionManager.for_agent(agent)
    sessions = manager.list()
    assert len(sessions) == 2
    fork = next(s for s in sessions if s.parent_session_id)
    original = manager.get_session(fork.parent_session_id)
    assert any(r.child_count > 1 for r in original.get_tree())
    assert all("forked_from" in m.metadata
               for m in manager.get_history(fork.id)[:4])


def test_existing_demo_user_keeps_its_password(db):
    user = User.objects.create_user("demo", password="s3cret-pass")
    out = _seed()
    assert PASSWORD.search(out) is None
    user.refresh_from_db()
    assert user.check_password("s3cret-pass") and user.is_superuser
