"""The one door to agents and sessions for callers with a key or a login.

Every lookup is scoped to the principal's user (and to the key's agent, when the key is
limited): another tenant's id answers NotFound with the same words as an id that does
not exist, so ids of others leak nothing.
"""

from __future__ import annotations

from typing import Any

from memory_core import NotFound, Session, SessionManager
from memory_core.limits import is_id
from memory_core.versions import Writer

from . import models
from .auth import Principal
from .storage import actor


def _plausible(value: Any) -> bool:
    # A NUL would reach Postgres as a parameter and fail there; no stored id has one.
    return is_id(value)


def manager_for(agent: models.Agent | str) -> SessionManager:
    """The SessionManager every API call uses for an agent: built in one place."""
    return SessionManager.for_agent(agent)


def agents_of(principal: Principal) -> Any:
    """The agents this principal may see, as a queryset."""
    rows = models.Agent.objects.filter(owner_id=principal.user_id)
    if principal.agent_id is not None:
        rows = rows.filter(id=principal.agent_id)
    return rows


def agent_for(principal: Principal, agent_id: str) -> models.Agent:
    """The principal's agent with this id. Raises NotFound."""
    actor.set_principal(principal)  # what it deletes is logged as the principal's
    row = agents_of(principal).filter(id=agent_id).first() if _plausible(agent_id) else None
    if row is None:
        raise NotFound(f"agent {agent_id} not found")
    return row


def _agent_looked_up(principal: Principal, session_id: str) -> str | None:
    """The agent of the session, when the API key's query looked it up already (None
    when it did not). Raises NotFound when it found none the principal may use."""
    known = principal.session
    if known is None or known[0] != session_id:
        return None
    if known[1] is None or not principal.may_use(known[1]):
        raise NotFound(f"session {session_id} not found")
    return known[1]


def session_row_for(principal: Principal, session_id: str) -> models.Session:
    """The registry row of the principal's session with this id. Raises NotFound."""
    actor.set_principal(principal)
    agent_id = _agent_looked_up(principal, session_id)
    if agent_id is not None:
        return models.Session(id=session_id, agent_id=agent_id)
    row = None
    if _plausible(session_id):
        row = (
            models.Session.objects.filter(id=session_id, agent__owner_id=principal.user_id)
            .only("id", "agent_id")
            .first()
        )
    if row is None or not principal.may_use(row.agent_id):
        raise NotFound(f"session {session_id} not found")
    return row


def session_for(principal: Principal, session_id: str) -> Session:
    """The engine Session for the principal's session with this id, its block writes
    recorded as the principal's (its door and key or user id). Raises NotFound."""
    actor.set_principal(principal)
    agent_id = _agent_looked_up(principal, session_id)
    if agent_id is not None:  # no row to make
        session = manager_for(agent_id).bind(session_id)
    else:
        row = session_row_for(principal, session_id)
        session = manager_for(row.agent_id).bind(row.id)  # checked just above
    session.context.writer = Writer(principal.door, principal.actor_id)  # type: ignore[arg-type]
    return session


def manager_and_session(principal: Principal, session_id: str) -> tuple[SessionManager, str]:
    """For manager-level calls on one session (fork, usage, compact_and_split)."""
    row = session_row_for(principal, session_id)
    return manager_for(row.agent_id), row.id
