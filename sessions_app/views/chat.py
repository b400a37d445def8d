"""`/sessions/<id>/`: one branch of a conversation, and the fragments the page fetches.

The page shows the last `PAGE` messages of the branch and loads earlier ones when the
reader scrolls up, so a 10,000-message session opens as fast as a 50-message one (the
engine reads a bounded page of the path, not the path).

`?leaf=<id>` selects the branch that ends at, or runs through, that message: from it the
view follows the reader's remembered choice at each fork below (kept in their login
session, per conversation), else the newest leaf. Every branch therefore has a URL, and
switching a fork above does not lose the choices made below it. Without `?leaf=` the
page opens where this person last was (last_leaf.py), else on the newest leaf.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_safe

from memory_core import InvalidInput, Message, NotFound, Session
from memory_core.limits import MAX_PATH_PAGE
from memory_core.tree import PathPage

from .. import models
from ..engine_config import llm_from_settings
from ..storage.branches import sibling_info
from .common import session_or_404, session_row_or_404
from .last_leaf import remember, remembered
from .overlays import with_overlays

PAGE = 50
JUMP_PAGES = 10  # pages of MAX_PATH_PAGE read at most to jump up to a message
MAX_REMEMBERED = 500  # fork choices kept per conversation


def _choices(request: HttpRequest, session_id: str) -> dict[str, str]:
    return dict(request.session.get("arbor_forks", {}).get(session_id, {}))


def _remember(request: HttpRequest, session_id: str, page: PathPage) -> None:
    """The child shown at each fork on screen becomes that fork's remembered choice."""
    choices = _choices(request, session_id)
    before = dict(choices)
    for m in page.messages:
        info = page.siblings.get(m.id)
        if info is not None and info.count > 1:
            choices[m.parent_id or ""] = m.id
    if choices != before:
        forks = request.session.get("arbor_forks", {})
        forks[session_id] = dict(list(choices.items())[-MAX_REMEMBERED:])
        request.session["arbor_forks"] = forks


def resolve_leaf(request: HttpRequest, session: Session, leaf: str | None) -> str | None:
    """The leaf to show for `?leaf=`: that message, then remembered choices, then newest."""
    if not leaf:
        latest = session.get_latest_leaf()
        return latest.id if latest else None
    choices = _choices(request, session.id)
    current = leaf
    for _ in range(len(choices)):  # each remembered fork at most once
        chosen = choices.get(current)
        if chosen is None:
            break
        current = chosen
    for start in (current, leaf):
        try:
            return session.get_newest_leaf_under(start).id
        except NotFound:
            continue
    raise NotFound(f"message {leaf} not found")


def page_context(request: HttpRequest, session: Session, leaf_id: str | None,
                 before: str | None = None, until: str | None = None) -> dict[str, Any]:
    """The page of the branch the chat shows: its last PAGE messages, or those before
    `before`; with `until` (a message above), everything from it down to `before`, in a
    bounded number of reads (the page's "Show the summary" link jumps up to a marker)."""
    page = session.get_path_page(leaf_id, limit=PAGE, before_id=before)
    if until is not None and before is not None:
        page = _down_to(session, page, leaf_id, until)
    _remember(request, session.id, page)
    items = [(m, page.siblings.get(m.id)) for m in page.messages]
    rows, older_before, above_overlay = with_overlays(session, items, session.get_compactions())
    absorbed_top = bool(items) and older_before != items[0][0].id
    return {"session_id": session.id, "page": page, "leaf_id": page.leaf_id, "items": items,
            "rows": rows, "older_before": older_before,
            "has_more": above_overlay if absorbed_top else page.has_more}


