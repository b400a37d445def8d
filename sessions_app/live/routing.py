"""WebSocket routes and the Origin check in front of them (SPEC §10)."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from channels.auth import AuthMiddlewareStack
from channels.routing import URLRouter
from django.conf import settings
from django.http.request import validate_host
from django.urls import re_path

from .consumers import SessionConsumer

websocket_urlpatterns = [
    re_path(r"^ws/sessions/(?P<session_id>[^/]+)/$", SessionConsumer.as_asgi()),
]


def origin_allowed(origin: str | None) -> bool:
    """No Origin: a program, not a browser — let through here, the consumer then demands
    an API key. An Origin must be http(s) on one of ALLOWED_HOSTS (any port)."""
    if origin is None:
        return True
    try:
        parts = urlsplit(origin)
        host = parts.hostname
    except ValueError:
        return False
    if parts.scheme not in ("http", "https") or not host:
        return False
    return validate_host(host, settings.ALLOWED_HOSTS)


class OriginValidator:
    """Channels' `AllowedHostsOriginValidator` refuses a missing Origin, which shuts out
    agents with a key; this one refuses only a browser from a host not allowed."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        if scope["type"] == "websocket":
            origin = None
            for key, value in scope.get("headers", ()):
                if key.lower() == b"origin":
                    origin = value.decode("latin-1")
            if not origin_allowed(origin):
                await receive()  # websocket.connect
                await send({"type": "websocket.close", "code": 4403})
                return None
        return await self.app(scope, receive, send)


def websocket_application() -> Any:
    return OriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns)))
