"""Sessions: registry rows, forks, usage, compaction overlays and compaction runs."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from ninja import Query, Router
from ninja.responses import Status

from memory_core import NotFound

from .. import models
from ..access import agent_for, manager_and_session, manager_for, session_for
from .pagination import DEFAULT_LIMIT, MAX_LIMIT, page
from .schemas import (
    CompactAndSplitIn,
    CompactionIn,
    CompactionList,
    CompactionOut,
    CompactOut,
    ForkIn,
    SessionIn,
    SessionList,
    SessionOut,
    SessionPatch,
    UsageIn,
    errors,
)

router = Router(tags=["sessions"])
S = "/sessions/{aid:session_id}"


@router.post("/agents/{aid:agent_id}/sessions",
             response={201: SessionOut, **errors(404, 413, 422)})
def create_session(request: HttpRequest, agent_id: str, body: SessionIn) -> Any:
    """A new session; it starts with the agent's block templates."""
    agent = agent_for(request.auth, agent_id)
    info = manager_for(agent).create(
        body.name, parent_session_id=body.parent_session_id, model=body.model, source=body.source
    )
    return Status(201, info)


@router.get("/agents/{aid:agent_id}/sessions", response={200: SessionList, **errors(404, 422)})
def list_sessions(
    request: HttpRequest, agent_id: str, limit: int = Query(DEFAULT_LIMIT, ge=1, le=MAX_LIMIT),
    cursor: str | None = Query(None, max_length=500),
) -> Any:
    """The agent's sessions, most recently updated first. A session written to while you
    page moves to the front: it is never served twice, and a pass that must see it
    starts again from the first page."""
    agent = agent_for(request.auth, agent_id)
    rows = models.Session.objects.filter(agent_id=agent.id)
    items, next_cursor = page(rows, field="updated_at", cursor=cursor, limit=limit,
                              newest_first=True)
    return {"items": items, "next_cursor": next_cursor}


@router.get(S, response={200: SessionOut, **errors(404)})
def get_session(request: HttpRequest, session_id: str) -> Any:
    manager, sid = manager_and_session(request.auth, session_id)
    info = manager.get(sid)
    if info is None:  # deleted between the two reads
        raise NotFound(f"session {session_id} not found")
    return info


@router.patch(S, response={200: SessionOut, **errors(404, 413, 422)})
def update_session(request: HttpRequest, session_id: str, body: SessionPatch) -> Any:
    """Rename; set end_reason to end the session (null reopens it)."""
    manager, sid = manager_and_session(request.auth, session_id)
    fields = body.model_fields_set
    if "name" in fields:
        manager.rename(sid, body.name or "")
    if "end_reason" in fields:
        manager.end(sid, body.end_reason)  # type: ignore[arg-type]
    return get_session(request, session_id)


@router.delete(S, response={204: None, **errors(404)})
def delete_session(request: HttpRequest, session_id: str) -> Any:
    """Delete the session with its messages, overlays, blocks and search rows."""
    manager, sid = manager_and_session(request.auth, session_id)
    manager.delete(sid)
    return Status(204, None)


@router.post(S + "/fork", response={201: SessionOut, **errors(404, 413, 422)})
def fork_session(request: HttpRequest, session_id: str, body: ForkIn) -> Any:
    """Copy the path up to message_id into a new session (parent_session_id set)."""
    manager, sid = manager_and_session(request.auth, session_id)
    return Status(201, manager.fork(sid, body.message_id, body.name))


@router.post(S + "/usage", response={200: SessionOut, **errors(404, 413, 422)})
def add_usage(request: HttpRequest, session_id: str, body: UsageIn) -> Any:
    """Add to the session's token and cost totals."""
    manager, sid = manager_and_session(request.auth, session_id)
    return manager.add_usage(sid, body.input_tokens, body.output_tokens, body.cost)


@router.post(S + "/compact", response={200: CompactOut, **errors(400, 404, 409, 502)})
def compact(request: HttpRequest, session_id: str) -> Any:
    """Run the configured compaction now; null when it would not shrink the history."""
    return {"compaction": session_for(request.auth, session_id).compact()}


@router.post(S + "/compact-and-split",
             response={201: SessionOut, **errors(400, 404, 413, 422, 502)})
def compact_and_split(request: HttpRequest, session_id: str, body: CompactAndSplitIn) -> Any:
    """End the session (end_reason "compaction") and continue in a new one that starts
    with the summary."""
    manager, sid = manager_and_session(request.auth, session_id)
    return Status(201, manager.compact_and_split(sid, summary=body.summary, name=body.name))


@router.get(S + "/compactions", response={200: CompactionList, **errors(404)})
def list_compactions(request: HttpRequest, session_id: str) -> Any:
    return {"items": session_for(request.auth, session_id).get_compactions()}


@router.post(S + "/compactions", response={201: CompactionOut, **errors(404, 413, 422)})
def add_compaction(request: HttpRequest, session_id: str, body: CompactionIn) -> Any:
    """Read the path range from..to (inclusive) as one summary; nothing is deleted."""
    session = session_for(request.auth, session_id)
    return Status(201, session.add_compaction(body.summary, body.from_message_id,
                                              body.to_message_id))


@router.delete(S + "/compactions/{aid:compaction_id}", response={204: None, **errors(404)})
def remove_compaction(request: HttpRequest, session_id: str, compaction_id: str) -> Any:
    """Remove an overlay; reads show the original messages again."""
    session_for(request.auth, session_id).remove_compaction(compaction_id)
    return Status(204, None)
