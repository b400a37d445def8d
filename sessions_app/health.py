"""GET /health: is the process up and can it reach its database."""

from __future__ import annotations

from django.db import connection
from django.http import HttpRequest, JsonResponse

from . import db_pool


def health(request: HttpRequest) -> JsonResponse:
    try:
        with connection.cursor() as cur:
            cur.execute("SELECT 1")
            cur.fetchone()
    except Exception as exc:  # noqa: BLE001 - health must answer, not raise
        response = JsonResponse({"status": "error", "database": str(exc)}, status=503)
        if db_pool.no_connection(exc):  # busy, not down: a load balancer may come back soon
            db_pool.refused(f"{request.method} {request.path}")
            response["Retry-After"] = str(db_pool.RETRY_AFTER_SECONDS)
        return response
    return JsonResponse({"status": "ok", "database": connection.vendor})
