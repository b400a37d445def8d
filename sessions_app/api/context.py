"""Context blocks of a session, their entries, and the frozen system prompt."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from ninja import Query, Router
from ninja.responses import Status

from memory_core import Session

from ..access import session_for
from .context_schemas import (
    ContentIn,
    ContextBlockOut,
    ContextList,
    EntryIn,
    EntryOut,
    PromptOut,
    PromptStatusOut,
)
from .schemas import BlockTemplate, Id, errors

router = Router(tags=["context"])
S = "/sessions/{aid:session_id}"
B = S + "/context/{aid:label}"


def _prompt(session: Session) -> dict[str, Any]:
    text, frozen_at = session.context.frozen_prompt()
    return {"prompt": text, "frozen_at": frozen_at}


AS_OF = Query(None, description="A message id of this session: every block as it was "
              "when that message was written.")


@router.get(S + "/context", response={200: ContextList, **errors(404, 422)})
def list_blocks(request: HttpRequest, session_id: str, as_of: Id | None = AS_OF) -> Any:
    """Every block: {label, description, content, tokens, max_tokens, writable, ...}."""
    session = session_for(request.auth, session_id)
    if as_of is not None:
        return {"items": session.context_as_of(as_of)}
    return {"items": session.get_context_blocks()}


@router.post(S + "/context", response={201: ContextBlockOut, **errors(404, 409, 413, 422)})
def add_block(request: HttpRequest, session_id: str, body: BlockTemplate) -> Any:
    """Add a block to this session; the frozen prompt shows it after a refresh."""
    options = body.model_dump(exclude_none=True, exclude={"label"})
    return Status(201, session_for(request.auth, session_id).add_context(body.label, **options))


@router.get(B, response={200: ContextBlockOut, **errors(404)})
def get_block(request: HttpRequest, session_id: str, label: str) -> Any:
    return session_for(request.auth, session_id).get_context_block(label)


@router.put(B, response={200: ContextBlockOut, **errors(404, 413, 422)})
def replace_block(request: HttpRequest, session_id: str, label: str, body: ContentIn) -> Any:
    """Replace a writable block's text; over max_tokens is a 422 naming the limit."""
    return session_for(request.auth, session_id).replace_context_block(label, body.content)


@router.delete(B, response={204: None, **errors(404)})
def remove_block(request: HttpRequest, session_id: str, label: str) -> Any:
    """Remove a block from this session; the frozen prompt changes only on refresh."""
    session_for(request.auth, session_id).remove_context(label)
    return Status(204, None)


@router.post(B + "/append", response={200: ContextBlockOut, **errors(404, 413, 422)})
def append_block(request: HttpRequest, session_id: str, label: str, body: ContentIn) -> Any:
    """Append a line to a writable block."""
    return session_for(request.auth, session_id).append_context_block(label, body.content)


@router.get(B + "/entries/{aid:key}", response={200: EntryOut, **errors(404, 422)})
def get_entry(request: HttpRequest, session_id: str, label: str, key: str) -> Any:
    """One entry of a skill or search block."""
    return session_for(request.auth, session_id).get_context_entry(label, key)


@router.put(B + "/entries/{aid:key}", response={200: EntryOut, **errors(404, 413, 422)})
def put_entry(request: HttpRequest, session_id: str, label: str, key: str, body: EntryIn) -> Any:
    """Write one entry of a skill or search block (skills take a description)."""
    session = session_for(request.auth, session_id)
    session.set_context_entry(label, key, body.content, body.description)
    return session.get_context_entry(label, key)


@router.get(S + "/system-prompt", response={200: PromptOut, **errors(404)})
def system_prompt(request: HttpRequest, session_id: str) -> Any:
    """The frozen prompt (frozen now if it was not): identical until a refresh."""
    session = session_for(request.auth, session_id)
    session.freeze_system_prompt()
    return _prompt(session)


@router.post(S + "/system-prompt/refresh", response={200: PromptOut, **errors(404)})
def refresh_system_prompt(request: HttpRequest, session_id: str) -> Any:
    """Re-render the prompt from the blocks as they are now, and freeze that."""
    session = session_for(request.auth, session_id)
    session.refresh_system_prompt()
    return _prompt(session)


@router.get(S + "/system-prompt/status", response={200: PromptStatusOut, **errors(404)})
def system_prompt_status(request: HttpRequest, session_id: str) -> Any:
    """Whether a refresh would change the frozen prompt, and which blocks changed."""
    return session_for(request.auth, session_id).system_prompt_status()
