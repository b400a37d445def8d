"""Failed sign-ins lock out for a while, per username and per address (django-axes).

The rule (settings ARBOR_LOGIN_FAILURES, ARBOR_LOGIN_FAILURES_PER_ADDRESS,
ARBOR_LOGIN_COOLOFF): the Nth failed sign-in for one username, or the Mth from one address,
locks it until COOLOFF after the last failure; a failure counts while no more than COOLOFF
has passed since the last one for its username, address and browser. While locked, even
the right password is refused, and a refused attempt does not move the time, so the page's
"try again at" stays true. This holds for the app's sign-in page and the admin's, which
both go through `django.contrib.auth.authenticate`. An admin unlocks by deleting the rows
under Axes > Access attempts, or with `manage.py axes_reset_username <name>` (or
`axes_reset_ip`, `axes_reset`).
"""

from __future__ import annotations

import logging
import math
from datetime import datetime, timedelta
from typing import Any

from axes.handlers.database import AxesDatabaseHandler
from axes.helpers import get_client_username, get_cool_off
from django.conf import settings
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone

log = logging.getLogger("arbor.login")


class Handler(AxesDatabaseHandler):
    """axes' database handler with a limit for each of its two groups of attempts.

    axes compares one number, the largest group's failures, against one limit
    (AXES_FAILURE_LIMIT, here the per-username one). An address is allowed more
    failures, since several people may share one (an office, a NAT): it is reported as
    at the limit only once it reaches its own.
    """

    def get_failures(self, request: HttpRequest, credentials: dict[str, Any] | None = None) -> int:
        by_user, by_address = (_failures(q) for q in self.get_user_attempts(request, credentials))
        if by_address >= settings.ARBOR_LOGIN_FAILURES_PER_ADDRESS:
            return max(by_user, settings.AXES_FAILURE_LIMIT)
        return by_user


def _failures(attempts: QuerySet[Any]) -> int:
    return sum(a.failures_since_start for a in attempts)


def locked_until(request: HttpRequest, credentials: dict[str, Any] | None = None) -> datetime:
    """When the lock on this request's username or address ends: rows drop out oldest
    first, each COOLOFF after its last failure, and the lock ends when the ones left
    are under their limit."""
    cool_off = get_cool_off(request) or timedelta(0)
    handler = Handler()
    limits = (settings.AXES_FAILURE_LIMIT, settings.ARBOR_LOGIN_FAILURES_PER_ADDRESS)
    until = timezone.now()
    for attempts, limit in zip(handler.get_user_attempts(request, credentials), limits,
                               strict=True):
        counted = 0
        for row in attempts.order_by("-attempt_time"):
            counted += row.failures_since_start
            if counted >= limit:
                until = max(until, row.attempt_time + cool_off)
                break
    return until


def locked_out(request: HttpRequest, original_response: HttpResponse | None = None,
               credentials: dict[str, Any] | None = None) -> HttpResponse:
    """AXES_LOCKOUT_CALLABLE: 429 with the time to try again, in the page and in
    Retry-After, for the app's sign-in page and the admin's alike."""
    username = get_client_username(request, credentials) or ""
    until = locked_until(request, credentials)
    seconds = max(1, math.ceil((until - timezone.now()).total_seconds()))
    log.warning("sign-in locked for username %r from %s until %s (%d s)", username,
                getattr(request, "axes_ip_address", "?"), until.isoformat(), seconds)
    response = render(request, "registration/locked_out.html", {
        "username": username, "until": until, "minutes": math.ceil(seconds / 60),
        "login_url": request.path,
    }, status=429)
    response["Retry-After"] = str(seconds)
    return response
