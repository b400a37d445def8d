"""What only pages need, passed by the JSON API: the Content-Security-Policy header
(django-csp's middleware, plus the live socket, and a fixed policy for JSON) and
django.contrib.messages.

The pages' policy is settings.CONTENT_SECURITY_POLICY. The chat page's WebSocket goes to
the host the page came from; CSP Level 3 lets 'self' cover ws:/wss: there, but older
browsers (Safari before 15.4) do not, so connect-src also names this host's ws:// and
wss:// explicitly. Only this host: a page that slipped a script past the sanitiser still
cannot open a socket elsewhere.

A JSON answer (the API's) is never a document a browser runs: it gets JSON_POLICY, which
allows nothing at all, as a string made once, instead of the pages' policy built anew for
each response (a third of the middlewares' time on an API call).
"""

from __future__ import annotations

from csp.constants import HEADER
from csp.middleware import CSPMiddleware, PolicyParts
from django.contrib.messages.middleware import MessageMiddleware
from django.core.exceptions import DisallowedHost
from django.http import HttpRequest, HttpResponseBase

JSON_POLICY = "default-src 'none'; frame-ancestors 'none'"
# What a view sets on its response to change or waive the policy (django-csp's decorators).
_VIEW_CHOICES = frozenset({"_csp_exempt", "_csp_config", "_csp_update", "_csp_replace",
                           "_csp_exempt_ro", "_csp_config_ro", "_csp_update_ro",
                           "_csp_replace_ro"})


class Middleware(CSPMiddleware):
    def process_response(self, request: HttpRequest, response: HttpResponseBase
                         ) -> HttpResponseBase:
        if (response.get("Content-Type", "").startswith("application/json")
                and _VIEW_CHOICES.isdisjoint(vars(response))):
            if HEADER not in response:
                response[HEADER] = JSON_POLICY
            return response
        return super().process_response(request, response)

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


class Messages(MessageMiddleware):
    """django.contrib.messages shows one-time notices on the next page (the admin's
    "saved"); an API call never shows one, yet the stock middleware built its two storages
    (cookie and session) for every request: a tenth of the middlewares' time on an API
    append. Under /api/ it builds nothing (its process_response skips a request it did
    not prepare), and its answer is unchanged: nothing read, nothing stored."""

    def process_request(self, request: HttpRequest) -> None:
        if not request.path_info.startswith("/api/"):
            super().process_request(request)
