"""Probes for a load balancer or an orchestrator (issue 27).

- `GET /health`, liveness: the process is up and serving. It touches neither the database
  nor Redis, so it stays fast when they are slow or down (restarting a worker would not
  bring them back). It names the configured database vendor, read from settings.
- `GET /ready`, readiness: this worker can serve now. The database answers `SELECT 1`
  and the channel layer (Redis, when REDIS_URL is set) answers PING, each within
  ARBOR_READY_TIMEOUT seconds (default 2); otherwise 503 with what is down and why.
  On Postgres the probe borrows a connection from the worker's pool, waiting at most that
  timeout: a worker whose pool is exhausted is not ready for more traffic.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from django.conf import settings
from django.db import connection
from django.http import HttpRequest, JsonResponse

DEFAULT_READY_TIMEOUT = 2.0


def _json(body: dict[str, Any], status: int = 200) -> JsonResponse:
    response = JsonResponse(body, status=status)
    response["Cache-Control"] = "no-store"
    return response


def health(request: HttpRequest) -> JsonResponse:
    return _json({"status": "ok", "database": connection.vendor})


def ready(request: HttpRequest) -> JsonResponse:
    timeout = ready_timeout()
    checks = {"database": _timed(check_database, timeout),
              "channel_layer": _timed(check_channel_layer, timeout)}
    down = [name for name, check in checks.items() if not check["ok"]]
    body = {"status": "unavailable" if down else "ok", "down": down, "checks": checks}
    response = _json(body, 503 if down else 200)
    if down:
        response["Retry-After"] = str(max(1, round(timeout)))
    return response


def ready_timeout() -> float:
    return max(0.1, float(getattr(settings, "ARBOR_READY_TIMEOUT", DEFAULT_READY_TIMEOUT)))


def _timed(check: Any, timeout: float) -> dict[str, Any]:
    started = time.monotonic()
    try:
        result: dict[str, Any] = {"ok": True, **check(timeout)}
    except Exception as exc:  # noqa: BLE001 - a probe answers what is wrong, never raises
        result = {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:300]}
    result["ms"] = round((time.monotonic() - started) * 1000, 1)
    return result


def check_database(timeout: float) -> dict[str, Any]:
    if connection.vendor != "postgresql":
        with connection.cursor() as cur:
            cur.execute("SELECT 1")
            cur.fetchone()
        return {"vendor": connection.vendor}
    pool = getattr(connection, "pool", None)
    if pool is not None:
        pool.open()  # (Django opens it at the first query; a no-op once open)
        with pool.connection(timeout=timeout) as conn:
            _select_one(conn, timeout)
    else:  # no pool (ARBOR_DB_POOL_MAX=0): a connection of its own, like a request's
        import psycopg

        params = connection.get_connection_params()
        for django_only in ("cursor_factory", "context", "prepare_threshold"):
            params.pop(django_only, None)
        params["connect_timeout"] = max(2, round(timeout))  # libpq's least is 2 s
        with psycopg.connect(**params) as conn:
            _select_one(conn, timeout)
    return {"vendor": "postgresql"}


def _select_one(conn: Any, timeout: float) -> None:
    with conn.transaction():
        conn.execute("SELECT set_config('statement_timeout', %s, true)",
                     [f"{max(1, int(timeout * 1000))}ms"])
        conn.execute("SELECT 1").fetchone()


_redis_clients: dict[tuple[str, float], Any] = {}
_redis_guard = threading.Lock()


def check_channel_layer(timeout: float) -> dict[str, Any]:
    url = str(getattr(settings, "REDIS_URL", "") or "")
    if not url:
        return {"backend": "in-memory"}
    import redis

    with _redis_guard:
        client = _redis_clients.get((url, timeout))
        if client is None:
            client = _redis_clients[(url, timeout)] = redis.Redis.from_url(
                url, socket_connect_timeout=timeout, socket_timeout=timeout)
    client.ping()
    return {"backend": "redis"}
