"""Liveness and readiness (issue 27): /health answers from the process alone, even with the
database gone; /ready answers 200 only when the database and the channel layer answer,
and otherwise 503 JSON naming what is down."""

from __future__ import annotations

import os
import time

import httpx
import pytest
from django.db import connection

from tests.live_server import running_daphne

REDIS_URL = os.environ.get("ARBOR_TEST_REDIS_URL", "redis://127.0.0.1:6379/7")
NO_REDIS = "redis://127.0.0.1:1/0"


def test_health_touches_nothing(client, db, django_assert_num_queries):
    with django_assert_num_queries(0):
        response = client.get("/health")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "database": connection.vendor}
    assert response["Cache-Control"] == "no-store"


def test_ready_with_everything_up(client, db, settings):
    settings.REDIS_URL = ""
    response = client.get("/ready")
    assert response.status_code == 200
    body = response.json()
    assert (body["status"], body["down"]) == ("ok", [])
    assert body["checks"]["database"]["ok"] and body["checks"]["channel_layer"]["ok"]
    assert body["checks"]["database"]["vendor"] == connection.vendor
    assert body["checks"]["channel_layer"]["backend"] == "in-memory"


def test_ready_with_redis_configured(client, db, settings):
    import redis

    try:
        redis.Redis.from_url(REDIS_URL, socket_connect_timeout=1).ping()
    except redis.RedisError:
        pytest.skip(f"Redis is not reachable at {REDIS_URL}")
    settings.REDIS_URL = REDIS_URL
    body = client.get("/ready").json()
    assert body["status"] == "ok"
    assert body["checks"]["channel_layer"]["backend"] == "redis"


def test_ready_answers_503_naming_redis_when_it_is_down(client, db, settings):
    settings.REDIS_URL = NO_REDIS
    settings.ARBOR_READY_TIMEOUT = 0.5
    started = time.monotonic()
    response = client.get("/ready")
    assert time.monotonic() - started < 3
    assert response.status_code == 503
    assert response["Retry-After"] == "1"
    body = response.json()
    assert (body["status"], body["down"]) == ("unavailable", ["channel_layer"])
    assert body["checks"]["database"]["ok"]
    assert "Error" in body["checks"]["channel_layer"]["error"]
    assert client.get("/health").status_code == 200


def _unreachable_database(tmp_path) -> str:
    if connection.vendor == "sqlite":
        return f"sqlite:///{tmp_path}/no/such/folder/arbor.sqlite3"
    return "postgres://postgres@127.0.0.1:1/arbor"


@pytest.mark.django_db(transaction=True)
def test_a_worker_without_its_database_is_alive_but_not_ready(tmp_path):
    env = {"DATABASE_URL": _unreachable_database(tmp_path), "ARBOR_READY_TIMEOUT": "1",
           "REDIS_URL": "", "ARBOR_LIFECYCLE_WORKER": "0"}
    with running_daphne(tmp_path, env=env) as base:
        started = time.monotonic()
        health = httpx.get(f"{base}/health", timeout=10)
        assert health.status_code == 200
        assert health.json() == {"status": "ok", "database": connection.vendor}
        assert time.monotonic() - started < 1

        started = time.monotonic()
        ready = httpx.get(f"{base}/ready", timeout=10)
        assert time.monotonic() - started < 5
        assert ready.status_code == 503
        body = ready.json()
        assert body["down"] == ["database"]
        assert body["checks"]["channel_layer"]["ok"]
        assert body["checks"]["database"]["error"]
