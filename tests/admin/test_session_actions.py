"""Refresh prompt and Compact now, as list actions and change-page buttons, go through
the engine: they emit live events (the SessionEvent outbox) and keep its rules."""

from __future__ import annotations

import pytest
from django.contrib.messages import get_messages
from django.urls import reverse

from sessions_app import models
from tests.admin.conftest import change_url
from tests.conftest import user_msg

CHANGELIST = "admin:sessions_app_session_changelist"


def _long_talk(session, n: int = 12) -> None:
    # The default compaction keeps a 20,000-token tail: this path is well over it.
    for i in range(n):
        session.append_message(user_msg(f"turn {i} " + " ".join(f"w{i}x{j}" for j in range(2500))))


def _event_types(session_id: str, after: int) -> list[str]:
    return list(models.SessionEvent.objects.filter(session__id=session_id, seq__gt=after)
                .order_by("seq").values_list("type", flat=True))


def _seq(session_id: str) -> int:
    return models.Session.objects.get(id=session_id).event_seq


def _texts(response) -> list[str]:
    return [str(m) for m in get_messages(response.wsgi_request)]


@pytest.fixture
def stale(session):
    """A session whose frozen prompt no longer shows its memory block's content."""
    session.add_context("memory", description="Learned facts")
    session.freeze_system_prompt()
    session.replace_context_block("memory", "The user flies from Lisbon.")
    assert "Lisbon" not in session.freeze_system_prompt()
    return session


def test_refresh_prompt_action_renders_the_blocks_and_emits(admin_client, stale):
    before = _seq(stale.id)
    response = admin_client.post(reverse(CHANGELIST), {
        "action": "refresh_prompt", "_selected_action": [stale.id]}, follow=True)
    assert response.status_code == 200
    assert "Refreshed the system prompt of 1 session." in _texts(response)
    assert "Lisbon" in stale.freeze_system_prompt()
    assert stale.system_prompt_status().up_to_date
    assert _seq(stale.id) > before
    assert "prompt.refreshed" in _event_types(stale.id, before)


def test_refresh_prompt_button_on_the_change_page(admin_client, stale):
    page = admin_client.get(change_url("session", stale.id)).content.decode()
    url = reverse("admin:sessions_app_session_refresh_prompt", args=[stale.id])
    assert f'action="{url}"' in page and "stale" in page
    before = _seq(stale.id)
    assert admin_client.get(url).status_code == 405  # a write: POST only
    response = admin_client.post(url)
    assert response.status_code == 302 and response.url == change_url("session", stale.id)
    assert "Lisbon" in stale.freeze_system_prompt()
    assert _event_types(stale.id, before) == ["prompt.refreshed"]


def test_compact_now_action_adds_an_overlay_and_emits(admin_client, session):
    _long_talk(session)
    before = _seq(session.id)
    response = admin_client.post(reverse(CHANGELIST), {
        "action": "compact_now", "_selected_action": [session.id]}, follow=True)
    overlays = session.get_compactions()
    assert len(overlays) == 1
    assert any("compacted" in t for t in _texts(response))
    history = session.get_history()
    assert history[0].role == "user" and any(m.role == "system" for m in history)
    assert history[-1].text.startswith("turn 11")
    types = _event_types(session.id, before)
    assert "compaction.started" in types and "compaction.completed" in types


def test_compact_now_button_with_nothing_to_compact_says_so(admin_client, session):
    session.append_message(user_msg("short"))
    url = reverse("admin:sessions_app_session_compact_now", args=[session.id])
    response = admin_client.post(url, follow=True)
    assert _texts(response) == ["test: nothing to compact."]
    assert session.get_compactions() == []


def test_failing_summariser_is_an_error_message_and_changes_nothing(
    admin_client, session, monkeypatch
):
    def broken(prompt: str) -> str:
        raise RuntimeError("summariser down")

    monkeypatch.setattr("memory_core.autocompact.default_summarizer", lambda llm=None: broken)
    _long_talk(session)
    history = [m.id for m in session.get_history()]
    count = models.Message.objects.filter(session__id=session.id).count()
    before = _seq(session.id)
    response = admin_client.post(reverse(CHANGELIST), {
        "action": "compact_now", "_selected_action": [session.id]}, follow=True)
    assert response.status_code == 200
    errors = [str(m) for m in get_messages(response.wsgi_request) if m.level_tag == "error"]
    assert errors == ["Compacting test failed: summariser failed: summariser down"]
    assert session.get_compactions() == []
    assert [m.id for m in session.get_history()] == history
    assert models.Message.objects.filter(session__id=session.id).count() == count
    assert "compaction.failed" in _event_types(session.id, before)  # announced, not hidden


def test_buttons_need_the_change_permission(client, session, django_user_model):
    from django.contrib.auth.models import Permission

    viewer = django_user_model.objects.create_user("viewer", password="x", is_staff=True)
    viewer.user_permissions.add(Permission.objects.get(
        codename="view_session", content_type__app_label="sessions_app"))
    client.force_login(viewer)
    assert "Refresh prompt" not in client.get(change_url("session", session.id)).content.decode()
    url = reverse("admin:sessions_app_session_refresh_prompt", args=[session.id])
    assert client.post(url).status_code == 403
    assert models.SessionEvent.objects.filter(session__id=session.id,
                                              type="prompt.refreshed").count() == 0
