"""The database connection pool's two rules outside settings (arbor/settings.py sizes it).

1. A caller that waited ARBOR_DB_POOL_TIMEOUT seconds without getting a connection is told
   to come back (503 with Retry-After; on a WebSocket an `unavailable` error and close
   code 4503), never given a 500: the server is busy, not broken. Django raises its own
   OperationalError at the first query, with psycopg_pool's PoolTimeout as the cause.
2. Code that runs long without the database (a chat turn waiting on its model) gives its
   connection back between steps, so a slow model does not hold one of the pool's few.
"""

from __future__ import annotations

import logging

import orjson
from django.db import connection
from django.http import HttpRequest, HttpResponse
from django.template.loader import render_to_string
from psycopg_pool import PoolTimeout

log = logging.getLogger(__name__)

RETRY_AFTER_SECONDS = 2
CODE = "unavailable"
DETAIL = ("the server is busy: no database connection was free in time; "
          f"try again in {RETRY_AFTER_SECONDS} seconds")
# The consumers' close codes are 4000 + an HTTP status (4401, 4404): daphne allows no
# registered code other than 1000, so not 1013 "Try Again Later".
WS_CLOSE_CODE = 4503


def no_connection(exc: BaseException | None) -> bool:
    """Whether `exc` is, or was raised from, the pool's timeout."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, PoolTimeout):
            return True
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return False


def refused(where: str) -> None:
    """Log one refusal: a warning, no traceback (nothing failed; the pool was full)."""
    log.warning("no database connection free within the pool's timeout: refused %s "
                "(raise ARBOR_DB_POOL_MAX or ARBOR_DB_POOL_TIMEOUT, or add workers)", where)


def answer(request: HttpRequest) -> HttpResponse:
    """The 503: the API's JSON error under /api/, else a page that reads nothing from the
    database (no user, no session)."""
    refused(f"{request.method} {request.path}")
    if request.path_info.startswith("/api/"):
        response = HttpResponse(orjson.dumps({"detail": DETAIL, "code": CODE}), status=503,
                                content_type="application/json")
    else:
        response = HttpResponse(render_to_string(
            "arbor/unavailable.html", {"retry_after": RETRY_AFTER_SECONDS}), status=503)
    response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    return response


def give_back() -> None:
    """Return this thread's connection to the pool (with no pool: close it), unless a
    transaction is open. Cheap when there is none: the next query takes one again."""
    if not connection.in_atomic_block:
        connection.close()
