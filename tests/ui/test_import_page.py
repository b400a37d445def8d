"""The Import page in a real browser (issue 30): from the session list, a ChatGPT export
dropped on the zone, the upload's progress, the summary with a link to each session, the
session opening on the branch the person last saw; a Pi session through the picker; a
refusal shown in place. Screenshots light, dark and 375 px."""

from __future__ import annotations

import base64
import re
from typing import Any

import orjson
import pytest
from playwright.sync_api import expect

from sessions_app import models
from tests.imports import exports as ex
from tests.ui import browsing
from tests.ui.browsing import login, person


@pytest.fixture
def alice(transactional_db) -> dict[str, Any]:
    return person()


def drop(page: Any, data: bytes, name: str) -> None:
    """Drag a file onto the drop zone, as a person dragging it from their desktop."""
    page.evaluate("""([b64, name]) => {
        const bytes = Uint8Array.from(atob(b64), c => c.charCodeAt(0));
        const transfer = new DataTransfer();
        transfer.items.add(new File([bytes], name, {type: "application/json"}));
        const zone = document.querySelector("[data-drop-zone]");
        for (const kind of ["dragenter", "dragover", "drop"]) {
            zone.dispatchEvent(new DragEvent(kind, {dataTransfer: transfer, bubbles: true,
                                                    cancelable: true}));
        }
    }""", [base64.b64encode(data).decode(), name])


def test_import_chats_from_the_session_list(site, page, alice, tmp_path):
    login(page, site)
    page.get_by_role("link", name="Import conversations").click()
    expect(page.get_by_role("heading", name="Import", exact=True)).to_be_visible()
    drop(page, orjson.dumps(ex.chatgpt()), "conversations.json")
    expect(page.locator(".import-status")).to_have_text("conversations.json ready")
    browsing.shoot(page, "import-chats")
    seen = []
    page.on("request", lambda r: seen.append(r.method) if "/import/" in r.url else None)
    page.get_by_role("button", name="Import").click()
    summary = page.locator("#import-result")
    expect(summary.get_by_role("heading")).to_have_text(
        "ChatGPT: 2 conversations imported, 11 messages")
    assert "POST" in seen and page.url.endswith("/import/")  # the summary came in place
    browsing.shoot(page, "import-chats-summary")
    # The link opens the session on its current branch (a1), with the switcher 2/2.
    summary.get_by_role("link", name="Lisbon trip").click()
    expect(page.locator("article#m-a1")).to_be_visible()
    expect(page.locator("article#m-a2")).to_have_count(0)
    counter = page.locator("article#m-a1").get_by_text(re.compile(r"^\s*2/2\s*$"))
    expect(counter).to_be_visible()
    page.locator("article#m-a1").get_by_role("button", name="Previous branch").click()
    expect(page.locator("article#m-a2")).to_be_visible()
    # A Pi session through the picker; the same file again adds nothing.
    path = tmp_path / "session.jsonl"
    path.write_bytes(ex.pi_jsonl())
    for expected in ("Pi: 1 conversation imported, 6 messages",
                     "Pi: 0 conversations imported, 0 messages"):
        page.goto(f"{site}/import/")
        page.get_by_label("Export file (.json)").set_input_files(str(path))
        page.get_by_role("button", name="Import").click()
        expect(page.locator("#import-result h2")).to_have_text(expected)
    expect(page.locator("#import-result .skipped")).to_contain_text("already imported")
    assert models.Session.objects.filter(name="List project files").count() == 1
    assert page.console_errors == []


def test_a_refused_file_is_explained_in_place(site, page, alice):
    login(page, site)
    page.goto(f"{site}/import/")
    data = ex.claude()
    data[0]["chat_messages"][2]["parent_message_uuid"] = "ghost"
    drop(page, orjson.dumps(data), "conversations.json")
    page.get_by_role("button", name="Import").click()
    alert = page.get_by_role("alert")
    expect(alert).to_contain_text("Nothing was imported")
    expect(alert).to_contain_text("conversation c-trip: chat_messages[2].parent_message_uuid")
    browsing.shoot(page, "import-chats-refused")
    assert models.Session.objects.count() == 0
    assert page.console_errors == []
