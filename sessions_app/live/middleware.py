"""Request middleware of the Arbor app."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.core.signals import request_finished
from django.http import HttpRequest, HttpResponseBase
from django.middleware.common import CommonMiddleware

from .. import db_pool
from ..storage import actor
from . import events


class Common(CommonMiddleware):
    """Django's CommonMiddleware, without APPEND_SLASH's look for a slashed URL under
    /api/: every path there resolves (a JSON 404 catches the rest), so the answer is
    always no, and finding it out resolved each API request's URL a second time."""

    def should_redirect_with_slash(self, request: HttpRequest) -> bool:
        if request.path_info.startswith("/api/"):
            return False
        return bool(super().should_redirect_with_slash(request))


class NoConnection:
    """A page or view that waited too long for a database connection answers 503 with
    Retry-After (a page, or JSON under /api/), not Django's 500. The API's own views are
    answered the same way by its exception handlers (api/errors.py)."""

    sync_capable = True
    async_capable = False

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exc: Exception) -> HttpResponseBase | None:
        return db_pool.answer(request) if db_pool.no_connection(exc) else None


def _release(**kwargs: Any) -> None:
    events.release()


class EventsAfterResponse:
    """A request's live events are published once its response has been sent
    (`request_finished`), so the writer's answer never waits behind the fan-out to the
    session's subscribers. A streaming response (a chat turn) releases them at once: its
    deltas and messages go out as they happen.

    Sync-only, and last in MIDDLEWARE: Django then runs the whole chain in one thread
    instead of hopping between the event loop and a thread for each of its own
    async-capable middlewares; under load the loop is also busy sending frames.
    """

    sync_capable = True
    async_capable = False

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response
        request_finished.connect(_release, dispatch_uid="arbor-events-after-response")

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        events.hold()
        actor.clear()  # a deletion is logged as this request's, never an earlier one's
        try:
            response = self.get_response(request)
        except BaseException:
            events.release()
            raise
        if response.streaming:
            events.release()
        return response
