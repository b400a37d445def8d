"""API keys: bearer auth, revocation, agent-limited keys, the command and the admin."""

from __future__ import annotations

from io import StringIO

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.urls import reverse

from sessions_app import models
from sessions_app.auth import create_key, hash_key, revoke
from tests.conftest import make_agent

from .conftest import Api, error, ok


def test_missing_or_malformed_credentials_are_401(anonymous, alice_key):
    response = anonymous.get("/agents")
    error(response, 401, "unauthorized")
    assert response["WWW-Authenticate"].startswith("Bearer")
    assert Api("arb_not-a-real-key").get("/agents").status_code == 401
    basic = Api(None)
    basic.client.defaults["HTTP_AUTHORIZATION"] = f"Basic {alice_key}"
    error(basic.get("/agents"), 401)
    error(Api("x" * 5000).get("/agents"), 401)


def test_revoked_keys_stop_at_once(api, alice_key):
    ok(api.get("/agents"))
    revoke(models.ApiKey.objects.get(key_hash=hash_key(alice_key)))
    error(api.get("/agents"), 401, "unauthorized")


def test_inactive_users_keys_stop(api, alice_agent):
    User.objects.filter(pk=alice_agent.owner_id).update(is_active=False)
    error(api.get("/agents"), 401)


def test_only_a_hash_and_prefix_are_stored(alice_key):
    row = models.ApiKey.objects.get()
    assert row.key_hash == hash_key(alice_key) and alice_key not in (row.key_hash, row.prefix)
    assert alice_key.startswith(row.prefix) and len(row.prefix) == 12


def test_key_limited_to_one_agent_sees_nothing_else(alice_agent):
    other = models.Agent.objects.create(owner=alice_agent.owner, name="second")
    limited = Api(create_key(alice_agent.owner, agent=alice_agent)[1])
    full = Api(create_key(alice_agent.owner)[1])
    hidden = ok(full.post(f"/agents/{other.id}/sessions", {}), 201)["id"]
    assert [a["id"] for a in ok(limited.get("/agents"))["items"]] == [alice_agent.id]
    error(limited.get(f"/agents/{other.id}"), 404)
    error(limited.get(f"/sessions/{hidden}"), 404)
    error(limited.get(f"/agents/{other.id}/search", q="x"), 404)
    mine = ok(limited.post(f"/agents/{alice_agent.id}/sessions", {}), 201)["id"]
    ok(limited.get(f"/sessions/{mine}"))
    before = models.Agent.objects.count()
    error(limited.post("/agents", {"name": "new"}), 403, "forbidden")
    assert models.Agent.objects.count() == before


def test_key_cannot_be_limited_to_someone_elses_agent(alice_agent):
    stranger = make_agent("eve", "eve's")
    with pytest.raises(ValueError):
        create_key(alice_agent.owner, agent=stranger)


def test_command_creates_user_and_prints_key_last(db):
    out = StringIO()
    call_command("create_api_key", "carol", stdout=out)
    raw = out.getvalue().strip().splitlines()[-1]
    assert User.objects.filter(username="carol").exists()
    assert not User.objects.get(username="carol").has_usable_password()
    assert ok(Api(raw).get("/agents")) == {"items": [], "next_cursor": None}


def test_command_limits_to_an_agent(alice_agent):
    out = StringIO()
    call_command("create_api_key", "alice", "--agent", alice_agent.id, "--name", "ci", stdout=out)
    raw = out.getvalue().strip().splitlines()[-1]
    row = models.ApiKey.objects.get(key_hash=hash_key(raw))
    assert row.agent_id == alice_agent.id and row.name == "ci"
    with pytest.raises(CommandError):
        call_command("create_api_key", "alice", "--agent", "nope", stdout=StringIO())


def test_admin_shows_the_raw_key_once_and_revokes(admin_client, alice_agent):
    url = reverse("admin:sessions_app_apikey_add")
    response = admin_client.post(url, {"user": alice_agent.owner_id, "name": "laptop",
                                       "agent": alice_agent.id}, follow=True)
    assert response.status_code == 200
    row = models.ApiKey.objects.get(name="laptop")
    shown = [str(m) for m in response.context["messages"]]
    raw = next(s.split("<code>")[1].split("</code>")[0] for s in shown if "<code>" in s)
    assert hash_key(raw) == row.key_hash and row.agent_id == alice_agent.id
    ok(Api(raw).get("/agents"))
    page = admin_client.get(reverse("admin:sessions_app_apikey_change", args=[row.pk]))
    assert raw not in page.content.decode()
    admin_client.post(reverse("admin:sessions_app_apikey_changelist"),
                      {"action": "revoke_keys", "_selected_action": [row.pk]})
    error(Api(raw).get("/agents"), 401)


def test_admin_refuses_a_foreign_agent(admin_client, alice_agent):
    stranger = make_agent("eve", "eve's")
    response = admin_client.post(reverse("admin:sessions_app_apikey_add"),
                                 {"user": alice_agent.owner_id, "agent": stranger.id})
    assert response.status_code == 200 and not models.ApiKey.objects.exists()
