"""A block's History in the prompt panel, in chromium (issue 32): an agent's tool calls
through the API become versions listed with their actor and source, the diff opens, and
Restore writes the old value back. Screenshots (light, dark, 375 px) go to
test-output/screenshots/block-history-*.png."""

from __future__ import annotations

from typing import Any

import httpx
from playwright.sync_api import expect

from tests.ui.browsing import SHOTS
from tests.ui.test_prompt_panel import (  # noqa: F401  (fixtures)
    alice,
    no_sideways_scroll,
    open_chat,
    panel,
    site,
)


def test_history_lists_versions_diffs_and_restores(site, page, alice):  # noqa: F811
    sid, key = alice["session"].id, alice["key"]
    base, headers = f"{site}/api/v1/sessions/{sid}", {"Authorization": f"Bearer {key}"}
    carrier = httpx.post(f"{base}/messages", headers=headers, json={"message": {
        "role": "assistant", "parts": [{"type": "text", "text": "Noting your plans."}]}}).json()
    for text in ("- prefers window seats", "- prefers window seats\n- vegetarian"):
        response = httpx.post(f"{base}/tools/set_context", headers=headers, json={
            "arguments": {"label": "memory", "content": text}, "message_id": carrier["id"]})
        assert response.status_code == 200 and not response.json()["is_error"]
    open_chat(page, site, sid)
    memory = panel(page).locator("#block-memory")
    memory.locator(".pp-history > summary").click()
    versions = memory.locator(".pp-version")
    expect(versions).to_have_count(2)
    newest = versions.first
    expect(newest).to_contain_text("v2")
    expect(newest).to_contain_text("model")
    link = newest.get_by_role("link")
    expect(link).to_have_attribute("href", f"/sessions/{sid}/?leaf={carrier['id']}"
                                   f"#m-{carrier['id']}")
    newest.locator(".pp-version-diff > summary").click()
    expect(newest.locator(".d-add")).to_contain_text("+- vegetarian")

    SHOTS.mkdir(parents=True, exist_ok=True)
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        for width, label in ((1280, "desktop"), (375, "phone")):
            page.set_viewport_size({"width": width, "height": 900})
            page.wait_for_timeout(150)
            show = panel(page).get_by_role("button", name="Show the prompt panel")
            if show.count() and show.is_visible():
                show.click()
            memory.locator(".pp-history").scroll_into_view_if_needed()
            assert no_sideways_scroll(page), f"history scrolls sideways at {label}"
            page.screenshot(path=str(SHOTS / f"block-history-{label}-{scheme}.png"))
    page.emulate_media(color_scheme="light")
    page.set_viewport_size({"width": 1280, "height": 900})

    versions.nth(1).get_by_role("button", name="Restore version 1 of memory").click()
    expect(panel(page).locator("#block-memory .pp-content")).to_have_text(
        "- prefers window seats")
    content = httpx.get(f"{base}/context/memory", headers=headers).json()["content"]
    assert content == "- prefers window seats"
    restored: Any = httpx.get(f"{base}/context/memory/versions/3", headers=headers).json()
    assert (restored["actor"], restored["restored_from"]) == ("ui", 1)
    assert page.console_errors == []
