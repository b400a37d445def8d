"""API keys in the admin: listed by prefix and limit; the raw key is shown once, at
creation; the stored hash is never shown."""

from __future__ import annotations

import re

from django.contrib.messages import get_messages
from django.urls import reverse

from sessions_app import models
from sessions_app.auth import create_key
from tests.admin.conftest import change_url


def test_list_shows_prefix_agent_limit_created_and_revoked(admin_client, agent):
    limited, _ = create_key(agent.owner, agent=agent, name="limited")
    wide, _ = create_key(agent.owner, name="wide")
    html = admin_client.get(reverse("admin:sessions_app_apikey_changelist")).content.decode()
    assert f"{limited.prefix}…" in html and f"{wide.prefix}…" in html
    assert "all the user&#x27;s agents" in html and agent.name in html
    for key in (limited, wide):
        assert key.key_hash not in html


def test_created_key_is_shown_once_and_works(admin_client, agent, client):
    response = admin_client.post(reverse("admin:sessions_app_apikey_add"), {
        "user": agent.owner_id, "name": "ops", "agent": agent.id, "_save": "Save"}, follow=True)
    shown = [str(m) for m in get_messages(response.wsgi_request)]
    raw = re.search(r"<code>(\S+)</code>", " ".join(shown)).group(1)
    key = models.ApiKey.objects.get(name="ops")
    assert raw.startswith(key.prefix) and key.key_hash not in raw
    assert client.get("/api/v1/agents", headers={"Authorization": f"Bearer {raw}"}).status_code == 200
    page = admin_client.get(change_url("apikey", key.pk)).content.decode()
    assert raw not in page and key.key_hash not in page
    assert 'name="user"' not in page and 'name="agent"' not in page  # fixed once made


def test_add_page_takes_raw_ids_not_selects(admin_client, agent):
    html = admin_client.get(reverse("admin:sessions_app_apikey_add")).content.decode()
    assert re.search(r'<input[^>]+name="user"[^>]+vForeignKeyRawIdAdminField', html)
    assert re.search(r'<input[^>]+name="agent"[^>]+vForeignKeyRawIdAdminField', html)
