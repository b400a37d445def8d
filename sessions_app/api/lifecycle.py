"""An agent's erasure log and its whole export (sessions_app/lifecycle)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.http import HttpRequest, StreamingHttpResponse
from ninja import Query, Router, Schema

from .. import models
from ..access import agent_for
from .agent_export import export_lines
from .pagination import DEFAULT_LIMIT, MAX_LIMIT, page
from .schemas import errors

router = Router(tags=["lifecycle"])
JSON_LINES = "application/jsonl"


class ErasureOut(Schema):
    """One deletion or policy run: never what was deleted, only how much."""

    id: int
    created_at: datetime
    scope: str
    session_id: str | None
    sessions: int
    messages: int
    by: str
    by_id: str | None
    door: str
    purged_at: datetime | None


class ErasureList(Schema):
    items: list[ErasureOut]
    next_cursor: str | None


@router.get("/agents/{aid:agent_id}/erasures", response={200: ErasureList, **errors(404, 422)})
def list_erasures(
    request: HttpRequest, agent_id: str, limit: int = Query(DEFAULT_LIMIT, ge=1, le=MAX_LIMIT),
    cursor: str | None = Query(None, max_length=500),
) -> Any:
    """The agent's deletions, newest first: when, who (user, key or policy, and the door:
    api, ui, mcp, admin, policy, command), the scope (messages, clear, session, policy),
    how many sessions and messages, and when `purge` last cleared the files after it."""
    agent = agent_for(request.auth, agent_id)
    items, next_cursor = page(models.Erasure.objects.filter(agent_id=agent.id),
                              field="created_at", cursor=cursor, limit=limit, newest_first=True)
    return {"items": items, "next_cursor": next_cursor}


EXPORT_DOC = {"responses": {200: {"description": "JSON Lines: the agent, then one session "
                                  "document per line.",
                                  "content": {JSON_LINES: {"schema": {"type": "string"}}}}}}


@router.get("/agents/{aid:agent_id}/export", response=errors(404),
            openapi_extra=EXPORT_DOC)
def export_agent(request: HttpRequest, agent_id: str) -> Any:
    """Every session of the agent, with its block templates, as JSON Lines (streamed):
    the first line is the agent, each further line a session document as
    GET /sessions/{id}/export gives it. POST /agents/{id}/import takes it back whole."""
    agent = agent_for(request.auth, agent_id)
    response = StreamingHttpResponse(export_lines(agent), content_type=JSON_LINES)
    response["Content-Disposition"] = f'attachment; filename="arbor-agent-{agent.id}.jsonl"'
    return response
