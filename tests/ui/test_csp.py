"""Every page works under the Content-Security-Policy (issue 25: no CSP was sent).

The policy refuses inline scripts, on*= handlers and eval; chromium reports each refusal
as a `securitypolicyviolation` event (recorded by a script Playwright injects, which the
policy does not cover) and a "Refused to ..." console error. Each page is loaded and used:
the chat streams an answer over its WebSocket, the session links keep the branch on
screen, a key is selected on focus and revoked only after confirming, the admin and the
API docs render.
"""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest
from playwright.sync_api import expect

from tests.ui.browsing import PASSWORD, login, person

RECORD = """
window.__csp = [];
document.addEventListener("securitypolicyviolation", (e) => {
  window.__csp.push(`${e.effectiveDirective} blocked ${e.blockedURI || "inline"} at ${e.sourceFile}:${e.lineNumber}`);
});
"""


@pytest.fixture
def alice(transactional_db) -> dict[str, Any]:
    return person()


@pytest.fixture
def watched(page: Any) -> Any:
    """The tab, recording CSP violations in every document it loads, and failed loads
    (`page.failed_loads`) but for /favicon.ico, which the admin and the docs do not link."""
    page.add_init_script(RECORD)
    page.failed_loads = []
    page.on("response", lambda r: page.failed_loads.append(f"{r.status} {r.url}")
            if r.status >= 400 and not r.url.endswith("/favicon.ico") else None)
    return page


def violations(page: Any) -> list[str]:
    found = page.evaluate("() => window.__csp || []")
    refused = [e for e in page.console_errors if "Refused to" in e or "Content Security" in e]
    return list(found) + refused


def visit(page: Any, url: str) -> None:
    page.goto(url)
    page.wait_for_load_state("networkidle")
    assert violations(page) == [], url
    assert page.failed_loads == [], url
    # chromium logs a failed load without its address; failed_loads says which it was
    assert [e for e in page.console_errors if "Failed to load resource" not in e] == [], url


def test_the_policy_is_sent_and_refuses_inline_script(site):
    policy = httpx.get(f"{site}/login/").headers["Content-Security-Policy"]

    directives = dict(d.strip().split(" ", 1) for d in policy.split(";") if " " in d.strip())
    assert directives["script-src"] == "'self'"
    assert "'unsafe-inline'" not in directives["script-src"]
    assert "'unsafe-eval'" not in policy
    host = site.removeprefix("http://")
    assert f"ws://{host}" in directives["connect-src"].split()
    assert f"wss://{host}" in directives["connect-src"].split()


def test_an_injected_inline_script_is_refused(site, watched, alice):
    # The guard itself: were the sanitiser ever to let a <script> through, it would not run.
    login(watched, site)
    watched.evaluate("""() => { const s = document.createElement("script");
        s.textContent = "window.__ran = true"; document.body.append(s); }""")
    assert watched.evaluate("() => window.__ran") is None
    assert any("script-src" in v for v in violations(watched))


def test_every_page_loads_and_works_without_a_violation(site, watched, alice):
    page = watched
    manager = alice["manager"]
    session = manager.create("Planning").id
    manager.append(session, {"role": "user", "content": "hello"})
    login(page, site)
    assert violations(page) == []

    # The chat: an answer streams in over the WebSocket, the session links keep the branch.
    visit(page, f"{site}/sessions/{session}/")
    page.get_by_label("Message", exact=True).fill("remember that I like green tea")
    page.get_by_label("Message", exact=True).press("Enter")
    expect(page.locator("#thread article.message").last).to_contain_text("green tea")
    expect(page.locator("main.chat")).to_have_attribute("data-session-status", "idle")
    leaf = page.locator("#thread").get_attribute("data-leaf-id")
    page.get_by_role("link", name="Tree").click()
    expect(page).to_have_url(re.compile(rf"/tree/\?leaf={leaf}$"))
    assert violations(page) == []

    # The prompt panel beside the chat: its toggle (inspector.js) works, an edit saves.
    visit(page, f"{site}/sessions/{session}/")
    toggle = page.locator(".pp-toggle")
    toggle.click()
    expect(toggle).to_have_attribute("aria-expanded", "false")
    toggle.click()
    expect(toggle).to_have_attribute("aria-expanded", "true")
    memory = page.locator("#block-memory")
    memory.get_by_text("Edit", exact=True).click()
    memory.get_by_label("New content of memory").fill("- aisle seat")
    memory.get_by_role("button", name="Save").click()  # an htmx post and swap
    expect(page.locator("#block-memory .pp-content")).to_have_text("- aisle seat")
    assert violations(page) == []

    visit(page, f"{site}/")
    page.get_by_label("Search").fill("green tea")
    page.get_by_label("Search").press("Enter")
    expect(page.locator(".search-results a").first).to_be_visible()
    assert violations(page) == []

    for path in (f"/sessions/{session}/usage/", "/import/",
                 f"/agents/{alice['agent'].id}/settings/"):
        visit(page, site + path)


def test_keys_select_on_focus_and_revoke_only_when_confirmed(site, watched, alice):
    page = watched
    login(page, site)
    visit(page, f"{site}/keys/")
    page.get_by_label("Name").fill("laptop")
    page.get_by_role("button", name="Create key").click()
    key = page.get_by_label("New API key")
    key.focus()
    selected = page.evaluate("() => { const t = document.activeElement;"
                             " return t.value.substring(t.selectionStart, t.selectionEnd); }")
    assert selected == key.input_value() and selected.startswith("arb_")

    answers = iter([False, True])
    page.on("dialog", lambda d: d.accept() if next(answers) else d.dismiss())
    revoke = page.get_by_role("button", name=re.compile("Revoke"))
    revoke.click()
    page.wait_for_timeout(300)
    expect(page.locator(".keys .badge.warn")).to_have_count(0)  # dismissed: kept
    revoke.click()
    expect(page.locator(".keys .badge.warn")).to_contain_text("revoked")
    assert violations(page) == []


def test_the_admin_and_the_api_docs_work_under_the_policy(site, watched, alice):
    page = watched
    alice["user"].is_staff = alice["user"].is_superuser = True
    alice["user"].save()
    session = alice["manager"].create("Planning").id

    visit(page, f"{site}/admin/")
    page.get_by_label("Username").fill("alice")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("link", name="Sessions").first).to_be_visible()
    assert violations(page) == []
    for path in ("/admin/sessions_app/session/", f"/admin/sessions_app/session/{session}/change/",
                 "/admin/sessions_app/agent/", "/admin/axes/accessattempt/"):
        visit(page, site + path)

    visit(page, f"{site}/api/v1/docs")
    expect(page.locator(".opblock").first).to_be_visible()
    chat = page.locator(".opblock-post", has_text="/api/v1/sessions/{session_id}/chat").first
    chat.locator(".opblock-summary").click()
    expect(chat.locator(".responses-wrapper")).to_be_visible()
    assert violations(page) == []
