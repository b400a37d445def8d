"""`/sessions/<id>/`: one branch of a conversation, and the fragments the page fetches.

The page shows the last `PAGE` messages of the branch and loads earlier ones when the
reader scrolls up, so a 10,000-message session opens as fast as a 50-message one (the
engine reads a bounded page of the path, not the path).

`?leaf=<id>` selects the branch that ends at, or runs through, that message: from it the
view follows the reader's remembered choice at each fork below (kept in their login
session, per conversation), else the newest leaf. Every branch therefore has a URL, and
switching a fork above does not lose the choices made below it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_safe

from memory_core import Message, NotFound, Session
from memory_core.tree import Compaction, SiblingInfo

from .. import models
from ..engine_config import llm_from_settings
from ..storage.branches import sibling_info
from .common import session_or_404, session_row_or_404

if TYPE_CHECKING:
    from memory_core import PathPage

PAGE = 50
MAX_RANGE = 500  # messages of one overlay shown when it is opened
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
                 before: str | None = None) -> dict[str, Any]:
    page = session.get_path_page(leaf_id, limit=PAGE, before_id=before)
    _remember(request, session.id, page)
    items = [(m, page.siblings.get(m.id)) for m in page.messages]
    rows, older_before, above_overlay = with_overlays(session, items, session.get_compactions())
    absorbed_top = bool(items) and older_before != items[0][0].id
    return {"session_id": session.id, "page": page, "leaf_id": page.leaf_id, "items": items,
            "rows": rows, "older_before": older_before,
            "has_more": above_overlay if absorbed_top else page.has_more}


def with_overlays(session: Session, items: list[tuple[Message, Any]],
                  overlays: list[Compaction]) -> tuple[list[dict[str, Any]], str | None, bool]:
    """The page's rows — a message, or an overlay (compaction) shown as one marker that
    opens onto the messages it summarises — and where "Load earlier messages" goes on
    from. An overlay whose start is above the page takes the page's messages down to its
    end, and the earlier ones load from above its start."""
    position = {m.id: i for i, (m, _) in enumerate(items)}
    starts: dict[int, tuple[Compaction, int]] = {}
    top: tuple[Compaction, int] | None = None
    for c in overlays:
        first, last = position.get(c.from_message_id), position.get(c.to_message_id)
        if last is None:
            continue
        if first is not None and first <= last:
            starts.setdefault(first, (c, last))
        elif first is None and (top is None or last > top[1]):
            top = (c, last)
    rows: list[dict[str, Any]] = []
    older_before = items[0][0].id if items else None
    has_more = False
    i = 0
    if top is not None:
        c, last = top
        count, has_more = range_size(session, c)
        rows.append({"overlay": c, "items": None, "count": count})
        older_before, i = c.from_message_id, last + 1
    while i < len(items):
        if i in starts:
            c, last = starts[i]
            rows.append({"overlay": c, "items": items[i:last + 1], "count": last + 1 - i})
            i = last + 1
        else:
            rows.append({"item": items[i]})
            i += 1
    return rows, older_before, has_more


def overlay_range(session: Session, c: Compaction) -> list[Message]:
    """The messages an overlay summarises, oldest first (at most MAX_RANGE)."""
    path = session.get_path_page(c.to_message_id, limit=MAX_RANGE).messages
    ids = [m.id for m in path]
    return path[ids.index(c.from_message_id):] if c.from_message_id in ids else path


def range_size(session: Session, c: Compaction) -> tuple[str, bool]:
    """("N" or "N+", whether messages precede the range)."""
    found = overlay_range(session, c)
    complete = bool(found) and found[0].id == c.from_message_id
    count = f"{len(found)}" if complete else f"{len(found)}+"
    return count, bool(found) and found[0].parent_id is not None


@require_safe
@login_required
def chat(request: HttpRequest, session_id: str) -> HttpResponse:
    session = session_or_404(request, session_id)
    # Read the seq before the messages: whatever is written after this read reaches the
    # page through `resume`, so nothing falls between the render and the socket.
    row = session_row_or_404(request, session_id)
    try:
        leaf_id = resolve_leaf(request, session, request.GET.get("leaf"))
    except NotFound:
        return render(request, "arbor/chat_missing_leaf.html",
                      {"row": row, "leaf": request.GET.get("leaf")}, status=404)
    context = page_context(request, session, leaf_id)
    context.update({"row": row, "model_label": model_label(),
                    "nav_sessions": _recent_sessions(request, row)})
    return render(request, "arbor/chat.html", context)


@require_safe
@login_required
def older(request: HttpRequest, session_id: str) -> HttpResponse:
    """The messages just above `before` on the branch ending at `leaf` (scrolling up)."""
    session = session_or_404(request, session_id)
    try:
        context = page_context(request, session, request.GET.get("leaf") or None,
                               before=request.GET.get("before") or None)
    except NotFound:
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


def _recent_sessions(request: HttpRequest, row: models.Session) -> list[models.Session]:
    return list(models.Session.objects.filter(agent_id=row.agent_id)
                .order_by("-updated_at", "-id").only("id", "name", "message_count",
                                                     "updated_at")[:30])


@require_safe
@login_required
def overlay_originals(request: HttpRequest, session_id: str, compaction_id: str) -> HttpResponse:
    """The original messages under a summary marker, read raw, when it is opened."""
    session = session_or_404(request, session_id)
    found = next((c for c in session.get_compactions() if c.id == compaction_id), None)
    if found is None:
        return HttpResponse("That summary is gone; reload the page.", status=404)
    messages = overlay_range(session, found)
    return render(request, "arbor/_originals.html", {
        "session_id": session.id,
        "items": [(m, _siblings(session, m)) for m in messages]})


def _siblings(session: Session, m: Message) -> SiblingInfo | None:
    return message_context(session, m)["sib"]
