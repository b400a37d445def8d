"""The site root: until Arbor has a web UI, `/` points a person at what exists."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_safe

HOME = """<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>Arbor</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<style>body { font: 16px/1.5 system-ui, sans-serif; max-width: 40rem; margin: 2rem auto; padding: 0 1rem; }</style>
</head>
<body>
<h1>Arbor</h1>
<p>Tree-structured conversation memory for LLM agents.</p>
<ul>
<li><a href="/admin/">Admin</a>: sign in, manage agents, sessions and API keys</li>
<li><a href="/api/v1/docs">API docs</a>: the JSON API, with a console to try it</li>
<li><a href="/health">Health</a>: is the server up and its database reachable</li>
</ul>
</body>
</html>
"""


@require_safe
def home(request: HttpRequest) -> HttpResponse:
    return HttpResponse(HOME)
