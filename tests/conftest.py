"""Shared fixtures: a user with an agent, its manager, and a second tenant."""

from __future__ import annotations

import os

import pytest
from django.conf import settings as django_settings
from django.db import connection

from memory_core import SessionManager

# Background upkeep (retention runs, purges) would otherwise start wherever arbor.asgi is
# imported, in this process and in every server a test starts, and act on the test
# database between tests; the tests that exercise it start it themselves.
os.environ.setdefault("ARBOR_LIFECYCLE_WORKER", "0")
# Search by meaning likewise (on by default): servers a module-scoped fixture starts, before
# any test's own settings, would each load the model and run an embedding worker. Tests
# that want it turn it on (tests/semantic).
os.environ.setdefault("ARBOR_EMBEDDINGS", "off")
os.environ.setdefault("ARBOR_EMBEDDINGS_WORKER", "0")
if django_settings.configured:  # read before this file: the test process's own worker stays off too
    django_settings.ARBOR_EMBEDDINGS = os.environ["ARBOR_EMBEDDINGS"]
    django_settings.ARBOR_EMBEDDINGS_WORKER = os.environ["ARBOR_EMBEDDINGS_WORKER"] == "1"


def user_msg(text: str, **extra: object) -> dict[str, object]:
    return {"role": "user", "parts": [{"type": "text", "text": text}], **extra}


def assistant_msg(text: str, **extra: object) -> dict[str, object]:
    return {"role": "assistant", "parts": [{"type": "text", "text": text}], **extra}


def make_agent(username: str, name: str = "agent"):
    from django.contrib.auth.models import User

    from sessions_app.models import Agent

    user, _ = User.objects.get_or_create(username=username)
    return Agent.objects.create(owner=user, name=name)


@pytest.fixture
def agent(db):
    return make_agent("alice", "assistant")


@pytest.fixture
def manager(agent) -> SessionManager:
    return SessionManager.for_agent(agent)


@pytest.fixture
def other_manager(db) -> SessionManager:
    """A second tenant: another user's agent."""
    return SessionManager.for_agent(make_agent("mallory", "other"))


@pytest.fixture
def session(manager):
    return manager.get_session(manager.create("test").id)


@pytest.fixture
def empty_path_cache():
    """The process's path cache (storage/path_cache.py) empty before and after a test."""
    from sessions_app.storage import path_cache

    path_cache.paths.clear()
    yield
    path_cache.paths.clear()


@pytest.fixture
def vendor() -> str:
    return connection.vendor


def pytest_collection_modifyitems(config, items):
    vendor = connection.vendor
    for item in items:
        if "postgres_only" in item.keywords and vendor != "postgresql":
            item.add_marker(pytest.mark.skip(reason="PostgreSQL only"))
        if "sqlite_only" in item.keywords and vendor != "sqlite":
            item.add_marker(pytest.mark.skip(reason="SQLite only"))


def session_key(session_id: str) -> int:
    """The number a session's messages name it by (arbor_message.session_key): taken
    before a delete, it finds any message the delete left behind."""
    from sessions_app.models import Session

    return Session.objects.get(id=session_id).key


@pytest.fixture(autouse=True)
def _search_paths_asked_again():
    """SQLite keeps which agents' searches bm25() ranks (vendors/sqlite_search.py): each
    test starts without that, so its query counts do not depend on the tests before it."""
    from sessions_app.storage.vendors.sqlite_search import forget_bm25_agents

    forget_bm25_agents()


@pytest.fixture(autouse=True)
def _embeddings_off(settings, monkeypatch):
    """Search by meaning off unless a test turns it on (tests/semantic): no test pays for
    the model or for a background worker it does not look at; servers it starts inherit."""
    settings.ARBOR_EMBEDDINGS = "off"
    monkeypatch.setenv("ARBOR_EMBEDDINGS", "off")
    monkeypatch.setenv("ARBOR_EMBEDDINGS_WORKER", "0")


@pytest.fixture
def fake_embeddings(settings):
    """Search by meaning on, with the cheap deterministic embedder of tests/semantic/fake.py."""
    from sessions_app.storage import vector_index as index
    from tests.semantic import fake

    settings.ARBOR_EMBEDDINGS = "tests.semantic.fake.shared"
    from memory_core.hybrid import forget_queries

    fake.SHARED.fail = False
    index.forget()
    forget_queries()
    yield fake.SHARED
    fake.SHARED.fail = False
    index.forget()
    forget_queries()
