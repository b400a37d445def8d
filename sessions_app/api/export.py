"""A whole session as one JSON document, out and back in."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from ninja import Router
from ninja.responses import Status

from ..access import agent_for, manager_and_session, manager_for
from ..transfer import export_session, import_session
from .render import json_response
from .schemas import SessionDocument, SessionOut, errors

router = Router(tags=["export"])


@router.get("/sessions/{aid:session_id}/export", response={200: SessionDocument, **errors(404)})
def export(request: HttpRequest, session_id: str) -> Any:
    """The tree, compactions and session-scoped blocks (with contents) as one document."""
    manager, sid = manager_and_session(request.auth, session_id)
    return json_response(export_session(manager, sid))


@router.post("/agents/{aid:agent_id}/import",
             response={201: SessionOut, **errors(404, 413, 422)})
def import_(request: HttpRequest, agent_id: str, body: SessionDocument) -> Any:
    """A new session from an exported document. Ids are kept unless they would collide
    (the session id, overlay ids), and so are timestamps."""
    manager = manager_for(agent_for(request.auth, agent_id))
    return Status(201, import_session(manager, body.model_dump()))
