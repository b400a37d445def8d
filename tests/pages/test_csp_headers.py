"""The Content-Security-Policy on each kind of answer (issue 25): every page gets the pages'
policy, scripts from Arbor's own files only and the live socket's host; a JSON answer of
the API gets one that allows nothing (it is never a document a browser runs), made once
rather than built for each response. The messages pages show (the admin's) still show."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from sessions_app.auth import create_key
from sessions_app.pages import JSON_POLICY


def directives(policy: str) -> dict[str, str]:
    return dict(d.strip().split(" ", 1) for d in policy.split(";") if " " in d.strip())


def assert_page_policy(response) -> None:
    found = directives(response["Content-Security-Policy"])
    assert found["script-src"] == "'self'"
    assert found["frame-ancestors"] == "'none'"
    assert {"ws://testserver", "wss://testserver"} <= set(found["connect-src"].split())


@pytest.mark.parametrize("url", ["/login/", "/", "/search/?q=rent", "/import/", "/keys/",
                                 "/api/v1/docs", "/admin/", "/chat"])
def test_every_page_gets_the_pages_policy(browser, alice, url):
    if url == "/chat":
        url = f"/sessions/{alice['manager'].create('notes').id}/"
    response = browser.get(url, follow=True)
    assert response.status_code == 200, url
    assert response["Content-Type"].startswith("text/html")
    assert_page_policy(response)


def test_a_page_that_is_not_found_still_gets_the_pages_policy(browser):
    response = browser.get("/sessions/no-such-session/")
    assert response.status_code == 404
    assert_page_policy(response)


def test_the_api_answers_json_under_a_policy_that_allows_nothing(alice):
    key = create_key(alice["agent"].owner)[1]
    api = Client(headers={"Authorization": f"Bearer {key}"})
    answers = [
        api.get("/api/v1/agents"),
        api.post(f"/api/v1/agents/{alice['agent'].id}/sessions", {"name": "x"},
                 content_type="application/json"),
        api.get("/api/v1/sessions/no-such-session/history"),  # 404
        Client().get("/api/v1/agents"),  # 401
        api.get("/api/nothing-here"),  # the JSON 404 outside /api/v1/
    ]
    assert [a.status_code for a in answers] == [200, 201, 404, 401, 404]
    for answer in answers:
        assert answer["Content-Type"].startswith("application/json")
        assert answer["Content-Security-Policy"] == JSON_POLICY
    assert JSON_POLICY == "default-src 'none'; frame-ancestors 'none'"


def test_the_admin_still_shows_its_messages(db):
    get_user_model().objects.create_superuser("root", "root@example.com", "pw-long-enough-1")
    admin = Client()
    admin.force_login(get_user_model().objects.get(username="root"))
    response = admin.post("/admin/auth/group/add/", {"name": "editors"}, follow=True)
    assert response.status_code == 200
    assert "was added successfully" in response.content.decode()
    assert_page_policy(response)
