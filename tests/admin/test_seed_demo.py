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


def test_seed_demo_prints_a_working_api_key_once(db, client):
    first = _seed()
    key = re.search(r"API key for the demo agent \(shown only this once\): (\S+)", first).group(1)
    response = client.get("/api/v1/agents", headers={"Authorization": f"Bearer {key}"})
    assert response.status_code == 200
    assert [a["name"] for a in response.json()["items"]] == ["Demo agent"]
    second = _seed()
    assert key not in second and "API key for the demo agent" not in second
    assert models.ApiKey.objects.count() == 1


def test_demo_agent_has_one_block_of_every_kind(db):
    _seed()
    agent = models.Agent.objects.get(name="Demo agent")
    manager = SessionManager.for_agent(agent)
    session = manager.get_session(manager.list()[0].id)
    blocks = {b.label: b for b in session.get_context_blocks()}
    assert set(blocks) == {"soul", "memory", "todos", "knowledge", "skills"}
    assert not blocks["soul"].writable and blocks["memory"].max_tokens
    assert blocks["knowledge"].is_searchable and blocks["knowledge"].content.endswith("entries indexed.")
    assert blocks["skills"].is_skill and "- trip-planning:" in blocks["skills"].content
