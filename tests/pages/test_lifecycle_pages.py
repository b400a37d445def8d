"""The agent settings page's retention form and export button (issue 31); the admin's
retention fields, session pin and erasure list."""

from __future__ import annotations

from django.urls import reverse

from sessions_app import models
from tests.conftest import user_msg


def test_settings_page_saves_retention_and_refuses_bad_values(browser, alice):
    agent = alice["agent"]
    page = browser.get(reverse("agent-settings", args=[agent.id]))
    assert b"Days kept" in page.content and b"Export everything" in page.content
    url = reverse("agent-retention", args=[agent.id])
    browser.post(url, {"max_age_days": "30", "max_sessions": ""})
    agent.refresh_from_db()
    assert (agent.retention_max_age_days, agent.retention_max_sessions) == (30, None)
    bad = browser.post(url, {"max_age_days": "-4", "max_sessions": "99999999999"}, follow=True)
    assert b"Nothing was saved" in bad.content
    agent.refresh_from_db()
    assert agent.retention_max_age_days == 30


def test_export_button_downloads_the_agents_json_lines(browser, alice, bob):
    sid = alice["manager"].create("one").id
    alice["manager"].append_all(sid, [user_msg("hello")])
    response = browser.get(reverse("agent-export", args=[alice["agent"].id]))
    lines = b"".join(response.streaming_content).splitlines()
    assert len(lines) == 2 and sid.encode() in lines[1]
    assert browser.get(reverse("agent-export", args=[bob["agent"].id])).status_code == 404


def test_page_deletion_is_logged_as_the_signed_in_user(browser, alice):
    sid = alice["manager"].create("one").id
    browser.post(reverse("session-delete", args=[sid]))
    row = models.Erasure.objects.get()
    assert (row.scope, row.by, row.by_id, row.door) == (
        "session", "user", str(alice["agent"].owner_id), "ui")


def test_admin_pins_sessions_checks_retention_and_lists_erasures(admin_client, alice):
    agent = alice["agent"]
    sid = alice["manager"].create("one").id
    admin_client.post(reverse("admin:sessions_app_session_change", args=[sid]),
                      {"name": "one", "pinned": "on"})
    assert models.Session.objects.get(id=sid).pinned
    form = admin_client.post(reverse("admin:sessions_app_agent_change", args=[agent.id]), {
        "owner": agent.owner_id, "name": agent.name, "context": "[]",
        "retention_max_age_days": "-1"})
    assert form.status_code == 200 and b"retention.max_age_days" in form.content
    admin_client.post(reverse("admin:sessions_app_session_delete", args=[sid]), {"post": "yes"})
    row = models.Erasure.objects.get()
    assert (row.by, row.door) == ("user", "admin")
    listing = admin_client.get(reverse("admin:sessions_app_erasure_changelist"))
    assert listing.status_code == 200 and sid.encode() in listing.content
