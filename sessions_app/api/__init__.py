"""Arbor's JSON API (SPEC §9): django-ninja over the engine, mounted at /api/v1/.

Each router is thin: authenticate (ApiKeyAuth), find the resource through the one door
(access.py), call the engine, shape the answer. Errors go through one table (errors.py).
"""

from __future__ import annotations

from functools import wraps
from typing import Any

from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed
from django.urls import URLPattern, URLResolver, include, path, re_path
from django.views.decorators.csrf import csrf_exempt
from ninja import NinjaAPI

from ..auth import ApiKeyAuth
from . import (
    agents,
    chat,
    context,
    embeddings,
    errors,
    export,
    lifecycle,
    messages,
    search,
    sessions,
    tools,
    versions,
)
from .render import OrjsonRenderer

api = NinjaAPI(
    title="Arbor API",
    version="1",
    description=(
        "Tree-structured conversation memory for LLM agents. Authenticate with "
        "`Authorization: Bearer <API key>`. Errors are `{\"detail\", \"code\"}`; lists are "
        "`{\"items\", \"next_cursor\"}` (pass `cursor` back for the next page)."
    ),
    auth=ApiKeyAuth(),
    parser=errors.StrictJsonParser(),
    renderer=OrjsonRenderer(),
    urls_namespace="arbor-api",
    openapi_url="/openapi.json",
    docs_url="/docs",
)
errors.install(api)
for module in (agents, sessions, messages, search, embeddings, context, versions, tools, chat,
               export, lifecycle):
    api.add_router("", module.router)


def _json_405(view: Any) -> Any:
    """ninja answers a wrong method with an empty text 405; make it the API's JSON error."""

    @wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        response = view(request, *args, **kwargs)
        if isinstance(response, HttpResponseNotAllowed):
            allowed = response["Allow"]
            response = errors.json_error(
                405, f"method {request.method} not allowed here (allowed: {allowed})")
            response["Allow"] = allowed
        return response

    return wrapper


@csrf_exempt
def not_found(request: HttpRequest, rest: str = "") -> HttpResponse:
    return errors.json_error(404, f"no API endpoint at {request.path}")


def urlpatterns() -> list[URLPattern | URLResolver]:
    """/api/v1/... and a JSON 404 for anything else under /api/."""
    patterns, app_name, namespace = api.urls
    for pattern in patterns:
        if isinstance(pattern, URLPattern):
            pattern.callback = _json_405(pattern.callback)
    return [
        path("api/v1/", include((patterns, app_name), namespace=namespace)),
        re_path(r"^api(?:/(?P<rest>[\s\S]*))?$", not_found),
    ]
