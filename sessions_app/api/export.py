"""A whole session as one JSON document, out and back in."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from ninja import Router, Schema
from ninja.errors import ValidationError
from ninja.responses import Status
from pydantic import ValidationError as PydanticError

from memory_core.transfer import export_session, import_session

from ..access import agent_for, manager_and_session, manager_for
from . import agent_export, chat_imports
from .documents import SessionDocument
from .errors import strict_loads
from .render import json_response
from .schemas import SessionOut, errors

router = Router(tags=["export"])


@router.get("/sessions/{aid:session_id}/export", response={200: SessionDocument, **errors(404)})
def export(request: HttpRequest, session_id: str) -> Any:
    """The tree, compactions and session-scoped blocks (with contents) as one document."""
    manager, sid = manager_and_session(request.auth, session_id)
    return json_response(export_session(manager, sid))


class AgentImportOut(Schema):
    sessions: list[SessionOut]


# The body is read by hand so a foreign agent is a 404 before the document is looked at
# (as for every other foreign resource); the OpenAPI document still names its schema.

@router.post("/agents/{aid:agent_id}/import", openapi_extra=chat_imports.BODY_DOC,
             response={201: SessionOut | AgentImportOut | chat_imports.ImportOut,
                       **errors(404, 409, 413, 422)})
def import_(request: HttpRequest, agent_id: str,
            format: chat_imports.ImportFormat = "auto") -> Any:  # noqa: A002 (the query name)
    """A new session from an exported Arbor document (answered as the session): ids are
    kept unless they would collide (the session id, overlay ids), and so are timestamps.
    A whole agent's export (GET /agents/{id}/export, JSON Lines) brings back all its
    sessions and templates. Or the conversations of another tool's export, each a new
    session with its tree (answered as {format, sessions, skipped}); `format=auto` tells
    which from the body."""
    agent = agent_for(request.auth, agent_id)
    manager = manager_for(agent)
    body, ndjson = chat_imports.upload(request)
    if format in ("auto", "arbor") and agent_export.is_agent_export(body[:200]):
        return Status(201, {"sessions": agent_export.import_lines(agent, body)})
    found, value = chat_imports.sniff(body, format, ndjson)
    if found != "arbor":
        return Status(201, chat_imports.run(manager, found, value))
    document = _document(strict_loads(body))
    return Status(201, import_session(manager, document.model_dump()))


def _document(data: Any) -> SessionDocument:
    """The body as a SessionDocument; a 422 as for any other body."""
    try:
        return SessionDocument.model_validate(data)
    except PydanticError as exc:
        # Located like ninja's own body errors, so the 422 names the field the same way.
        raise ValidationError([{**e, "loc": ("body", "body", *e["loc"])}
                               for e in exc.errors(include_url=False)]) from None
