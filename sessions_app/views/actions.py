"""What a person does to a conversation: send, edit, branch, regenerate, fork, stop.

Turns run in the background (`live/turns.py`); the request answers 202 at once and the page
follows the answer through live events. The engine claims the session in the request
(memory_core/busy.py), so a second turn while one runs is refused (409) here as at every
other door; the page disables those actions meanwhile.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_POST

from memory_core import Conflict, InvalidInput, Message, NotFound, Session, busy
from memory_core.limits import MAX_NAME

from .. import access
from ..live import turns
from .chat import message_context
from .common import go, session_or_404, session_row_or_404

BUSY = "The assistant is still answering: stop it or wait."


def _text(request: HttpRequest) -> str | None:
    content = request.POST.get("content", "")
    return content if content.strip() else None


WRITE_FIRST = "Write a message first."
BRANCH_GONE = "The branch you were on is gone; reload the page."


def _start_turn(session: Session, turn: Callable[[], Any], *,
                gone: str | None = None) -> HttpResponse | None:
    """Start the turn here (the engine checks its input once, then claims the session and
    announces `thinking` before the request answers, so the page disables what would
    race it at once), then drain it in the background. The refusal, when the engine
    refuses, in the page's words (`gone`: what a NotFound means here)."""
    try:
        events = turn()
    except Conflict:
        return HttpResponse(BUSY, status=409)
    except NotFound as exc:
        return HttpResponse(gone, status=409) if gone else HttpResponse(exc.detail, status=404)
    except InvalidInput as exc:
        return HttpResponse(WRITE_FIRST if exc.field == "content" else exc.detail, status=422)
    turns.start(lambda: events, name=session.id)
    return None


def _accepted(message_id: str | None = None) -> HttpResponse:
    response = HttpResponse(status=202)
    if message_id:
        response["X-Arbor-Message"] = message_id
    return response


@require_POST
@login_required
def send(request: HttpRequest, session_id: str) -> HttpResponse:
    """A user message under the branch on screen (`parent_id`, its leaf), then the answer."""
    session = session_or_404(request, session_id)
    content = request.POST.get("content", "")  # checked by the engine, once
    parent_id = request.POST.get("parent_id") or None
    refused = _start_turn(
        session, lambda: session.chat(content, parent_id=parent_id, stream=True),
        gone=BRANCH_GONE)
    return refused or _accepted()


def _edited(request: HttpRequest, session_id: str,
            message_id: str) -> tuple[Session, Message, str] | HttpResponse:
    """The session, the message being edited and its new text, or the answer refusing."""
    session = session_or_404(request, session_id)
    found = session.get_message(message_id)
    content = _text(request)
    if found is None:
        return HttpResponse("No such message.", status=404)
    if content is None:
        return HttpResponse("A message cannot be empty.", status=422)
    return session, found, content


@require_POST
@login_required
def edit(request: HttpRequest, session_id: str, message_id: str) -> HttpResponse:
    """Save: the message's text replaced in place (its other parts kept)."""
    edited = _edited(request, session_id, message_id)
    if isinstance(edited, HttpResponse):
        return edited
    session, found, content = edited
    parts = [p for p in found.parts if p.get("type") != "text"]
    updated = session.update_message({"id": found.id, "role": found.role,
                                      "parts": [{"type": "text", "text": content}, *parts],
                                      "metadata": {**found.metadata, "edited": True}})
    return render(request, "arbor/_message.html", message_context(session, updated))


@require_POST
@login_required
def branch(request: HttpRequest, session_id: str, message_id: str) -> HttpResponse:
    """Send as new branch: a sibling of this user message (a new root for the first
    message), then a new answer."""
    edited = _edited(request, session_id, message_id)
    if isinstance(edited, HttpResponse):
        return edited
    session, found, content = edited
    parent_id = found.parent_id
    if parent_id is None:
        refused = _start_turn(session, lambda: session.chat(content, root=True, stream=True))
    else:
        refused = _start_turn(
            session, lambda: session.chat(content, parent_id=parent_id, stream=True))
    return refused or _accepted()


@require_POST
@login_required
def regenerate(request: HttpRequest, session_id: str, message_id: str) -> HttpResponse:
    """A new answer beside this assistant message, under the same parent."""
    session = session_or_404(request, session_id)
    found = session.get_message(message_id)
    if found is None:
        return HttpResponse("No such message.", status=404)
    if found.role != "assistant":
        return HttpResponse("Only an assistant message can be regenerated.", status=422)
    refused = _start_turn(session, lambda: session.regenerate(found.id, stream=True))
    return refused or _accepted()


@require_POST
@login_required
def fork(request: HttpRequest, session_id: str, message_id: str) -> HttpResponse:
    """A new session holding the path up to and including this message; opens it."""
    row = session_row_or_404(request, session_id)
    name = (request.POST.get("name") or f"{row.name or 'Untitled'} (fork)")[:MAX_NAME]
    try:
        info = access.manager_for(row.agent_id).fork(row.id, message_id, name)
    except NotFound:
        return HttpResponse("No such message.", status=404)
    except InvalidInput as exc:
        return HttpResponse(str(exc), status=422)
    return go(request, reverse("chat", args=[info.id]))


@require_POST
@login_required
def stop(request: HttpRequest, session_id: str) -> HttpResponse:
    session = session_or_404(request, session_id)
    session.request_stop()
    return _accepted()


@require_POST
@login_required
def compact(request: HttpRequest, session_id: str) -> HttpResponse:
    """Compact now: the summariser runs in the background; the page shows `compacting`,
    then the new summary marker (or the error) through live events."""
    session = session_or_404(request, session_id)
    if busy.is_held(session):  # the answer now; the compaction's own claim is the guard
        return HttpResponse(BUSY, status=409)
    turns.start(session.compact, name=session.id)
    return _accepted()


@require_POST
@login_required
def undo_compaction(request: HttpRequest, session_id: str, compaction_id: str) -> HttpResponse:
    """Undo this summary: the overlay goes; the original messages are read again."""
    session = session_or_404(request, session_id)
    try:
        session.remove_compaction(compaction_id)
    except (NotFound, InvalidInput):
        return HttpResponse("That summary is already gone.", status=404)
    return HttpResponse(status=204)