@require_safe
@login_required
def chat(request: HttpRequest, session_id: str) -> HttpResponse:
    session = session_or_404(request, session_id)
    # Read the seq before the messages: whatever is written after this read reaches the
    # page through `resume`, so nothing falls between the render and the socket.
    row = session_row_or_404(request, session_id)
    asked = request.GET.get("leaf")
    known = remembered(request, session.id)
    try:
        leaf_id = _leaf_to_open(request, session, asked, known)
    except NotFound:
        return render(request, "arbor/chat_missing_leaf.html",
                      {"row": row, "leaf": asked}, status=404)
    context = page_context(request, session, leaf_id)
    remember(request, session.id, context["leaf_id"], known)
    context.update({"row": row, "model_label": model_label(),
                    "nav_sessions": _recent_sessions(request, row),
                    **origin(row, context["page"].messages)})
    return render(request, "arbor/chat.html", context)


def _leaf_to_open(request: HttpRequest, session: Session, asked: str | None,
                  known: str | None) -> str | None:
    """`?leaf=` first, then where this person last was (if it still exists), then the
    newest leaf."""
    if asked or not known:
        return resolve_leaf(request, session, asked)
    try:
        return resolve_leaf(request, session, known)
    except NotFound:
        return resolve_leaf(request, session, None)


@require_safe
@login_required
def older(request: HttpRequest, session_id: str) -> HttpResponse:
    """The messages just above `before` on the branch ending at `leaf` (scrolling up)."""
    session = session_or_404(request, session_id)
    try:
        context = page_context(request, session, request.GET.get("leaf") or None,
                               before=request.GET.get("before") or None,
                               until=request.GET.get("until") or None)
    except (NotFound, InvalidInput):
        return HttpResponse("That message is gone; reload the page.", status=404)
    return render(request, "arbor/_page.html", context)


@require_safe
@login_required
def message(request: HttpRequest, session_id: str, message_id: str) -> HttpResponse:
    """One message as the page shows it (a live event names it; the page fetches it)."""
    session = session_or_404(request, session_id)
    found: Message | None = session.get_message(message_id)
    if found is None:
        return HttpResponse("No such message.", status=404)
    return render(request, "arbor/_message.html", message_context(session, found))


def message_context(session: Session, m: Message) -> dict[str, Any]:
    """What _message.html needs for one message: it and its place among its siblings."""
    info = sibling_info([s.id for s in session.get_branches(m.parent_id)], m.id)
    return {"m": m, "sib": info, "session_id": session.id}


def model_label() -> str:
    """What answers in this install: "offline demo model" when no LLM is configured."""
    llm = llm_from_settings()
    return str(getattr(llm, "label", None) or getattr(llm, "model", "") or "model")


def _down_to(session: Session, page: PathPage, leaf_id: str | None, until: str) -> PathPage:
    """`page` extended upwards, a page of MAX_PATH_PAGE at a time, until it holds `until`."""
    messages, siblings, more = list(page.messages), dict(page.siblings), page.has_more
    for _ in range(JUMP_PAGES):
        if not more or not messages or any(m.id == until for m in messages):
            break
        above = session.get_path_page(leaf_id, limit=MAX_PATH_PAGE, before_id=messages[0].id)
        messages[:0] = above.messages
        siblings.update(above.siblings)
        more = above.has_more
    return PathPage(messages, more, page.leaf_id, siblings)


def origin(row: models.Session, shown: list[Message]) -> dict[str, Any]:
    """Where the session came from: the session it was forked from (and the message it
    was forked at, when on the page), the other tool it was imported from, and when."""
    parent = None
    if row.parent_session_id:
        parent = (models.Session.objects.filter(id=row.parent_session_id, agent_id=row.agent_id)
                  .values("id", "name").first())
    fork_point = next((m.metadata["forked_from"].get("message_id") for m in reversed(shown)
                       if isinstance(m.metadata.get("forked_from"), dict)), None)
    imported = (models.ImportSource.objects.filter(session_id=row.id)
                .values("source_format", "created_at").first())
    return {"parent": parent, "fork_point": fork_point, "imported": imported}


def _recent_sessions(request: HttpRequest, row: models.Session) -> list[models.Session]:
    return list(models.Session.objects.filter(agent_id=row.agent_id)
                .order_by("-updated_at", "-id").only("id", "name", "message_count",
                                                     "updated_at")[:30])
