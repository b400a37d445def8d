"""Issue 29, defects 7-9 in the browser: code blocks' language and Copy, a 375 px phone
(the session drawer, the header and composer on screen, no sideways scroll), and the
small things (the frozen prompt inside its panel, Hide on one line, skill files only on
skill blocks, the usage page's branch by its text, a new key's Copy, snippets without
Markdown, imported and forked sessions saying so, the favicon).
"""

from __future__ import annotations

import re

import httpx
from playwright.sync_api import expect

from sessions_app import models
from tests.ui.browsing import SHOTS, asked, login, person, shoot

CODE = 'def greet(name):\n    return f"hi {name}"'


def test_a_code_block_names_its_language_and_copies_its_code(site, page, transactional_db):
    alice = person()
    sid = alice["manager"].create("Code").id
    alice["manager"].append_all(sid, [{"role": "user", "content": "show me"},
                                      {"role": "assistant",
                                       "content": f"Here:\n\n```python\n{CODE}\n```\n"}])
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    login(page, site)
    page.goto(f"{site}/sessions/{sid}/")
    block = page.locator(".codeblock")
    expect(block.locator(".code-lang")).to_have_text("python")
    block.get_by_role("button", name="Copy code").click()
    expect(block.get_by_role("button", name="Copy code")).to_have_text("Copied")
    assert page.evaluate("navigator.clipboard.readText()") == CODE
    assert page.console_errors == []


def test_on_a_phone_the_sessions_are_a_drawer_and_header_and_composer_stay(
        site, page, transactional_db):
    alice = person()
    manager = alice["manager"]
    other = manager.create("Other trip").id
    sid = manager.create("Phone").id
    manager.append_all(sid, [{"role": "user" if i % 2 == 0 else "assistant",
                              "content": f"line {i} " + "word " * 40} for i in range(30)])
    page.set_viewport_size({"width": 375, "height": 700})
    login(page, site)
    page.goto(f"{site}/sessions/{sid}/")
    assert page.evaluate("document.scrollingElement.scrollWidth") <= 375
    compact = page.get_by_role("button", name="Compact now")
    assert compact.bounding_box()["height"] < 32  # one line
    page.evaluate("window.scrollTo(0, document.body.scrollHeight / 2)")
    page.wait_for_timeout(100)
    head = page.locator(".chat-head").bounding_box()
    assert -1 <= head["y"] <= 1  # still on screen
    expect(page.get_by_label("Message", exact=True)).to_be_in_viewport()
    expect(page.locator("#composer .send")).to_be_in_viewport()
    menu = page.get_by_role("button", name="Sessions")
    expect(menu).to_have_attribute("aria-expanded", "false")
    expect(page.get_by_role("link", name="Other trip")).to_be_hidden()
    menu.click()
    expect(menu).to_have_attribute("aria-expanded", "true")
    SHOTS.mkdir(parents=True, exist_ok=True)
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        page.screenshot(path=str(SHOTS / f"chat-drawer-phone-{scheme}.png"))
    page.get_by_role("link", name="Other trip").click()
    expect(page).to_have_url(re.compile(f"/sessions/{other}/"))
    expect(page.get_by_role("heading", name="Other trip")).to_be_visible()
    assert page.console_errors == []


