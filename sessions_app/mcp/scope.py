"""Who an MCP call acts for and on what: the same door (access.py) as the JSON API.

A scope is a principal (an API key's, or the stdio command's agent), the agent that
agent-wide tools use by default, and optionally the session in scope, whose memory tools
are served. A session or agent of another tenant answers as missing.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from memory_core import InvalidInput, NotFound, Session, SessionManager

from .. import models
from ..access import agent_for, agents_of, manager_for, session_for, session_row_for
from ..auth import Principal

MAX_NAMED_AGENTS = 20  # how many agent ids an "ambiguous agent" error lists


@dataclass(frozen=True, slots=True)
class McpScope:
    principal: Principal
    agent_id: str | None = None
    session_id: str | None = None

    @classmethod
    def build(cls, principal: Principal, *, agent_id: str | None = None,
              session_id: str | None = None) -> McpScope:
        """A checked scope: the session and agent must be the principal's. Raises
        NotFound; the agent defaults to the session's."""
        principal = replace(principal, door="mcp")  # block versions say MCP wrote them
        if session_id is not None:
            row = session_row_for(principal, session_id)
            if agent_id is not None and agent_id != row.agent_id:
                raise NotFound(f"session {session_id} not found")
            agent_id = row.agent_id
        elif agent_id is not None:
            agent_id = agent_for(principal, agent_id).id
        elif principal.agent_id is not None:
            agent_id = principal.agent_id
        return cls(principal, agent_id, session_id)

    def session(self, session_id: str | None = None) -> Session:
        """The named session (default: the one in scope), if the principal may use it."""
        wanted = session_id if session_id is not None else self.session_id
        if wanted is None:
            raise InvalidInput("give session_id: no session is in scope on this connection")
        return session_for(self.principal, wanted)

    def manager(self, agent_id: str | None = None) -> SessionManager:
        """The manager of the named agent, else the scope's, else the principal's only one."""
        return manager_for(self.agent(agent_id))

    def agent(self, agent_id: str | None = None) -> models.Agent:
        wanted = agent_id if agent_id is not None else self.agent_id
        if wanted is not None:
            return agent_for(self.principal, wanted)
        ids = list(agents_of(self.principal).order_by("id")
                   .values_list("id", flat=True)[:MAX_NAMED_AGENTS + 1])
        if not ids:
            raise NotFound("this key reaches no agent")
        if len(ids) > 1:
            shown = ", ".join(ids[:MAX_NAMED_AGENTS]) + (", ..." if len(ids) > MAX_NAMED_AGENTS
                                                          else "")
            raise InvalidInput(f"this key reaches several agents: give agent_id (one of {shown})")
        return agent_for(self.principal, ids[0])

    @property
    def fixed_agent(self) -> bool:
        """Whether agent-wide tools need no agent_id (the scope names one)."""
        return self.agent_id is not None
