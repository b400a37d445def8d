"""A session whose tree has a three-way branch: u1 -> (a1, a2 -> u2, a3)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from sessions_app import models
from tests.conftest import assistant_msg, user_msg


@pytest.fixture
def branched(session):
    session.append_message(user_msg("Plan a trip", id="u1"))
    session.append_message(assistant_msg("Lisbon?", id="a1"), parent_id="u1")
    session.append_message(assistant_msg("Porto?", id="a2"), parent_id="u1")
    session.append_message(user_msg("Porto please", id="u2"), parent_id="a2")
    session.append_message(assistant_msg("Faro?", id="a3"), parent_id="u1")
    return session


def change_url(model: str, pk: object) -> str:
    return reverse(f"admin:sessions_app_{model}_change", args=[pk])


def message_pk(session, message_id: str) -> int:
    return models.Message.objects.get(session__id=session.id, message_id=message_id).seq
