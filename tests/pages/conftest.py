"""Fixtures of the page tests: two people with an agent each, and alice signed in."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from memory_core import SessionManager
from tests.conftest import make_agent


@pytest.fixture
def alice(db) -> dict[str, Any]:
    agent = make_agent("alice", "Helper")
    return {"agent": agent, "manager": SessionManager.for_agent(agent)}


@pytest.fixture
def bob(db) -> dict[str, Any]:
    agent = make_agent("bob", "Bob's")
    return {"agent": agent, "manager": SessionManager.for_agent(agent)}


@pytest.fixture
def browser(alice) -> Client:
    """A client signed in as alice."""
    client = Client()
    client.force_login(alice["agent"].owner)
    return client
