"""The provider behind SessionManager.with_searchable_history: past messages of every
session of the agent, found through the manager's agent-wide search."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from ..messages import SessionInfo
from ..search import SearchHit
from .base import SearchResult


class AgentSessions(Protocol):
    """What HistorySearch asks of its SessionManager. A Protocol, not an import of
    manager.py, which builds this provider: the import graph stays a tree."""

    def list(self) -> Sequence[SessionInfo]: ...

    def search(self, query: str, limit: int = ...) -> Sequence[SearchHit]: ...


class HistorySearch:
    """The provider behind with_searchable_history: past messages of every session."""

    def __init__(self, manager: AgentSessions) -> None:
        self.manager = manager

    def get(self) -> str:
        return f"{len(self.manager.list())} sessions available for search."

    def search(self, query: str) -> list[SearchResult]:
        return [
            SearchResult(f"{h.session_id}/{h.id}", f"{h.role}: {h.content}", h.created_at, h.score)
            for h in self.manager.search(query, 10)
        ]
