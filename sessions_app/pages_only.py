"""Middlewares only the pages use, passed by the JSON API.

django.contrib.messages shows one-time notices on the next page (the admin's "saved"); an
API call never shows one, yet the stock middleware built its two storages (cookie and
session) for every request: a tenth of the middlewares' time on an API append. Under
/api/ it now builds nothing, and its answer is unchanged: nothing read, nothing stored.
"""

from __future__ import annotations

from django.contrib.messages.middleware import MessageMiddleware
from django.http import HttpRequest

API_PREFIX = "/api/"


class Messages(MessageMiddleware):
    """MessageMiddleware but under /api/ (its process_response skips a request it did
    not prepare)."""

    def process_request(self, request: HttpRequest) -> None:
        if not request.path_info.startswith(API_PREFIX):
            super().process_request(request)
