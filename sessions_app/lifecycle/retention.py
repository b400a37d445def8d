"""Retention policies (issue 31): an agent keeps sessions for `max_age_days` since their
last update and at most its newest `max_sessions`; null keeps them forever. A pinned
session is never removed by a policy and does not count towards `max_sessions`.

A run deletes each due session in its own transaction, through the engine (so erasure
reaches every copy: erasure.py), as the actor `policy`: a run that fails half-way leaves
every session whole or gone. A session in a running turn is left to the next run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from memory_core import InvalidInput
from memory_core.limits import MAX_RETENTION_DAYS, MAX_RETENTION_SESSIONS

from .. import models
from ..access import manager_for
from ..storage import actor, erasure

MAX_AGE_DAYS, MAX_SESSIONS = MAX_RETENTION_DAYS, MAX_RETENTION_SESSIONS
BUSY = ("thinking", "compacting")  # a turn or a compaction is writing to it now


@dataclass
class Outcome:
    """What a run removed (or, dry, would remove) from one agent."""

    agent_id: str
    sessions: list[str] = field(default_factory=list)
    messages: int = 0


def check(*, max_age_days: int | None, max_sessions: int | None) -> None:
    """Raises InvalidInput (422) for a negative or absurd value."""
    if max_age_days is not None and not 1 <= max_age_days <= MAX_AGE_DAYS:
        raise InvalidInput(f"retention.max_age_days must be between 1 and {MAX_AGE_DAYS} "
                           "(null keeps sessions forever)")
    if max_sessions is not None and not 1 <= max_sessions <= MAX_SESSIONS:
        raise InvalidInput(f"retention.max_sessions must be between 1 and {MAX_SESSIONS} "
                           "(null: no limit)")


def has_policy(agent: models.Agent) -> bool:
    return agent.retention_max_age_days is not None or agent.retention_max_sessions is not None


def due(agent: models.Agent, *, at: datetime | None = None) -> QuerySet[models.Session]:
    """The agent's sessions its policy removes now: not pinned, and last updated before
    the age limit or beyond the newest max_sessions (unpinned ones)."""
    rows = models.Session.objects.filter(agent_id=agent.id, pinned=False)
    if not has_policy(agent):
        return rows.none()
    doomed: set[str] = set()
    if agent.retention_max_age_days is not None:
        cutoff = (at or timezone.now()) - timedelta(days=agent.retention_max_age_days)
        doomed.update(rows.filter(updated_at__lt=cutoff).values_list("id", flat=True))
    if agent.retention_max_sessions is not None:
        newest = rows.order_by("-updated_at", "-created_at", "-id")
        doomed.update(newest.values_list("id", flat=True)[agent.retention_max_sessions:])
    return rows.filter(id__in=doomed).order_by("updated_at", "id")


def apply(agent: models.Agent, *, dry_run: bool = False, at: datetime | None = None) -> Outcome:
    """Remove the agent's due sessions, each in its own transaction; with dry_run only
    say which would go."""
    outcome = Outcome(agent.id)
    doomed = list(due(agent, at=at).values_list("id", "message_count", "status"))
    if dry_run:
        outcome.sessions = [sid for sid, _, _ in doomed]
        outcome.messages = sum(n for _, n, _ in doomed)
        return outcome
    manager = manager_for(agent)
    with actor.acting(actor.Actor("policy", agent.id, "policy")):
        for session_id, count, status in doomed:
            if status in BUSY:
                continue
            if manager.delete(session_id):
                outcome.sessions.append(session_id)
                outcome.messages += count
        if outcome.sessions:
            with transaction.atomic():
                erasure.policy_run(agent=agent, sessions=len(outcome.sessions),
                                   messages=outcome.messages)
    return outcome


def apply_all(*, agent_id: str | None = None, dry_run: bool = False,
              at: datetime | None = None) -> list[Outcome]:
    """Every agent's policy (or one agent's), agents in id order."""
    agents = models.Agent.objects.order_by("id")
    if agent_id is not None:
        agents = agents.filter(id=agent_id)
    else:
        agents = agents.exclude(retention_max_age_days=None, retention_max_sessions=None)
    return [apply(a, dry_run=dry_run, at=at) for a in agents]


def set_pinned(session_id: str, pinned: bool) -> None:
    """Pin or unpin a session (its last update stays what it was: pinning is not a
    write to the conversation)."""
    models.Session.objects.filter(id=session_id).update(pinned=pinned)
