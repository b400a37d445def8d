"""Tabs render a live message from the frame: a message appended elsewhere shows up in
every open tab without the tab fetching its fragment (the worker's hub rendered it once
for them: sessions_app/live/fragments.py); an edit made in one tab reaches the other the
same way."""

from __future__ import annotations

import re
from typing import Any

import httpx
from playwright.sync_api import expect

from sessions_app.auth import create_key
from tests.ui.browsing import login
from tests.ui.test_chat import alice, messages, site  # noqa: F401 (fixtures)

FRAGMENT = re.compile(r"/sessions/[^/]+/messages/[^/]+/$")


def fragment_gets(page: Any) -> list[str]:
    seen: list[str] = []
    page.on("request", lambda r: seen.append(r.url) if r.method == "GET"
            and FRAGMENT.search(r.url) else None)
    return seen


def test_tabs_show_an_appended_and_an_edited_message_without_fetching_them(
        site, page, alice):  # noqa: F811
    sid = alice["manager"].create("Live").id
    key = create_key(alice["user"])[1]
    login(page, site)
    tabs = [page, page.context.new_page()]
    gets = [fragment_gets(tab) for tab in tabs]
    for tab in tabs:
        tab.goto(f"{site}/sessions/{sid}/")
        expect(tab.locator("#thread")).to_be_visible()
    page.wait_for_timeout(300)  # the sockets are open
    api = httpx.Client(base_url=f"{site}/api/v1", headers={"Authorization": f"Bearer {key}"})
    first = api.post(f"/sessions/{sid}/messages", json={"message": {
        "role": "user", "content": "**from** an agent <script>window.pwned = 1</script>"}})
    assert first.status_code == 201
    for tab in tabs:
        expect(messages(tab)).to_have_count(1)
        expect(messages(tab).first.locator("strong")).to_have_text("from")
        expect(messages(tab).first).to_contain_text("<script>window.pwned = 1</script>")
        assert tab.evaluate("window.pwned") is None
    message_id = first.json()["id"]
    edited = api.put(f"/sessions/{sid}/messages/{message_id}", json={"message": {
        "role": "user", "content": "changed elsewhere"}})
    assert edited.status_code == 200, edited.text
    for tab in tabs:
        expect(messages(tab).first).to_contain_text("changed elsewhere")
    assert gets == [[], []]
    assert page.console_errors == []