def test_the_small_things(site, page, transactional_db):
    alice = person(blocks=[
        {"label": "memory", "kind": "writable", "description": "Learned facts " + "═" * 80,
         "max_tokens": 500},
        {"label": "howto", "kind": "skill", "description": "A skill"}])
    manager = alice["manager"]
    sid = manager.create("Trip").id
    q, a = manager.append_all(sid, [
        {"role": "user", "content": "plan the Lisbon days"},
        {"role": "assistant", "content": "| day | plan |\n|---|---|\n| 1 | **Lisbon** tram 28 |"}])
    login(page, site)
    page.goto(f"{site}/sessions/{sid}/")
    panel = page.locator("#prompt-panel")
    prompt = panel.locator(".pp-prompt")
    expect(prompt).to_be_visible()
    assert page.evaluate("el => el.scrollWidth <= el.clientWidth", prompt.element_handle())
    assert prompt.bounding_box()["x"] + prompt.bounding_box()["width"] <= (
        panel.bounding_box()["x"] + panel.bounding_box()["width"])
    hide = panel.get_by_role("button", name="Hide")
    assert hide.bounding_box()["height"] < 40

    # The usage page names the branch by its last message, not by an id.
    page.goto(f"{site}/sessions/{sid}/usage/")
    expect(page.locator("main")).to_contain_text("ending at “| day | plan |")
    expect(page.locator("main")).not_to_contain_text(a.id[:12])

    # Search snippets read as words.
    page.goto(f"{site}/search/?q=tram")
    hit = page.locator(".hit-snippet").first
    expect(hit).to_contain_text("tram")
    assert "|" not in hit.text_content() and "**" not in hit.text_content()

    # Skill files folder: only on skill blocks (and the new one while it is a skill).
    page.goto(f"{site}/agents/{alice['agent'].id}/settings/")
    expect(page.locator("label:has-text('Skill files folder'):visible")).to_have_count(1)
    page.get_by_label("Kind").last.select_option("skill")
    expect(page.locator("label:has-text('Skill files folder'):visible")).to_have_count(2)

    # A new API key has Copy.
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    page.goto(f"{site}/keys/")
    page.get_by_role("button", name="Create key").click()
    key = page.get_by_label("New API key").input_value()
    page.get_by_role("button", name="Copy", exact=True).click()
    assert page.evaluate("navigator.clipboard.readText()") == key

    # A fork links back to where it came from; an import says so, and when.
    fork = manager.fork(sid, q.id, "Trip (fork)")
    page.goto(f"{site}/sessions/{fork.id}/")
    back = page.locator(".origin").get_by_role("link", name="Trip")
    expect(back).to_have_attribute("href", re.compile(f"/sessions/{sid}/\\?leaf={q.id}"))
    models.ImportSource.objects.create(agent=alice["agent"], session_id=sid,
                                       source_format="chatgpt", conversation_id="c1")
    page.goto(f"{site}/sessions/{sid}/")
    expect(page.locator(".origin")).to_contain_text(re.compile(r"imported from chatgpt on \d{4}-"))

    # The admin's session page: the tree's created column on one line.
    alice["user"].is_staff = alice["user"].is_superuser = True
    alice["user"].save()
    page.goto(f"{site}/admin/sessions_app/session/{sid}/change/")
    created = page.locator("table.arbor-tree tbody td:last-child").first
    expect(created).to_be_visible()
    lines = page.evaluate("""td => { const r = document.createRange(); r.selectNodeContents(td);
        return new Set(Array.from(r.getClientRects()).map(x => Math.round(x.top))).size; }""",
                          created.element_handle())
    assert lines == 1
    shoot(page, "admin-session")

    # The favicon browsers ask for.
    icon = httpx.get(f"{site}/favicon.ico", follow_redirects=True)
    assert icon.status_code == 200 and "svg" in icon.headers["content-type"]
    assert page.console_errors == []


def test_the_branch_map_opens_a_branch_and_marks_where_you_are(site, page, transactional_db):
    alice = person()
    manager = alice["manager"]
    sid, q, (a1, a2) = asked(manager, "Map", "pick a fruit", "A pomegranate.", "A quince.")
    login(page, site)
    page.goto(f"{site}/sessions/{sid}/tree/?leaf={a2.id}")
    branch_map = page.get_by_role("region", name="Branch map")
    expect(branch_map.get_by_role("link", name="2/2 · you are here")).to_be_visible()
    expect(branch_map.locator(".map-point")).to_have_text("2")
    shoot(page, "branch-map")
    branch_map.get_by_role("link", name="1/2").click()
    expect(page.locator(f"#m-{a1.id} .counter")).to_have_text("1/2")
    expect(page.locator(f"#m-{a2.id}")).to_have_count(0)
    assert page.console_errors == []
