"""The prompt panel in a real browser (SPEC §4, §11, §16): chromium against daphne, live
over the WebSocket, on the test database. The panel's text is compared with what the JSON
API says the model is sent; an agent's tool call through the API changes the open panel.
Screenshots of the panel (light and dark, desktop and 375 px) go to test-output/screenshots/.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import expect

from memory_core import SessionManager
from sessions_app.auth import create_key
from tests.live_server import running_daphne
from tests.ui import browsing
from tests.ui.browsing import SHOTS, person, sign_in

BLOCKS = [
    {"label": "soul", "kind": "readonly", "description": "Identity",
     "content": "You are a <b>careful</b> travel agent & you say so."},
    {"label": "memory", "description": "Learned facts", "max_tokens": 60},
    {"label": "todos", "description": "Open tasks", "max_tokens": 20},
    {"label": "skills", "kind": "skill", "description": "How-tos"},
    {"label": "knowledge", "kind": "search", "description": "Reference notes"},
]


@pytest.fixture
def site(transactional_db: None, tmp_path: Path) -> Iterator[str]:
    with running_daphne(tmp_path, env={"ARBOR_DEBUG": "0",
                                       "ARBOR_DEMO_STREAM_DELAY": "0"}) as base:
        yield base


@pytest.fixture
def alice(transactional_db: None) -> dict[str, Any]:
    agent = person(blocks=BLOCKS)["agent"]
    manager = SessionManager.for_agent(agent)
    session = manager.get_session(manager.create("Lisbon trip").id)
    session.replace_context_block(  # 17/20 tokens: amber
        "todos", "- book the tram tour\n- buy museum passes\n- pack rain jackets")
    session.set_context_entry("skills", "packing", "Roll, do not fold.", "How to pack light")
    session.set_context_entry("knowledge", "trams", "Tram 28 runs until 23:00.")
    session.load_skill("skills", "packing")
    return {"agent": agent, "session": session, "key": create_key(agent.owner)[1]}


class Api:
    def __init__(self, site: str, key: str, sid: str) -> None:
        self.base = f"{site}/api/v1/sessions/{sid}"
        self.headers = {"Authorization": f"Bearer {key}"}

    def prompt(self) -> str:
        response = httpx.get(f"{self.base}/system-prompt", headers=self.headers)
        assert response.status_code == 200
        return str(response.json()["prompt"])

    def block(self, label: str) -> str:
        return str(httpx.get(f"{self.base}/context/{label}", headers=self.headers)
                   .json()["content"])

    def tool(self, name: str, **arguments: Any) -> dict[str, Any]:
        response = httpx.post(f"{self.base}/tools/{name}", headers=self.headers,
                              json={"arguments": arguments})
        assert response.status_code == 200
        return dict(response.json())


def open_chat(page: Any, site: str, sid: str) -> None:
    page.goto(f"{site}/sessions/{sid}/")
    expect(page).to_have_url(re.compile(r"/login/"))
    sign_in(page)
    expect(page).to_have_url(re.compile(rf"/sessions/{sid}/"))
    expect(panel(page).locator("#frozen-prompt")).to_be_attached()
    page.wait_for_timeout(300)  # the socket is open


def panel(page: Any) -> Any:
    return page.get_by_role("complementary", name="Prompt")


def no_sideways_scroll(page: Any) -> bool:
    return bool(page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"))


def shoot(page: Any, name: str) -> None:
    """The page and the panel at every size, the panel opened where it starts collapsed."""

    def each(label: str, scheme: str) -> None:
        page.evaluate("localStorage.removeItem('arbor.promptPanel')")  # each size's default
        page.wait_for_timeout(150)
        assert no_sideways_scroll(page), f"{name} scrolls sideways at {label}"
        show = panel(page).get_by_role("button", name="Show the prompt panel")
        if show.count():
            page.screenshot(path=str(SHOTS / f"{name}-collapsed-{label}-{scheme}.png"))
            show.click()
        panel(page).locator("#pp-blocks-title").scroll_into_view_if_needed()
        page.screenshot(path=str(SHOTS / f"{name}-blocks-{label}-{scheme}.png"))
        panel(page).locator(".pp-head").scroll_into_view_if_needed()

    browsing.shoot(page, name, each)


def test_the_panel_shows_the_prompt_byte_for_byte_as_the_api_sends_it(site, page, alice):
    sid = alice["session"].id
    api = Api(site, alice["key"], sid)
    tricky = "  <i>not markup</i> &amp; tabs\tand\r\nCRLF\n\nblank line above"
    assert api.tool("set_context", label="memory", content=tricky)["is_error"] is False
    sent = api.prompt()  # freezes it
    assert tricky in sent
    open_chat(page, site, sid)
    prompt = panel(page).locator("#frozen-prompt")
    assert prompt.text_content() == sent
    # the rules between blocks stay one line each in the narrow panel (not 44 + 2)
    rule = prompt.locator(".pp-rule").first
    one_line = prompt.evaluate("p => parseFloat(getComputedStyle(p).lineHeight)")
    assert rule.bounding_box()["height"] < 1.5 * one_line
    expect(panel(page)).to_contain_text("Frozen")
    soul = panel(page).locator("#block-soul")
    expect(soul).to_contain_text("read-only")
    expect(soul.locator("textarea")).to_have_count(0)
    expect(soul.get_by_role("button", name="Save")).to_have_count(0)
    expect(panel(page).locator("#block-todos .usage")).to_have_class(re.compile("level-warn"))
    expect(panel(page).get_by_role("button", name="Unload packing")).to_be_visible()
    panel(page).get_by_role("button", name="Expand").click()
    expect(prompt).to_have_class(re.compile("expanded"))
    assert page.console_errors == []


def test_an_edit_past_the_budget_shows_the_error_and_changes_nothing(site, page, alice):
    sid = alice["session"].id
    api = Api(site, alice["key"], sid)
    api.tool("set_context", label="memory", content="- window seat")
    before = api.prompt()
    open_chat(page, site, sid)
    memory = panel(page).locator("#block-memory")
    memory.get_by_text("Edit", exact=True).click()
    memory.get_by_label("New content of memory").fill("far too long " * 40)
    memory.get_by_role("button", name="Save").click()
    alert = panel(page).locator("#block-memory [role=alert]")
    expect(alert).to_contain_text("is limited to 60 tokens")
    expect(alert).to_contain_text("Nothing was changed.")
    expect(memory.get_by_label("New content of memory")).to_have_value(re.compile("far too long"))
    assert api.block("memory") == "- window seat" and api.prompt() == before
    expect(panel(page).locator("#prompt-stale")).to_have_count(0)

    memory.get_by_label("New content of memory").fill("- aisle seat")
    memory.get_by_role("button", name="Save").click()
    expect(panel(page).locator("#block-memory .pp-content")).to_have_text("- aisle seat")
    expect(panel(page).locator("#prompt-stale")).to_have_text(
        "1 change since this prompt was frozen")
    assert api.block("memory") == "- aisle seat"
    # chromium logs the refused save's 422 as a failed load; nothing else went wrong
    assert [e for e in page.console_errors if "status of 422" not in e] == []


def test_an_agents_tool_call_updates_the_open_panel_and_refresh_shows_the_diff_first(
        site, page, alice):
    sid = alice["session"].id
    api = Api(site, alice["key"], sid)
    frozen = api.prompt()
    open_chat(page, site, sid)
    expect(panel(page).locator("#prompt-stale")).to_have_count(0)

    result = api.tool("set_context", label="memory", content="- vegetarian\n- <b>no</b> fish")
    assert result["is_error"] is False
    expect(panel(page).locator("#block-memory .pp-content")).to_have_text(
        "- vegetarian\n- <b>no</b> fish")
    expect(panel(page).locator("#prompt-stale")).to_have_text(
        "1 change since this prompt was frozen")
    assert panel(page).locator("#frozen-prompt").text_content() == frozen  # until refreshed

    panel(page).get_by_role("button", name="Refresh prompt").click()
    diff = panel(page).get_by_role("region", name="Prompt changes")
    expect(diff).to_contain_text("breaks the provider's prefix cache")
    expect(diff.locator(".d-add", has_text="+- vegetarian")).to_be_visible()
    expect(diff.locator(".d-add", has_text="+- <b>no</b> fish")).to_be_visible()
    assert api.prompt() == frozen  # the diff alone changes nothing
    shoot(page, "prompt-panel")

    diff.get_by_role("button", name="Confirm refresh").click()
    expect(panel(page).locator("#prompt-stale")).to_have_count(0)
    new = api.prompt()
    assert new != frozen and "- vegetarian" in new
    expect(panel(page).locator("#frozen-prompt")).to_have_text(new)
    assert panel(page).locator("#frozen-prompt").text_content() == new
    assert page.console_errors == []


def test_on_a_phone_the_panel_is_a_collapsed_section_that_opens(site, page, alice):
    sid = alice["session"].id
    page.set_viewport_size({"width": 375, "height": 800})
    open_chat(page, site, sid)
    toggle = panel(page).get_by_role("button", name="Show the prompt panel")
    expect(toggle).to_have_attribute("aria-expanded", "false")
    expect(panel(page).locator("#frozen-prompt")).to_be_hidden()
    expect(page.get_by_role("button", name="Send")).to_be_visible()
    toggle.click()
    expect(panel(page).locator("#frozen-prompt")).to_be_visible()
    assert no_sideways_scroll(page)
    assert page.console_errors == []
