"""Full-text search: one session, or every session of an agent. Query text is words only,
never syntax: quotes, operators and punctuation never cause an error."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from ninja import Query, Router

from ..access import agent_for, manager_for, session_for
from .schemas import SearchOut, errors

router = Router(tags=["search"])
MAX_QUERY = 2000


@router.get("/sessions/{aid:session_id}/search", response={200: SearchOut, **errors(404, 422)})
def search_session(
    request: HttpRequest, session_id: str, q: str = Query("", max_length=MAX_QUERY),
    limit: int = Query(10, ge=1, le=200),
) -> Any:
    """Messages of this session holding any word of q, best first."""
    return {"items": session_for(request.auth, session_id).search(q, limit)}


@router.get("/agents/{aid:agent_id}/search", response={200: SearchOut, **errors(404, 422)})
def search_agent(
    request: HttpRequest, agent_id: str, q: str = Query("", max_length=MAX_QUERY),
    limit: int = Query(20, ge=1, le=200),
) -> Any:
    """Messages of all the agent's sessions holding any word of q, best first."""
    return {"items": manager_for(agent_for(request.auth, agent_id)).search(q, limit)}
