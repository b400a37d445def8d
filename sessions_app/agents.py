"""Agent rows: what removing one means, for every door (API and admin)."""

from __future__ import annotations

from django.db import transaction

from . import models
from .access import manager_for


def delete_agent(agent: models.Agent) -> int:
    """Delete the agent with all its sessions, messages, blocks and search rows.

    Sessions go through the engine, so their overlays and search rows go too; all or
    nothing. Returns how many sessions were deleted.
    """
    with transaction.atomic():
        deleted = manager_for(agent).delete_agent_sessions()
        agent.delete()
    return deleted
