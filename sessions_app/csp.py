"""The Content-Security-Policy header: django-csp's middleware, plus the live socket.

The policy itself is settings.CONTENT_SECURITY_POLICY. The chat page's WebSocket goes to
the host the page came from; CSP Level 3 lets 'self' cover ws:/wss: there, but older
browsers (Safari before 15.4) do not, so connect-src also names this host's ws:// and
wss:// explicitly. Only this host: a page that slipped a script past the sanitiser still
cannot open a socket elsewhere.
"""

from __future__ import annotations

from csp.middleware import CSPMiddleware, PolicyParts
from django.core.exceptions import DisallowedHost
from django.http import HttpRequest, HttpResponseBase


class Middleware(CSPMiddleware):
    def get_policy_parts(self, request: HttpRequest, response: HttpResponseBase,
                         report_only: bool = False) -> PolicyParts:
        parts = super().get_policy_parts(request, response, report_only=report_only)
        try:
            host = request.get_host()
        except DisallowedHost:  # answered 400 already; 'self' alone is enough for that
            return parts
        update = dict(parts.update or {})
        update["connect-src"] = [*update.get("connect-src", []), f"ws://{host}", f"wss://{host}"]
        parts.update = update
        return parts
