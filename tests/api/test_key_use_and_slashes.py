"""The bearer check records a key's last use at most once a minute (compared in SQL),
and APPEND_SLASH redirects pages but never the JSON API."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from sessions_app.auth import create_key
from sessions_app.models import ApiKey
from tests.conftest import make_agent

pytestmark = pytest.mark.django_db


def _used(key: ApiKey, ago: timedelta) -> None:
    ApiKey.objects.filter(id=key.id).update(last_used_at=timezone.now() - ago)


def test_a_keys_last_use_is_written_again_once_a_minute_has_passed():
    key, raw = create_key(make_agent("dora").owner)
    api = Client(headers={"Authorization": f"Bearer {raw}"})
    _used(key, timedelta(seconds=30))
    before = ApiKey.objects.get(id=key.id).last_used_at
    assert api.get("/api/v1/agents").status_code == 200
    assert ApiKey.objects.get(id=key.id).last_used_at == before  # within the minute
    _used(key, timedelta(minutes=2))
    stale = ApiKey.objects.get(id=key.id).last_used_at
    assert api.get("/api/v1/agents").status_code == 200
    fresh = ApiKey.objects.get(id=key.id).last_used_at
    assert fresh is not None and stale is not None and fresh - stale > timedelta(minutes=1)


def test_api_paths_are_never_redirected_to_a_slash_but_pages_are():
    _, raw = create_key(make_agent("erin").owner)
    api = Client(headers={"Authorization": f"Bearer {raw}"})
    response = api.get("/api/v1/agents/")
    assert response.status_code == 404 and response.json()["code"]
    response = api.get("/api/v1/nowhere")
    assert response.status_code == 404 and "no API endpoint" in response.json()["detail"]
    assert Client().get("/keys").status_code == 301  # a page still gets its slash
    assert Client().get("/keys")["Location"].endswith("/keys/")
