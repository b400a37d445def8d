"""Lookups every UI view shares: the user's own agents and sessions, nothing else.

Another user's session id answers 404 exactly like an id that does not exist (the same
door as the JSON API: `access.py`).
"""

from __future__ import annotations

from typing import Any

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme

from memory_core import NotFound, Session

from .. import access, models
from ..auth import Principal


def principal(request: HttpRequest) -> Principal:
    return Principal(user_id=request.user.pk, door="ui")


def agents(request: HttpRequest) -> Any:
    return access.agents_of(principal(request)).order_by("name", "id")


def agent_or_404(request: HttpRequest, agent_id: str) -> models.Agent:
    try:
        return access.agent_for(principal(request), agent_id)
    except NotFound:
        raise Http404("No such agent.") from None


def session_or_404(request: HttpRequest, session_id: str) -> Session:
    try:
        return access.session_for(principal(request), session_id)
    except NotFound:
        raise Http404("No such session.") from None


def session_row_or_404(request: HttpRequest, session_id: str) -> models.Session:
    try:
        row = access.session_row_for(principal(request), session_id)
    except NotFound:
        raise Http404("No such session.") from None
    return models.Session.objects.select_related("agent").get(id=row.id)


def go(request: HttpRequest, url: str) -> HttpResponse:
    """A redirect a plain form follows and htmx turns into a page load; a URL off this
    site (a form's `next` may say anything) goes home instead."""
    if not url_has_allowed_host_and_scheme(url, allowed_hosts={request.get_host()},
                                           require_https=request.is_secure()):
        url = reverse("home")
    if request.htmx:
        response = HttpResponse(status=204)
        response["HX-Redirect"] = url
        return response
    return redirect(url)
