"""`/`: the user's agents and their sessions, newest first; create, rename, delete; search."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_POST, require_safe

from memory_core import InvalidInput
from memory_core.limits import MAX_NAME

from .. import access, models
from ..api.pagination import BadCursor, page
from .common import agent_or_404, agents, go, session_row_or_404

PAGE_SIZE = 50
SEARCH_HITS = 20


@require_safe
@login_required
def home(request: HttpRequest) -> HttpResponse:
    """The sessions of one agent (or all the user's agents), most recently updated first,
    a page at a time: one query per page however many sessions there are."""
    mine = list(agents(request))
    chosen = request.GET.get("agent") or ""
    rows = models.Session.objects.filter(agent__owner_id=request.user.pk).select_related("agent")
    if chosen:
        rows = rows.filter(agent_id=chosen)
    try:
        sessions, next_cursor = page(rows, field="updated_at", cursor=request.GET.get("cursor"),
                                     limit=PAGE_SIZE, newest_first=True)
    except BadCursor:
        return HttpResponseBadRequest("That page link is not valid any more.")
    context = {"agents": mine, "chosen": chosen, "sessions": sessions,
               "next_cursor": next_cursor, "max_name": MAX_NAME}
    if request.htmx and request.GET.get("cursor"):  # "Older sessions": just the rows
        return render(request, "arbor/_session_rows.html", context)
    return render(request, "arbor/home.html", context)


@require_POST
@login_required
def create_session(request: HttpRequest) -> HttpResponse:
    agent = agent_or_404(request, request.POST.get("agent", ""))
    name = request.POST.get("name", "").strip()[:MAX_NAME] or "New session"
    info = access.manager_for(agent).create(name)
    return go(request, reverse("chat", args=[info.id]))


@require_POST
@login_required
def rename_session(request: HttpRequest, session_id: str) -> HttpResponse:
    row = session_row_or_404(request, session_id)
    name = request.POST.get("name", "").strip()
    if not name:
        return HttpResponse("A session needs a name.", status=422)
    try:
        access.manager_for(row.agent_id).rename(row.id, name[:MAX_NAME])
    except InvalidInput as exc:
        return HttpResponse(str(exc), status=422)
    if request.htmx and request.POST.get("from") == "list":
        row.refresh_from_db()
        return render(request, "arbor/_session_row.html", {"s": row})
    return go(request, request.POST.get("next") or reverse("chat", args=[row.id]))


@require_POST
@login_required
def delete_session(request: HttpRequest, session_id: str) -> HttpResponse:
    row = session_row_or_404(request, session_id)
    access.manager_for(row.agent_id).delete(row.id)
    if request.htmx and request.POST.get("from") == "list":
        return HttpResponse("")  # the row is swapped out
    return go(request, reverse("home"))


@require_safe
@login_required
def search(request: HttpRequest) -> HttpResponse:
    """Hits across all the user's sessions, best first; each opens its session on the
    branch that holds it, scrolled to the message."""
    query = request.GET.get("q", "")
    hits: list[Any] = []
    names: dict[str, str] = {}
    words_only = False
    if query.strip():
        for agent in agents(request):
            found = access.manager_for(agent).search(query, SEARCH_HITS, full=False)
            words_only = words_only or found.semantic == "unavailable"
            hits += found
        # Each agent's hits keep the engine's order (corrections above what they correct);
        # several agents' lists interleave by that rank.
        hits.sort(key=lambda h: h.rank)
        hits = hits[:SEARCH_HITS]
        ids = {h.session_id for h in hits} | {c.session_id for h in hits for c in h.other_copies}
        names = dict(models.Session.objects.filter(id__in=ids).values_list("id", "name"))
    # Each hit with its session's name, and where its other copies are (a link each).
    context = {"query": query, "hits": [
        (h, names.get(h.session_id, ""),
         [(c, names.get(c.session_id, "")) for c in h.other_copies]) for h in hits],
               "words_only": words_only}
    template = "arbor/_search_results.html" if request.htmx else "arbor/search.html"
    return render(request, template, context)

