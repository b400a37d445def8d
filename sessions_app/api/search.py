"""Full-text search: one session, or every session of an agent. Query text is words only,
never syntax: quotes, operators, punctuation and length never cause an error (a long query
searches with its first MAX_QUERY_TERMS terms)."""

from __future__ import annotations

from typing import Any, Literal

from django.http import HttpRequest
from ninja import Query, Router

from memory_core.hybrid import SearchResults
from memory_core.limits import MAX_ID_LENGTH, MAX_SEARCH_LIMIT
from memory_core.search import MAX_HIT_CHARS, MAX_QUERY_TERMS

from ..access import agent_for, manager_for, session_for
from .schemas import errors
from .search_schemas import SearchOut

router = Router(tags=["search"])
Q = Query("", description=f"Words or a question, any length; its first {MAX_QUERY_TERMS} "
          "distinct words (stop words aside) are searched.")
FULL = Query(False, description=f"Return each hit's whole content, not its first "
             f"{MAX_HIT_CHARS} characters.")


@router.get("/sessions/{aid:session_id}/search", response={200: SearchOut, **errors(404, 422)})
def search_session(
    request: HttpRequest, session_id: str, q: str = Q, limit: int = Query(10, ge=1, le=MAX_SEARCH_LIMIT),
    full: bool = FULL,
    scope: Literal["path", "session", "agent"] = Query(
        "session", description="path: the branch to `leaf` (default: the latest leaf); "
        "session: every branch of this session; agent: every session of its agent."),
    leaf: str | None = Query(None, max_length=MAX_ID_LENGTH,
                             description="With scope=path: the branch's last message."),
) -> Any:
    """Messages of this session (or its branch, or its agent) matching q by its words or
    its meaning, best first."""
    return _out(session_for(request.auth, session_id).search(q, limit, full=full, scope=scope,
                                                             leaf_id=leaf))


@router.get("/agents/{aid:agent_id}/search", response={200: SearchOut, **errors(404, 422)})
def search_agent(
    request: HttpRequest, agent_id: str, q: str = Q, limit: int = Query(20, ge=1, le=MAX_SEARCH_LIMIT),
    full: bool = FULL,
) -> Any:
    """Messages of all the agent's sessions matching q by its words or its meaning, best
    first."""
    return _out(manager_for(agent_for(request.auth, agent_id)).search(q, limit, full=full))


def _out(hits: SearchResults) -> dict[str, Any]:
    return {"items": hits, "semantic": hits.semantic, "pending": hits.pending}
