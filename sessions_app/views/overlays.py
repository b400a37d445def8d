"""Compaction overlays on the chat page: one quiet marker standing for the messages it
summarises, which open in place, a page at a time, so every original can be read.

A marker shows the true number of messages it covers (two path lengths, whatever the
range), not the number that happened to be read. `compaction_info` tells the page what a
finished compaction did ("Summarised 1,270 messages") and where its marker is.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.http import require_safe

from memory_core import InvalidInput, Message, NotFound, Session
from memory_core.tree import Compaction

from .common import session_or_404

ORIGINALS_PAGE = 200  # originals read per "Show earlier" when a marker is opened


def range_count(session: Session, c: Compaction) -> int:
    """How many messages the overlay covers: from its first to its last, inclusive."""
    try:
        return (session.get_path_length(c.to_message_id)
                - session.get_path_length(c.from_message_id) + 1)
    except NotFound:
        return 0


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
        start = session.get_message(c.from_message_id)
        has_more = start is not None and start.parent_id is not None
        rows.append({"overlay": c, "items": None, "count": range_count(session, c)})
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


def _overlay_or_none(session: Session, compaction_id: str) -> Compaction | None:
    return next((c for c in session.get_compactions() if c.id == compaction_id), None)


@require_safe
@login_required
def overlay_originals(request: HttpRequest, session_id: str, compaction_id: str) -> HttpResponse:
    """A page of the original messages under a summary marker, read raw: the last
    ORIGINALS_PAGE of the range, or those just before `?before=`; a button reads the
    page before it, down to the range's first message."""
    session = session_or_404(request, session_id)
    found = _overlay_or_none(session, compaction_id)
    if found is None:
        return HttpResponse("That summary is gone; reload the page.", status=404)
    before = request.GET.get("before") or None
    try:
        page = session.get_path_page(found.to_message_id, limit=ORIGINALS_PAGE,
                                     before_id=before)
    except (NotFound, InvalidInput):
        return HttpResponse("That message is gone; reload the page.", status=404)
    messages = page.messages
    ids = [m.id for m in messages]
    more = page.has_more
    if found.from_message_id in ids:
        messages, more = messages[ids.index(found.from_message_id):], False
    elif before is not None and not messages:
        more = False
    return render(request, "arbor/_originals.html", {
        "session_id": session.id, "compaction": found, "more": more and bool(messages),
        "earlier_before": messages[0].id if messages else None,
        "items": [(m, page.siblings.get(m.id)) for m in messages]})


@require_safe
@login_required
def compaction_info(request: HttpRequest, session_id: str, compaction_id: str) -> HttpResponse:
    """What a compaction covers, for the page's "Summarised N messages" note."""
    session = session_or_404(request, session_id)
    found = _overlay_or_none(session, compaction_id)
    if found is None:
        return JsonResponse({"error": "not_found", "detail": "That summary is gone."},
                            status=404)
    return JsonResponse({"id": found.id, "count": range_count(session, found),
                         "from_message_id": found.from_message_id,
                         "to_message_id": found.to_message_id})
