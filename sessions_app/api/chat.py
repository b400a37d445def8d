"""One assistant turn, run server-side: JSON, or a text/event-stream of its events."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterator
from typing import Any

from asgiref.sync import sync_to_async
from django.http import HttpRequest, StreamingHttpResponse
from ninja import Router
from ninja.responses import Status

from memory_core import ArborError

from .. import db_pool
from ..access import session_for
from .render import dumps
from .schemas import ChatIn, MessageOut, StopOut, errors

router = Router(tags=["chat"])
log = logging.getLogger("sessions_app.api")

# Merged into ninja's own 200 (keyed by the int 200: a "200" string would add a second
# "200" key to the document, which Swagger UI refuses).
STREAM_DOC = {
    "responses": {200: {
        "description": "With stream=false the stored assistant message; with stream=true "
        "server-sent events: `text_delta` {text, message_id}, `tool_call` {id, name, "
        "arguments}, `tool_result` {id, name, result, is_error}, then `done` {message} (the "
        "stored final message), or `error` {detail, code}.",
        "content": {
            "application/json": {"schema": {"$ref": "#/components/schemas/MessageOut"}},
            "text/event-stream": {"schema": {
                "type": "object",
                "description": "One server-sent event; `data` is a JSON object.",
                "required": ["event", "data"],
                "properties": {
                    "event": {"type": "string", "enum": [
                        "text_delta", "tool_call", "tool_result", "done", "error"]},
                    "data": {"type": "string", "contentMediaType": "application/json"},
                },
            }},
        },
    }},
}


def _frame(event: dict[str, Any]) -> bytes:
    data = {k: v for k, v in event.items() if k != "type"}
    return b"event: " + str(event.get("type", "message")).encode() + b"\ndata: " + dumps(
        data) + b"\n\n"


def _next(events: Iterator[dict[str, Any]]) -> dict[str, Any] | None:
    return next(events, None)


def _step(events: Iterator[dict[str, Any]]) -> dict[str, Any] | None:
    """The next event, then the connection back to the pool: between events the turn
    waits on its model, which may take a minute, while others wait for a connection."""
    try:
        return next(events, None)
    finally:
        db_pool.give_back()


async def _sse(first: dict[str, Any] | None, events: Iterator[dict[str, Any]]
               ) -> AsyncIterator[bytes]:
    """An async iterator, so daphne sends each event as it comes: Django's ASGI handler
    would read a sync iterator to its end before sending anything."""
    step = sync_to_async(_step, thread_sensitive=True)
    event = first
    try:
        while event is not None:
            yield _frame(event)
            event = await step(events)
    except ArborError as exc:
        yield _frame({"type": "error", "detail": exc.detail, "code": exc.code})
    except Exception:
        log.exception("chat stream failed")
        yield _frame({"type": "error", "detail": "internal server error", "code": "server_error"})
    finally:
        close = getattr(events, "close", None)
        if close is not None:
            await sync_to_async(close, thread_sensitive=True)()


@router.post("/sessions/{aid:session_id}/chat",
             response={200: MessageOut, **errors(404, 413, 422, 502)}, openapi_extra=STREAM_DOC)
def chat(request: HttpRequest, session_id: str, body: ChatIn) -> Any:
    """Run one assistant turn: the user message is stored (under parent_id, else the latest
    leaf; root: as a new root), then the frozen prompt, history and tools go to the model,
    tool calls run until it answers, and every step is stored. With `regenerate` instead
    of content: a new answer beside that assistant message (404 unknown, 422 not an
    assistant message)."""
    session = session_for(request.auth, session_id)
    if body.regenerate is not None:
        turn = session.regenerate(body.regenerate, stream=body.stream)
    else:
        turn = session.chat(body.content or "", parent_id=body.parent_id, stream=body.stream,
                            root=body.root)
    if not body.stream:
        return turn
    events = iter(turn)
    # The first step stores the user message: bad input fails here, as a JSON error.
    first = _next(events)
    response = StreamingHttpResponse(_sse(first, events), content_type="text/event-stream")
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"
    return response


@router.post("/sessions/{aid:session_id}/chat/stop",
             response={202: StopOut, 200: StopOut, **errors(404)})
def stop(request: HttpRequest, session_id: str) -> Any:
    """Ask the session's running turn (in any worker) to stop: 202 {stopping: true}. It
    keeps its partial answer (metadata.interrupted) and ends with `done`. 200 {stopping:
    false} when no turn is running."""
    if session_for(request.auth, session_id).request_stop():
        return Status(202, {"stopping": True})
    return {"stopping": False}
